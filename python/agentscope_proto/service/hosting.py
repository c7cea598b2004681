"""What a server hosts: a `HostedService` (a gRPC service, how it is added to
a server, how it drains, what it runs beside), and `add_service`, which
adds a servicer's methods from its generated descriptors.

Below the server (`app`) and the services alike: a service builds its
`HostedService` here without importing the server that runs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from types import ModuleType
from typing import Any, NamedTuple, Protocol

import grpc

from ._rpc import lenient
from .config import ServerConfig

__all__ = ["HostedService", "Listener", "add_service"]

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
    when the server drains, if anything, the servers it runs beside the
    gRPC one, if any (started with the server's config), and its generated
    module and servicer for Connect over HTTP to serve it too (`--http-port`;
    None: gRPC only)."""

    name: str
    add_to: Callable[[grpc.aio.Server], None]
    drain: Callable[[], Awaitable[None]] | None = None
    listen: Callable[[ServerConfig], Awaitable[Listener]] | None = None
    connect: tuple[ModuleType, Any] | None = None


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
