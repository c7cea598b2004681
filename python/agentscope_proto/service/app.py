"""The server around the servicers: health, reflection, auth, TLS, lifecycle.

A server hosts a list of `HostedService`s (`hosting.py`; the FormatterService
by default; `agentscope-proto serve-agent` hosts the AgentService; the
HubService, `hub_service`, joins either where its caller opened the hub
`config.hub` names; any other service joins by adding its own); health
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
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from .._generated.agentscope.agent.v1 import hub_service_pb2 as hub_pb
from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .auth import BearerTokenAuth
from .config import MB, ServerConfig, host_port, redacted_url
from .hosting import HostedService, Listener, add_service
from .reflection import enable_reflection
from .servicer import SERVICE_NAME, FormatterServicer

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
_HUB_SERVICE = hub_pb.DESCRIPTOR.services_by_name["HubService"].full_name


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
    address = host_port(config.host, config.port)
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
) -> None:
    """Run the server (hosting `services`, by default the FormatterService)
    until SIGTERM/SIGINT, then drain: health goes NOT_SERVING, each service
    drains and in-flight RPCs get `grace_seconds` to finish.

    The HubService is one of `services` (`hub.hub_service`): the caller
    opens the store `config.hub` names and closes it after, as
    `agentscope-proto serve` and `serve_agent` do; this module does not
    import the hub, which builds on it.
    """
    hosted = list(services) if services is not None else [formatter_service(config, servicer)]
    await _run(config, ready, servicer, hosted)


async def _run(
    config: ServerConfig,
    ready: Callable[[int], None] | None,
    servicer: FormatterServicer | None,
    hosted: list[HostedService],
) -> None:
    names = [service.name for service in hosted]
    server, health_servicer, port = build_server(config, services=hosted)
    await server.start()
    await set_serving(health_servicer, True, names)
    listening = [f"{host_port(config.host, port)} (gRPC)"]
    http = None
    listeners: list[Listener] = []
    try:
        if config.http_port is not None:
            from .connect import start_http  # the optional `http` extra

            served = [service for service in hosted if service.connect is not None]
            http = await start_http(config, config.http_port, servicer, health_servicer, served)
            listening.append(f"{host_port(config.host, http.port)} (Connect over HTTP)")
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
        _hub_name(config, names),
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


def _hub_name(config: ServerConfig, names: Sequence[str]) -> str:
    """The hub's store for the log, without a password ("off": not hosted)."""
    if config.hub is None or _HUB_SERVICE not in names:
        return "off"
    return redacted_url(config.hub.url)
