"""The gRPC FormatterService: a thin servicer over `format`, `parse` and `StreamParser`.

The servicer only translates between the proto messages and the in-process
API; errors become statuses with details (see `_status.py`). `serve()` adds the
standard health and reflection services, optional bearer-token auth and TLS,
and drains gracefully on SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.rpc import code_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from grpc_status import rpc_status

from . import _json
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ._generated.agentscope.formatter.v1 import formatter_service_pb2_grpc as pb_grpc
from ._status import status_for
from .errors import AgentScopeProtoError, FormatError, ParseError
from .formatting import body_to_json, format
from .parsing import StreamParser, parse

__all__ = ["FormatterServicer", "ServerConfig", "build_server", "provider_name", "serve"]

logger = logging.getLogger("agentscope_proto.server")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["FormatterService"].full_name
_TOKEN_COUNTERS = {pb.TOKEN_COUNTER_CHAR: "char", pb.TOKEN_COUNTER_TIKTOKEN: "tiktoken"}
T = TypeVar("T")


def provider_name(value: int) -> str:
    """The registry name of a `Provider` enum value (`PROVIDER_OPENAI` -> `openai`)."""
    if value == pb.PROVIDER_UNSPECIFIED or value not in pb.Provider.values():
        raise FormatError("provider", f"required; got {value}")
    return pb.Provider.Name(value).removeprefix("PROVIDER_").lower()  # type: ignore[arg-type]


def _format_kwargs(request: pb.FormatRequest) -> dict[str, Any]:
    options = request.options
    kwargs: dict[str, Any] = {}
    for flag in (
        "promote_tool_result_images",
        "promote_tool_result_audios",
        "promote_tool_result_videos",
    ):
        if getattr(options, flag):
            kwargs[flag] = True
    if options.HasField("conversation_history_prompt"):
        kwargs["conversation_history_prompt"] = options.conversation_history_prompt
    if options.HasField("max_tokens"):
        kwargs["max_tokens"] = options.max_tokens
    if options.token_counter:
        kwargs["token_counter"] = _TOKEN_COUNTERS.get(options.token_counter, options.token_counter)
    if options.multi_agent_style == pb.MULTI_AGENT_STYLE_NAMED_TURNS or options.agent_name:
        kwargs["agent_name"] = options.agent_name
    if options.model:
        kwargs["model"] = options.model
    if request.tools_json:
        tools = _json.loads(request.tools_json, "tools_json")
        if not isinstance(tools, list):
            raise FormatError("tools_json", "expected a JSON array of tool schemas")
        kwargs["tools"] = tools
    if request.tool_choice:
        kwargs["tool_choice"] = request.tool_choice
    return kwargs


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


class FormatterServicer(pb_grpc.FormatterServiceServicer):
    """Translates FormatterService RPCs to the in-process API."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self._config = config or ServerConfig()
        # With several worker processes, each reply names its worker, so that
        # operators (and tests) can see the load spread.
        self._worker = (("x-worker-pid", str(os.getpid())),) if self._config.reuse_port else ()

    async def _run(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any], call: Callable[[], T]
    ) -> T:
        started = time.perf_counter()
        code = "OK"
        if self._worker:
            await context.send_initial_metadata(self._worker)
        try:
            return call()
        except AgentScopeProtoError as exc:
            status = status_for(exc)
            code = code_pb2.Code.Name(status.code)
            await context.abort_with_status(rpc_status.to_status(status))
            raise  # unreachable: abort raises
        except Exception:
            # A bug, not bad input: say so without leaking internals.
            code = "INTERNAL"
            logger.exception("%s failed", method)
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error in {method}")
            raise
        finally:
            logger.debug("%s %s %.2fms", method, code, (time.perf_counter() - started) * 1e3)

    async def Format(
        self, request: pb.FormatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.FormatResponse:
        def call() -> pb.FormatResponse:
            body = format(
                request.messages,
                provider_name(request.provider),
                multi_agent=request.multi_agent,
                media_root=self._config.media_root,
                allow_download=self._config.allow_download,
                **_format_kwargs(request),
            )
            response = pb.FormatResponse(body_json=body_to_json(body))
            for warning in body.warnings:
                response.warnings.add(
                    path=warning.path, block_type=warning.block_type, message=warning.message
                )
            if body.token_count is not None:
                response.token_count = body.token_count
            return response

        return await self._run("Format", context, call)

    async def Parse(
        self, request: pb.ParseRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ParseResponse:
        def call() -> pb.ParseResponse:
            if not request.response_json:
                raise ParseError("response_json", "required")
            result = parse(
                provider_name(request.provider),
                request.response_json,
                split_think_tags=request.options.split_think_tags,
                structured_output=request.options.structured_output,
                audio_format=request.options.audio_format or None,
            )
            return pb.ParseResponse(result=result.to_proto())

        return await self._run("Parse", context, call)

    async def ParseStream(
        self,
        request_iterator: AsyncIterator[pb.ParseStreamRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[pb.ParseStreamResponse]:
        parser: StreamParser | None = None
        index = 0
        started = time.perf_counter()
        try:
            async for request in request_iterator:
                if parser is None:
                    options = request.options
                    parser = StreamParser(
                        provider_name(request.provider),
                        split_think_tags=options.split_think_tags,
                        stream_tool_parsing=(
                            options.stream_tool_parsing
                            if options.HasField("stream_tool_parsing")
                            else True
                        ),
                        structured_output=options.structured_output,
                        audio_format=options.audio_format or None,
                    )
                elif request.provider and provider_name(request.provider) != parser.provider:
                    raise FormatError(
                        f"requests[{index}].provider", "differs from the first message"
                    )
                which = request.WhichOneof("input")
                if which == "chunk_json":
                    result = parser.feed(request.chunk_json)
                    results = [] if result is None else [result]
                elif which == "raw_body":
                    results = parser.feed_bytes(request.raw_body)
                else:
                    raise ParseError(f"requests[{index}].input", "set chunk_json or raw_body")
                for result in results:
                    yield pb.ParseStreamResponse(result=result.to_proto())
                index += 1
            if parser is None:
                raise ParseError(
                    "requests", "the stream was empty; the first message names the provider"
                )
            yield pb.ParseStreamResponse(result=parser.finish().to_proto(), final=True)
            logger.debug("ParseStream OK %.2fms", (time.perf_counter() - started) * 1e3)
        except AgentScopeProtoError as exc:
            status = status_for(exc)
            logger.debug("ParseStream %s", code_pb2.Code.Name(status.code))
            await context.abort_with_status(rpc_status.to_status(status))
        except Exception:
            logger.exception("ParseStream failed")
            await context.abort(grpc.StatusCode.INTERNAL, "internal error in ParseStream")


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
    pb_grpc.add_FormatterServiceServicer_to_server(FormatterServicer(config), server)
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
