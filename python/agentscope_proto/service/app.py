"""The server around the servicers: health, reflection, auth, TLS, lifecycle.

A server hosts a list of `HostedService`s (the FormatterService by default;
`agentscope-proto serve-agent` hosts the AgentService; with `config.hub` the
HubService joins either; any other service joins by adding its own); health
and reflection list each of them. A service may run servers of its own beside
the gRPC one (`HostedService.listen`: the agent's A2A servers), started once
the gRPC server is and stopped with it. `build_server` assembles a not yet started
server; `serve` runs it until SIGTERM/SIGINT and then drains: health goes
NOT_SERVING, each service drains (the hub ends its subscriptions, so that
clients resume elsewhere) and in-flight RPCs get `grace_seconds` to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Collection, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import grpc
from google.protobuf import descriptor_pool
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ._rpc import lenient
from .auth import BearerTokenAuth
from .config import MB, ServerConfig
from .reflection import enable_reflection
from .servicer import SERVICE_NAME, FormatterServicer

if TYPE_CHECKING:
    from ..hub.servicer import HubServicer

__all__ = [
    "HostedService",
    "Listener",
    "add_formatter_service",
    "add_service",
    "build_server",
    "formatter_service",
    "serve",
    "set_serving",
]

logger = logging.getLogger("agentscope_proto.server")

_HANDLER_KINDS = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def _passing_bytes(message_class: Any) -> Any:
    """The message's `SerializeToString`, passing through a response the
    servicer already encoded (Format, see `encoded_format_response`)."""
    serialize = message_class.SerializeToString

    def serializer(response: Any) -> bytes:
        return response if type(response) is bytes else serialize(response)

    return serializer


class Listener(Protocol):
    """Servers a hosted service runs on ports of its own (the agent's A2A
    servers), started once the gRPC server is and stopped with it."""

    @property
    def addresses(self) -> Sequence[str]:
        """What the log line of a started server lists, e.g. `127.0.0.1:8080 (A2A gRPC)`."""

    async def stop(self, grace_seconds: float) -> None: ...


class HostedService(NamedTuple):
    """A gRPC service a server hosts: its full name (health and reflection
    list it), the call that adds its handlers to a server, what it does
    when the server drains, if anything, and the servers it runs beside the
    gRPC one, if any (started with the server's config)."""

    name: str
    add_to: Callable[[grpc.aio.Server], None]
    drain: Callable[[], Awaitable[None]] | None = None
    listen: Callable[[ServerConfig], Awaitable[Listener]] | None = None


def add_service(
    server: grpc.aio.Server,
    module: ModuleType,
    service: str,
    servicer: Any,
    *,
    keep_wire: Collection[str] = (),
    passing_bytes: Collection[str] = (),
) -> None:
    """Add `servicer`'s methods for the service named `service` in the
    generated `module`, with request deserializers that never raise (a
    request that does not decode reaches the servicer, which answers
    INVALID_ARGUMENT with details; see `_rpc.lenient`).

    Built from the service descriptor, so every RPC of the schema is covered.
    Methods in `keep_wire` get their request with its bytes (`_rpc.Wired`);
    those in `passing_bytes` may answer with bytes they encoded themselves.
    """
    descriptor = module.DESCRIPTOR.services_by_name[service]
    handlers = {}
    for method in descriptor.methods:
        kind = _HANDLER_KINDS[(method.client_streaming, method.server_streaming)]
        output = getattr(module, method.output_type.name)
        handlers[method.name] = kind(
            getattr(servicer, method.name),
            request_deserializer=lenient(
                getattr(module, method.input_type.name), keep_wire=method.name in keep_wire
            ),
            response_serializer=(
                _passing_bytes(output) if method.name in passing_bytes else output.SerializeToString
            ),
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(descriptor.full_name, handlers),)
    )


def add_formatter_service(servicer: FormatterServicer, server: grpc.aio.Server) -> None:
    """`add_FormatterServiceServicer_to_server` with deserializers that never raise.

    Format keeps the request's bytes (its messages' bytes key the server's
    format cache, see FormatterServicer.Format) and answers with bytes of its
    own; the other methods (one response per event on ParseStream) keep
    protobuf's serializer as it is.
    """
    add_service(
        server,
        pb,
        "FormatterService",
        servicer,
        keep_wire={"Format"},
        passing_bytes={"Format"},
    )


def formatter_service(
    config: ServerConfig, servicer: FormatterServicer | None = None
) -> HostedService:
    """The FormatterService (`servicer`, or a new one for `config`), to host."""
    chosen = servicer or FormatterServicer(config)
    return HostedService(SERVICE_NAME, lambda server: add_formatter_service(chosen, server))


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


def build_server(
    config: ServerConfig,
    servicer: FormatterServicer | None = None,
    *,
    services: Sequence[HostedService] | None = None,
) -> tuple[grpc.aio.Server, health.aio.HealthServicer, int]:
    """A configured, not yet started server, its health servicer and the bound port.

    It hosts `services`, by default the FormatterService; `servicer` replaces
    the default `FormatterServicer(config)` (the benchmark's Echo ceiling uses
    it).
    """
    hosted = list(services) if services is not None else [formatter_service(config, servicer)]
    limit = config.max_message_mb * MB
    interceptors = [BearerTokenAuth(config.auth_token)] if config.auth_token else []
    server = grpc.aio.server(
        interceptors=interceptors,
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 1 if config.reuse_port else 0),
        ],
    )
    for service in hosted:
        service.add_to(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [service.name for service in hosted]
    # The error detail types too, so that grpcurl and grpcui decode a status's details.
    described = [
        health_pb2.DESCRIPTOR,
        error_details_pb2.DESCRIPTOR,
        status_pb2.DESCRIPTOR,
        *_foreign_files(names),
    ]
    enable_reflection([*names, health.SERVICE_NAME], server, described)
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


def _foreign_files(names: Sequence[str]) -> list[Any]:
    """The files of hosted services outside this schema (A2A's), from the
    default pool, for reflection to describe them (ours come documented)."""
    pool = descriptor_pool.Default()
    files = []
    for name in names:
        if not name.startswith("agentscope."):
            with contextlib.suppress(KeyError):
                files.append(pool.FindServiceByName(name).file)
    return files


async def set_serving(
    health_servicer: health.aio.HealthServicer,
    serving: bool,
    names: Sequence[str] = (SERVICE_NAME,),
) -> None:
    """Report the server and its services (`names`) as SERVING or NOT_SERVING."""
    status = (
        health_pb2.HealthCheckResponse.SERVING
        if serving
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )
    for name in ("", *names):
        await health_servicer.set(name, status)


async def serve(
    config: ServerConfig,
    ready: Callable[[int], None] | None = None,
    servicer: FormatterServicer | None = None,
    *,
    services: Sequence[HostedService] | None = None,
    hub: HubServicer | None = None,
) -> None:
    """Run the server (hosting `services`, by default the FormatterService,
    and the HubService when `config.hub` names a store) until SIGTERM/SIGINT,
    then drain: health goes NOT_SERVING, each service drains and in-flight
    RPCs get `grace_seconds` to finish.

    `hub` is a HubServicer to host instead of opening `config.hub`'s store
    here, for a caller that uses the same store in-process (an agent on a
    topic); its store stays the caller's to close.
    """
    hosted = list(services) if services is not None else [formatter_service(config, servicer)]
    opened = None
    if hub is None and config.hub is not None:
        from ..hub import HubServicer, open_hub_store

        hub = opened = HubServicer(await open_hub_store(config.hub), config.hub)
    if hub is not None:
        from ..hub import hub_service

        hosted.append(hub_service(hub))
    try:
        await _run(config, ready, servicer, hosted, hub)
    finally:
        if opened is not None:
            await opened.store.close()


async def _run(
    config: ServerConfig,
    ready: Callable[[int], None] | None,
    servicer: FormatterServicer | None,
    hosted: list[HostedService],
    hub: HubServicer | None,
) -> None:
    names = [service.name for service in hosted]
    server, health_servicer, port = build_server(config, services=hosted)
    await server.start()
    await set_serving(health_servicer, True, names)
    listening = [f"{config.host}:{port} (gRPC)"]
    http = None
    listeners: list[Listener] = []
    try:
        if config.http_port is not None:
            from .connect import start_http  # the optional `http` extra

            http = await start_http(config, config.http_port, servicer, health_servicer, hub)
            listening.append(f"{config.host}:{http.port} (Connect over HTTP)")
        for service in hosted:
            if service.listen is not None:
                listeners.append(await service.listen(config))
                listening.extend(listeners[-1].addresses)
    except BaseException:
        await _stop(server, http, listeners, 0)
        raise
    # Before the line below: whoever reads it may stop the server at once.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    # One line, once every port accepts: a script may connect as soon as it sees it.
    logger.info(
        "%s listening on %s; tls=%s, auth=%s, media_root=%s, downloads=%s, hub=%s",
        ", ".join(name.rsplit(".", 1)[-1] for name in names),
        ", ".join(listening),
        config.tls_cert is not None,
        config.auth_token is not None,
        config.media_root,
        config.allow_download,
        _hub_name(config),
    )
    if ready is not None:
        ready(port)
    await stop.wait()
    logger.info("draining for up to %.1fs", config.grace_seconds)
    await set_serving(health_servicer, False, names)
    for service in hosted:
        if service.drain is not None:
            await service.drain()
    await _stop(server, http, listeners, config.grace_seconds)
    logger.info("stopped")


async def _stop(
    server: grpc.aio.Server, http: Any, listeners: Sequence[Listener], grace_seconds: float
) -> None:
    """Stop the gRPC server and every other server beside it, in-flight
    calls given `grace_seconds`."""
    stopping = [server.stop(grace_seconds), *(other.stop(grace_seconds) for other in listeners)]
    if http is not None:
        stopping.append(http.stop(grace_seconds))
    await asyncio.gather(*stopping)


def _hub_name(config: ServerConfig) -> str:
    """The hub's store for the log, without a password."""
    from ..hub.store import redacted_url

    return "off" if config.hub is None else redacted_url(config.hub.url)
