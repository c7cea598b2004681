"""A served agent as an AG-UI agent: `serve-agent --agui-port N` (docs/agui.md).

`POST /` with a `RunAgentInput` (JSON) runs it: the thread is the session,
the run a reply named by its run id (a run sent again is read from the
reply's log, not run twice), and the answer is the run's events, as
`RunStream` maps the reply's: server-sent events (`text/event-stream`,
ag-ui-protocol's JSON), or AG-UI's length-prefixed protobuf events
(`application/vnd.ag-ui.event+proto`, agui/proto.py) when the request's
`Accept` prefers them (`_negotiate`). A run that answers the session's question
(`resume` entries, or tool messages for calls handed to the caller) gets the
question from the session (`Sessions.question`, on any replica). A frontend
stopping a run (closing its request) interrupts the reply, as a gRPC caller
leaving one does.

What fails before the run starts is an HTTP error with a JSON body
(`{"error", "field", "code"}`: a malformed input 400, an unknown thread 404,
a thread waiting for an answer 409, a limit 429, ...); what fails after is
the run's `RUN_ERROR`. The token, size limit and browser origins are the
server's (`service/http_guard.py`), TLS too. Needs the `agui` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from ag_ui.core import BaseEvent, RunAgentInput, ToolMessage
from google.rpc import code_pb2

from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from ..errors import AgentScopeProtoError
from ..service.asgi import HttpServer, listen, start_asgi
from ..service.config import ServerConfig, host_port
from ..service.http_guard import HttpGuard, refuse
from ..service.status import status_for
from .proto import MEDIA_TYPE, frame
from .requests import read_run_input, reply_request
from .stream import RunStream, encode

__all__ = ["AGUIServer", "agui_app", "agui_listener", "start_agui"]

logger = logging.getLogger("agentscope_proto.agui")

SSE: Final = "text/event-stream"
PROTOBUF: Final = MEDIA_TYPE  # AG-UI's protobuf encoding

Encoder = Callable[[BaseEvent], bytes]
# How one event goes on the wire, by the response's media type.
_ENCODERS: Final[dict[str, Encoder]] = {SSE: lambda event: encode(event).encode(), PROTOBUF: frame}

# HTTP statuses of gRPC codes, as the Connect protocol maps them, but for
# FAILED_PRECONDITION (a thread waiting for an answer, or none such): 409.
_HTTP_STATUS: Final = {
    code_pb2.INVALID_ARGUMENT: 400,
    code_pb2.FAILED_PRECONDITION: 409,
    code_pb2.OUT_OF_RANGE: 400,
    code_pb2.NOT_FOUND: 404,
    code_pb2.ALREADY_EXISTS: 409,
    code_pb2.ABORTED: 409,
    code_pb2.PERMISSION_DENIED: 403,
    code_pb2.UNAUTHENTICATED: 401,
    code_pb2.RESOURCE_EXHAUSTED: 429,
    code_pb2.UNAVAILABLE: 503,
    code_pb2.DEADLINE_EXCEEDED: 504,
    code_pb2.UNIMPLEMENTED: 501,
}


class AGUIApp:
    """The ASGI app of one served agent's AG-UI endpoint."""

    def __init__(self, sessions: Any) -> None:
        self._sessions = sessions

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] != "/":
            await refuse(send, 404, f"no such endpoint {scope['path']!r}: runs are POSTed to /")
            return
        if scope["method"] != "POST":
            await refuse(send, 405, "a run is a POST of a RunAgentInput (JSON)")
            return
        headers = dict(scope["headers"])
        if b"application/json" not in headers.get(b"content-type", b""):
            await refuse(send, 415, "a RunAgentInput is sent as application/json")
            return
        media = _negotiate(headers.get(b"accept", b"").decode("latin-1"))
        if media is None:
            served = f"the run's events are served as {SSE} or {PROTOBUF}"
            await refuse(send, 406, served, code="UNIMPLEMENTED")
            return
        await self._run(await _body(receive), media, receive, send)

    async def _run(self, body: bytes, media: str, receive: Any, send: Any) -> None:
        """Start the run, answer with its events; stop it if the caller leaves."""
        running = asyncio.ensure_future(self._stream(body, media, send))
        leaving = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({running, leaving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (running, leaving):
                task.cancel()
            for task in (running, leaving):
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _stream(self, body: bytes, media: str, send: Any) -> None:
        try:
            run = read_run_input(body)
            stream = RunStream(run.thread_id, run.run_id)
            responses = await self._begin(run)
            first = await anext(responses, None)
        except AgentScopeProtoError as exc:
            await _refuse_error(send, exc)
            return
        except Exception:
            logger.exception("an AG-UI run failed to start")
            await refuse(send, 500, "the server failed starting this run", code="INTERNAL")
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", media.encode()),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),  # proxies pass each event on at once
                ],
            }
        )
        encoder = _ENCODERS[media]
        try:
            if first is not None:
                await _send_events(send, encoder, _events(stream, first))
                async for response in responses:
                    await _send_events(send, encoder, _events(stream, response))
            await _send_events(send, encoder, stream.finish())
        except AgentScopeProtoError as exc:
            status = status_for(exc)
            failed = stream.fail(status.message, _code_name(status.code))
            await _send_events(send, encoder, failed)
        except Exception:
            logger.exception("AG-UI run %r of thread %r failed", run.run_id, run.thread_id)
            failed = stream.fail("the server failed running this run", "INTERNAL")
            await _send_events(send, encoder, failed)
        await send({"type": "http.response.body", "body": b""})

    async def _begin(self, run: RunAgentInput) -> AsyncIterator[service_pb.ReplyResponse]:
        """The reply's responses (started: the failures of its start raised)."""
        answers = run.resume or any(isinstance(m, ToolMessage) for m in run.messages)
        asking = await self._sessions.question(run.thread_id) if answers else None
        reply = await self._sessions.begin(reply_request(run, asking))
        return reply.responses()  # type: ignore[no-any-return]


def _events(stream: RunStream, response: service_pb.ReplyResponse) -> list[BaseEvent]:
    if response.HasField("event"):
        return stream.events(response.event)
    return stream.finish() if response.done else []


async def _send_events(send: Any, encoder: Encoder, events: list[BaseEvent]) -> None:
    if events:
        body = b"".join(encoder(event) for event in events)
        await send({"type": "http.response.body", "body": body, "more_body": True})


async def _refuse_error(send: Any, exc: AgentScopeProtoError) -> None:
    status = status_for(exc)
    await refuse(
        send,
        _HTTP_STATUS.get(status.code, 500),
        status.message,
        field=getattr(exc, "path", "") or "",
        code=_code_name(status.code),
    )


def _code_name(code: int) -> str:
    return str(code_pb2.Code.Name(code))


def _negotiate(accept: str) -> str | None:
    """The media type to answer `accept` with: SSE or AG-UI's protobuf,
    whichever the header rates higher; on a tie the one it names more
    exactly, then the one it names first, then SSE (so no header, or `*/*`,
    gets SSE, as AG-UI's HttpAgent asks). None if it takes neither."""
    ranges = _media_ranges(accept) if accept.strip() else [("*", "*", 1.0)]
    sse, proto = _preference(ranges, SSE), _preference(ranges, PROTOBUF)
    if max(sse, proto)[0] <= 0:
        return None
    return PROTOBUF if proto > sse else SSE


def _media_ranges(accept: str) -> list[tuple[str, str, float]]:
    """The header's media ranges (type, subtype, quality), in its order; a
    range with a quality that is not a number counts as not taken."""
    ranges = []
    for part in accept.split(","):
        media, *params = (item.strip().lower() for item in part.split(";"))
        kind, _, subtype = media.partition("/")
        quality = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            ranges.append((kind, subtype, float(quality)))
        except ValueError:
            ranges.append((kind, subtype, 0.0))
    return ranges


def _preference(ranges: list[tuple[str, str, float]], media: str) -> tuple[float, int, int]:
    """How much `ranges` want `media`: (quality, exactness, -position) of the
    most exact range that matches it (RFC 9110: the most specific decides)."""
    kind, _, subtype = media.partition("/")
    best = (0.0, -1, 0)
    for position, (their_kind, their_subtype, quality) in enumerate(ranges):
        exactness = _exactness(kind, subtype, their_kind, their_subtype)
        if exactness > best[1]:
            best = (quality, exactness, -position)
    return best


def _exactness(kind: str, subtype: str, their_kind: str, their_subtype: str) -> int:
    """2 for the media type itself, 1 for its `type/*`, 0 for `*/*`, -1 for no match."""
    if their_kind == "*" and their_subtype == "*":
        return 0
    if their_kind != kind:
        return -1
    return {subtype: 2, "*": 1}.get(their_subtype, -1)


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _disconnected(receive: Any) -> None:
    """Until the caller closes its request (a frontend stopping the run)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def agui_app(sessions: Any, config: ServerConfig) -> Any:
    """The AG-UI endpoint of `sessions`' agent (`agents.sessions.Sessions`),
    guarded as the server's `config` says."""
    return HttpGuard(AGUIApp(sessions), config, methods="POST")


@dataclass
class AGUIServer:
    """The AG-UI server of a served agent (a `service.app.Listener`)."""

    http: HttpServer
    url: str

    @property
    def addresses(self) -> list[str]:
        return [f"{self.url} (AG-UI)"]

    async def stop(self, grace_seconds: float) -> None:
        await self.http.stop(grace_seconds)


async def start_agui(sessions: Any, port: int, config: ServerConfig) -> AGUIServer:
    """Serve `sessions`' agent over AG-UI on `port` (0: any free port) of
    `config.host`, with `config`'s TLS, in this event loop."""
    sock = listen(config, port)
    try:
        bound = sock.getsockname()[1]
        http = start_asgi(agui_app(sessions, config), config, sock)
    except BaseException:
        sock.close()
        raise
    scheme = "https" if config.tls_cert else "http"
    return AGUIServer(http, f"{scheme}://{host_port(config.host, bound)}")


def agui_listener(sessions: Any, port: int) -> Callable[[ServerConfig], Awaitable[AGUIServer]]:
    """What `HostedService.listen` runs to serve `sessions`' agent over AG-UI."""
    return lambda config: start_agui(sessions, port, config)
