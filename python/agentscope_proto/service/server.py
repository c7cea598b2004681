"""The gRPC FormatterService: a thin servicer over `format`, `parse` and `StreamParser`.

The servicer only translates between the proto messages and the in-process
API; errors become statuses with details (see `status.py`). `serve()` adds the
standard health and reflection services, optional bearer-token auth and TLS,
and drains gracefully on SIGTERM/SIGINT.

Clients are untrusted (SECURITY.md): requests that do not decode are
INVALID_ARGUMENT, not gRPC's UNKNOWN; what one request may cost is capped
(`ServerConfig.max_*`, RESOURCE_EXHAUSTED beyond); unary work on big requests
runs in a worker thread so the event loop keeps answering health checks, and
stops between messages once the client's deadline has passed or it cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import logging
import os
import signal
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from google.rpc import code_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from grpc_status import rpc_status

from .. import _json
from .._fetch import MediaLimits, media_limits
from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .._generated.agentscope.formatter.v1 import formatter_service_pb2_grpc as pb_grpc
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..errors import (
    AgentScopeProtoError,
    FormatError,
    LimitExceededError,
    MessageFormatError,
    ParseError,
)
from ..formatting import body_to_json, format
from ..options import format_settings_from_proto, parse_settings_from_proto
from ..parsing import StreamParser, parse
from ..providers import provider_for
from ..providers._base import log_safe, warning_log_level
from ..results import ParsedResponse
from .status import status_for

__all__ = ["FormatterServicer", "ServerConfig", "build_server", "provider_name", "serve"]

logger = logging.getLogger("agentscope_proto.server")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["FormatterService"].full_name
T = TypeVar("T")
_MB = 1024 * 1024
# A raw stream body is fed to the parser this many lines at a time, so that
# the snapshots of one slice (each repeating the message so far) are sent
# before the next slice makes more; a body of many tiny events would otherwise
# make all its snapshots at once, in memory quadratic in its size.
_RAW_LINES = 64
# Requests and stream messages above this size are handled in a worker
# thread, so that a huge one does not stall the event loop; smaller ones run
# inline (a thread hop costs more than they do).
_INLINE_BYTES = 256 * 1024


def provider_name(value: int) -> str:
    """The registry name of a `Provider` enum value (`PROVIDER_OPENAI` -> `openai`)."""
    return provider_for(value).name


def _tools(request: pb.FormatRequest) -> list[Any] | None:
    """The decoded `tools_json`; `format()` checks each schema (`tools[i]...`)."""
    if not request.tools_json:
        return None
    tools = _json.loads(request.tools_json, "tools_json")
    if not isinstance(tools, list):
        raise FormatError("tools_json", "expected a JSON array of tool schemas")
    return tools


@dataclass(frozen=True)
class ServerConfig:
    """How the server runs. Defaults are safe: loopback, no file or network access."""

    host: str = "127.0.0.1"
    port: int = 50051
    max_message_mb: int = 64
    media_root: Path | None = None
    allow_download: bool = False
    auth_token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    grace_seconds: float = 10.0
    reuse_port: bool = False
    # What one request may make the server do; beyond it, RESOURCE_EXHAUSTED
    # (SECURITY.md lists each limit and why).
    # Content blocks in one Format request, tool result blocks included.
    max_blocks: int = 100_000
    # Messages one ParseStream may send.
    max_stream_messages: int = 100_000
    # Bytes of snapshots one ParseStream may receive: each snapshot repeats
    # the message so far, so the output of a stream grows with its square.
    max_stream_output_mb: int = 1024
    # A ParseStream that sends nothing for this long is ended (DEADLINE_EXCEEDED).
    stream_idle_seconds: float = 300.0
    # Size and time caps of media reads and downloads, and the private networks
    # downloads may reach (none by default: the SSRF guard refuses them).
    media_limits: MediaLimits = field(default_factory=MediaLimits)


class _Undecodable:
    """A request whose bytes are not a message of its type (see `_lenient`)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _lenient(message_class: type[Message]) -> Callable[[bytes], Any]:
    """A request deserializer that never raises.

    gRPC answers a deserializer's exception with UNKNOWN and its class name;
    handing the servicer a placeholder instead lets it answer INVALID_ARGUMENT
    with details, like any other bad input.
    """
    name = message_class.DESCRIPTOR.full_name

    def deserialize(data: bytes) -> Any:
        try:
            return message_class.FromString(data)
        except Exception as exc:  # DecodeError, or nesting past protobuf's limit
            return _Undecodable(f"not a valid {name} ({type(exc).__name__})")

    return deserialize


def _decoded(request: T | _Undecodable, path: str = "request") -> T:
    if isinstance(request, _Undecodable):
        raise MessageFormatError(path, request.reason)
    return request


class _Stopped(Exception):
    """The RPC's deadline passed, or the client cancelled, while it was working."""


class _Budget:
    """Lets work running in a thread notice that its RPC is over.

    grpc cancels the handler coroutine when the deadline passes or the client
    cancels, but cannot stop a thread; the work checks this between messages.
    """

    def __init__(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        remaining = context.time_remaining()
        self._deadline = None if remaining is None else time.monotonic() + remaining
        self.cancelled = False

    def check(self) -> None:
        if self.cancelled or (self._deadline is not None and time.monotonic() >= self._deadline):
            raise _Stopped


def _checked(items: Iterable[T], budget: _Budget) -> Iterator[T]:
    for item in items:
        budget.check()
        yield item


def _count_blocks(messages: Iterable[Msg], limit: int) -> int:
    """The content blocks of `messages`, tool result blocks included (stops past `limit`)."""
    total = 0
    pending = [m.blocks.items for m in messages if m.WhichOneof("content") == "blocks"]
    while pending and total <= limit:
        items = pending.pop()
        total += len(items)
        for block in items:
            if block.WhichOneof("block") == "tool_result":
                result = block.tool_result
                if result.WhichOneof("output") == "blocks":
                    pending.append(result.blocks.items)
    return total


def _raw_slices(data: bytes, lines: int = _RAW_LINES) -> Iterator[bytes]:
    """`data` in slices of at most `lines` lines (the last may be unterminated)."""
    start = 0
    while start < len(data):
        end = start
        for _ in range(lines):
            end = data.find(b"\n", end) + 1
            if not end:
                end = len(data)
                break
        yield data[start:end]
        start = end


def _log_failure(method: str, exc: BaseException) -> None:
    # Not logger.exception: the exception's text may carry client input, and a
    # newline in it would forge a log line. repr() escapes it; the frames are
    # our own code.
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("%s failed: %s\n%s", method, log_safe(repr(exc)), frames.rstrip())


class FormatterServicer(pb_grpc.FormatterServiceServicer):
    """Translates FormatterService RPCs to the in-process API."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self._config = config or ServerConfig()
        # With several worker processes, each reply names its worker, so that
        # operators (and tests) can see the load spread.
        self._worker = (("x-worker-pid", str(os.getpid())),) if self._config.reuse_port else ()

    def _inline(self, request: Message) -> bool:
        """Whether to run a unary request on the event loop instead of a thread.

        The hop to a worker thread costs more than formatting a small request
        (about 8 % of Format throughput); a request up to `_INLINE_BYTES`
        without downloads takes a few milliseconds at most, too short to stall
        health checks. Bigger requests, and every request when downloads are
        allowed (network waits), still go to a thread.
        """
        return not self._config.allow_download and request.ByteSize() <= _INLINE_BYTES

    def _work(self, call: Callable[[], T]) -> T:
        """Run `call` under the configured media limits; dropped-block warnings
        log at DEBUG (the response carries them to the client)."""
        with media_limits(self._config.media_limits), warning_log_level(logging.DEBUG):
            try:
                return call()
            except RecursionError:
                # Only input nested past every depth check gets here; it is the
                # client's input, not a server fault.
                raise MessageFormatError("", "input nested too deeply") from None

    async def _run(
        self,
        method: str,
        request: Any,
        context: grpc.aio.ServicerContext[Any, Any],
        call: Callable[[_Budget], T],
    ) -> T:
        started = time.perf_counter()
        code = "OK"
        if self._worker:
            await context.send_initial_metadata(self._worker)
        budget = _Budget(context)
        try:
            decoded: Message = _decoded(request)
            budget.check()  # the deadline may have passed while queued
            if self._inline(decoded):
                return self._work(lambda: call(budget))
            return await asyncio.to_thread(self._work, lambda: call(budget))
        except asyncio.CancelledError:
            code = "CANCELLED"
            budget.cancelled = True
            raise
        except _Stopped:
            code = "DEADLINE_EXCEEDED"
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded; work stopped"
            )
            raise  # unreachable: abort raises
        except AgentScopeProtoError as exc:
            status = status_for(exc)
            code = code_pb2.Code.Name(status.code)
            await context.abort_with_status(rpc_status.to_status(status))
            raise  # unreachable: abort raises
        except Exception as exc:
            # A bug, not bad input: say so without leaking internals.
            code = "INTERNAL"
            _log_failure(method, exc)
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error in {method}")
            raise
        finally:
            logger.debug("%s %s %.2fms", method, code, (time.perf_counter() - started) * 1e3)

    async def Format(
        self, request: pb.FormatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.FormatResponse:
        def call(budget: _Budget) -> pb.FormatResponse:
            limit = self._config.max_blocks
            blocks = _count_blocks(request.messages, limit)
            if blocks > limit:
                raise LimitExceededError(
                    "max_blocks", f"the request holds more than {limit} content blocks"
                )
            body = format(
                provider_name(request.provider),
                _checked(request.messages, budget),
                settings=format_settings_from_proto(
                    request.options, multi_agent=request.multi_agent
                ),
                tools=_tools(request),
                tool_choice=request.tool_choice or None,
                media_root=self._config.media_root,
                allow_download=self._config.allow_download,
            )
            response = pb.FormatResponse(body_json=body_to_json(body))
            response.warnings.extend(body.warnings)
            if body.token_count is not None:
                response.token_count = body.token_count
            budget.check()
            return response

        return await self._run("Format", request, context, call)

    async def Parse(
        self, request: pb.ParseRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ParseResponse:
        def call(budget: _Budget) -> pb.ParseResponse:
            if not request.response_json:
                raise ParseError("response_json", "required")
            result = parse(
                provider_name(request.provider),
                request.response_json,
                settings=parse_settings_from_proto(request.options),
            )
            budget.check()
            return pb.ParseResponse(result=result.to_proto())

        return await self._run("Parse", request, context, call)

    async def _next_request(self, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        """The next stream message, None at the end; `_Idle` if none comes in time."""
        try:
            request = await asyncio.wait_for(context.read(), self._config.stream_idle_seconds)
        except asyncio.TimeoutError:
            raise _Idle from None
        return None if request is grpc.aio.EOF else request

    async def _feed(
        self, parser: StreamParser, request: pb.ParseStreamRequest, index: int
    ) -> AsyncIterator[ParsedResponse]:
        """The snapshots one stream message completes."""
        which = request.WhichOneof("input")
        if which == "chunk_json":
            chunk = request.chunk_json
            if len(chunk) > _INLINE_BYTES:
                result = await asyncio.to_thread(self._work, lambda: parser.feed(chunk))
            else:
                result = self._work(lambda: parser.feed(chunk))
            if result is not None:
                yield result
        elif which == "raw_body":
            for piece in _raw_slices(request.raw_body):
                feed = functools.partial(parser.feed_bytes, piece)
                if len(piece) > _INLINE_BYTES:
                    results = await asyncio.to_thread(self._work, feed)
                else:
                    results = self._work(feed)
                for result in results:
                    yield result
        else:
            raise ParseError(f"requests[{index}].input", "set chunk_json or raw_body")

    async def ParseStream(
        self,
        request_iterator: AsyncIterator[pb.ParseStreamRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[pb.ParseStreamResponse]:
        # Messages are read with context.read() (not request_iterator) so that
        # an idle client can be timed out.
        config = self._config
        parser: StreamParser | None = None
        index = 0
        sent = 0
        output_limit = config.max_stream_output_mb * _MB
        started = time.perf_counter()
        try:
            while (received := await self._next_request(context)) is not None:
                if index >= config.max_stream_messages:
                    raise LimitExceededError(
                        "max_stream_messages",
                        f"the stream sent more than {config.max_stream_messages} messages",
                    )
                request: pb.ParseStreamRequest = _decoded(received, f"requests[{index}]")
                if parser is None:
                    parser = StreamParser(
                        provider_name(request.provider),
                        settings=parse_settings_from_proto(request.options),
                    )
                elif request.provider and provider_name(request.provider) != parser.provider:
                    raise FormatError(
                        f"requests[{index}].provider", "differs from the first message"
                    )
                async for result in self._feed(parser, request, index):
                    response = pb.ParseStreamResponse(result=result.to_proto())
                    sent += response.ByteSize()
                    if sent > output_limit:
                        raise LimitExceededError(
                            "max_stream_output_mb",
                            f"the snapshots of this stream exceed {config.max_stream_output_mb} MB",
                        )
                    yield response
                index += 1
            if parser is None:
                raise ParseError(
                    "requests", "the stream was empty; the first message names the provider"
                )
            final = self._work(parser.finish)
            yield pb.ParseStreamResponse(result=final.to_proto(), final=True)
            logger.debug("ParseStream OK %.2fms", (time.perf_counter() - started) * 1e3)
        except _Idle:
            logger.debug("ParseStream DEADLINE_EXCEEDED (idle)")
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"no stream message for {config.stream_idle_seconds:g}s",
            )
        except AgentScopeProtoError as exc:
            status = status_for(exc)
            logger.debug("ParseStream %s", code_pb2.Code.Name(status.code))
            await context.abort_with_status(rpc_status.to_status(status))
        except Exception as exc:
            _log_failure("ParseStream", exc)
            await context.abort(grpc.StatusCode.INTERNAL, "internal error in ParseStream")


class _Idle(Exception):
    """No stream message arrived within `stream_idle_seconds`."""


def _add_servicer(servicer: FormatterServicer, server: grpc.aio.Server) -> None:
    """`add_FormatterServiceServicer_to_server` with deserializers that never raise.

    Built from the service descriptor, so every RPC of the schema is covered.
    """
    service = pb.DESCRIPTOR.services_by_name["FormatterService"]
    handlers = {}
    for method in service.methods:
        request_class = getattr(pb, method.input_type.name)
        response_class = getattr(pb, method.output_type.name)
        kind = {
            (False, False): grpc.unary_unary_rpc_method_handler,
            (False, True): grpc.unary_stream_rpc_method_handler,
            (True, False): grpc.stream_unary_rpc_method_handler,
            (True, True): grpc.stream_stream_rpc_method_handler,
        }[(method.client_streaming, method.server_streaming)]
        handlers[method.name] = kind(
            getattr(servicer, method.name),
            request_deserializer=_lenient(request_class),
            response_serializer=response_class.SerializeToString,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))


class _TokenAuth(grpc.aio.ServerInterceptor):
    """Requires `authorization: Bearer <token>` on every RPC but health checks."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

        async def deny(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

        self._deny_unary: grpc.RpcMethodHandler[Any, Any] = grpc.unary_unary_rpc_method_handler(
            deny
        )

        async def deny_stream(
            request_iterator: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> Any:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
            yield  # pragma: no cover - makes this an async generator

        self._deny_stream: grpc.RpcMethodHandler[Any, Any] = grpc.stream_stream_rpc_method_handler(
            deny_stream
        )

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = details.method or ""
        if method.startswith("/grpc.health.v1.Health/"):
            return await continuation(details)
        supplied = dict(details.invocation_metadata or ()).get("authorization", "")
        value = supplied.encode() if isinstance(supplied, str) else bytes(supplied)
        # Constant-time comparison: the time taken must not reveal the token.
        if hmac.compare_digest(value, self._expected):
            return await continuation(details)
        return self._deny_stream if method.endswith("/ParseStream") else self._deny_unary


def _credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    if config.tls_cert is None:
        return None
    if config.tls_key is None:
        raise ValueError("--tls-cert needs --tls-key")
    pair = (config.tls_key.read_bytes(), config.tls_cert.read_bytes())
    client_ca = config.tls_client_ca.read_bytes() if config.tls_client_ca else None
    return grpc.ssl_server_credentials(
        [pair], root_certificates=client_ca, require_client_auth=client_ca is not None
    )


def build_server(config: ServerConfig) -> tuple[grpc.aio.Server, health.aio.HealthServicer, int]:
    """A configured, not yet started server, its health servicer and the bound port."""
    limit = config.max_message_mb * 1024 * 1024
    interceptors = [_TokenAuth(config.auth_token)] if config.auth_token else []
    server = grpc.aio.server(
        interceptors=interceptors,
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 1 if config.reuse_port else 0),
        ],
    )
    _add_servicer(FormatterServicer(config), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        [SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME], server
    )
    address = f"{config.host}:{config.port}"
    credentials = _credentials(config)
    port = (
        server.add_secure_port(address, credentials)
        if credentials
        else server.add_insecure_port(address)
    )
    if port == 0:
        raise OSError(f"could not bind {address}")
    return server, health_servicer, port


async def _set_serving(health_servicer: health.aio.HealthServicer, serving: bool) -> None:
    status = (
        health_pb2.HealthCheckResponse.SERVING
        if serving
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, status)


async def serve(config: ServerConfig, ready: Callable[[int], None] | None = None) -> None:
    """Run the server until SIGTERM/SIGINT, then drain: health goes NOT_SERVING and
    in-flight RPCs get `grace_seconds` to finish."""
    server, health_servicer, port = build_server(config)
    await server.start()
    await _set_serving(health_servicer, True)
    logger.info(
        "FormatterService listening on %s:%d (tls=%s, auth=%s, media_root=%s, downloads=%s)",
        config.host,
        port,
        config.tls_cert is not None,
        config.auth_token is not None,
        config.media_root,
        config.allow_download,
    )
    if ready is not None:
        ready(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    logger.info("draining for up to %.1fs", config.grace_seconds)
    await _set_serving(health_servicer, False)
    await server.stop(config.grace_seconds)
    logger.info("stopped")
