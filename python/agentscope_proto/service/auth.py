"""Bearer-token authentication for every RPC but health checks.

A refusal answers with a handler of the refused RPC's own kind: a unary
handler on a client-streaming RPC would wait for a request the client never
sends before it aborts (a client that waits for the response headers, as
the hub's publish stream does, would hang).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from hmac import compare_digest
from typing import Any

import grpc

__all__ = ["BearerTokenAuth"]

_HEALTH_PREFIX = "/grpc.health.v1.Health/"
_DENIED = "missing or invalid bearer token"


async def _deny(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, _DENIED)


async def _deny_stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, _DENIED)
    yield  # pragma: no cover - makes this an async generator


# The refusal for each kind of RPC, by (request_streaming, response_streaming).
_DENIALS: dict[tuple[bool, bool], grpc.RpcMethodHandler[Any, Any]] = {
    (False, False): grpc.unary_unary_rpc_method_handler(_deny),
    (False, True): grpc.unary_stream_rpc_method_handler(_deny_stream),
    (True, False): grpc.stream_unary_rpc_method_handler(_deny),
    (True, True): grpc.stream_stream_rpc_method_handler(_deny_stream),
}


class BearerTokenAuth(grpc.aio.ServerInterceptor):
    """Requires `authorization: Bearer <token>` on every RPC but health checks."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def accepts(self, authorization: str | bytes) -> bool:
        """Whether an `authorization` header value carries the token."""
        value = authorization.encode() if isinstance(authorization, str) else bytes(authorization)
        # Constant-time comparison: the time taken must not reveal the token.
        return compare_digest(value, self._expected)

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = details.method or ""
        if method.startswith(_HEALTH_PREFIX):
            return await continuation(details)
        if self.accepts(dict(details.invocation_metadata or ()).get("authorization", "")):
            return await continuation(details)
        # The handler is looked up (not run) only to learn the RPC's kind; an
        # unknown method is refused as unary, so that it reveals nothing.
        handler = await continuation(details)
        if handler is None:
            return _DENIALS[(False, False)]
        return _DENIALS[(handler.request_streaming, handler.response_streaming)]
