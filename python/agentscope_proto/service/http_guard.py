"""What a server's HTTP surfaces (A2A, AG-UI) check before their app reads
a byte: the browser origin, the bearer token and the size limit.

Browsers: a request from a page carries its `Origin`; only the origins in
`ServerConfig.cors_origins` are let through (nothing by default, so no page
on another site can drive the agent with a user's network position), and
their CORS preflights are answered here, before the token check (a browser
sends no credentials on a preflight). A request without an `Origin` is not
from a page and goes on to the token check. Refusals are JSON
(`{"error": ...}`) with their HTTP status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .. import _json
from .auth import BearerTokenAuth
from .config import MB, ServerConfig

__all__ = ["HttpGuard"]

# What a page may send cross-origin beyond the CORS-safelisted headers, and
# how long its browser may keep a preflight's answer.
_ALLOWED_HEADERS: Final = "authorization, content-type, accept, last-event-id"
_PREFLIGHT_MAX_AGE: Final = "600"


class HttpGuard:
    """An ASGI app wrapping another with the checks of the module doc;
    `open_path(scope)` names requests that need no token (A2A's agent card,
    which says how to authenticate)."""

    def __init__(
        self,
        app: Any,
        config: ServerConfig,
        *,
        methods: str = "GET, POST",
        open_path: Callable[[Any], bool] = lambda scope: False,
    ) -> None:
        self._app = app
        self._auth = BearerTokenAuth(config.auth_token) if config.auth_token else None
        self._max = config.max_message_mb * MB
        self._origins = frozenset(config.cors_origins)
        self._methods = methods
        self._open = open_path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1") not in self._origins:
            await refuse(send, 403, "this origin may not call the server (see --cors-origin)")
            return
        if origin is not None and scope["method"] == "OPTIONS":
            await self._preflight(send, origin)
            return
        if origin is not None:
            send = _with_origin(send, origin)
        token = headers.get(b"authorization", b"")
        if self._auth is not None and not self._open(scope) and not self._auth.accepts(token):
            await refuse(send, 401, "missing or invalid bearer token")
            return
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self._max:
            await refuse(send, 413, f"a request holds at most {self._max} bytes")
            return
        await self._bounded(scope, receive, send)

    async def _bounded(self, scope: Any, receive: Any, send: Any) -> None:
        """The app, its request body cut off past the limit (a body sent in
        chunks has no length to check first)."""
        read = 0

        async def bounded() -> Any:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > self._max:
                raise _TooLarge
            return message

        try:
            await self._app(scope, bounded, send)
        except _TooLarge:
            await refuse(send, 413, f"a request holds at most {self._max} bytes")

    async def _preflight(self, send: Any, origin: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 204,
                "headers": [
                    (b"access-control-allow-origin", origin),
                    (b"access-control-allow-methods", f"{self._methods}, OPTIONS".encode()),
                    (b"access-control-allow-headers", _ALLOWED_HEADERS.encode()),
                    (b"access-control-max-age", _PREFLIGHT_MAX_AGE.encode()),
                    (b"vary", b"origin"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


class _TooLarge(Exception):
    pass


def _with_origin(send: Any, origin: bytes) -> Any:
    """`send`, its response headers letting the page at `origin` read it."""

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            extra = [(b"access-control-allow-origin", origin), (b"vary", b"origin")]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


async def refuse(send: Any, status: int, reason: str, **details: Any) -> None:
    """A JSON refusal: `{"error": reason, ...details}` with `status`."""
    body = _json.dumps({"error": reason, **details}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
