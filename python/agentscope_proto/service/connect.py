"""The FormatterService (and the HubService) over plain HTTP: the Connect protocol (JSON or binary).

`curl -H 'content-type: application/json' -d '{...}'
http://HOST:PORT/agentscope.formatter.v1.FormatterService/Format` reaches the
same `FormatterServicer` as gRPC. This module only translates: the servicer
gets a context that reads Connect's request stream and turns its aborts into
`ConnectError`s carrying the same code and details (google.rpc.ErrorInfo,
BadRequest, ...) a gRPC client would see. Auth, size limits, deadlines and TLS
come from the same `ServerConfig`. `grpc.health.v1.Health` is served beside it,
reporting the gRPC server's statuses; a request in a content type no protocol
reads gets HTTP 415 with a Connect error body (connectrpc's is empty).

Needs the `http` extra (connectrpc, hypercorn).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import grpc
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import any_pb2, descriptor_pb2, json_format
from google.protobuf.descriptor import Descriptor, FileDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health as grpc_health
from grpc_health.v1 import health_pb2
from grpc_status import rpc_status
from protobuf import Registry
from protobuf.wkt import Any as ConnectAny
from protobuf.wkt import FileDescriptorSet as ConnectFileDescriptorSet

from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ..errors import LimitExceededError, MessageFormatError
from .asgi import HttpServer, listen, start_asgi
from .auth import BearerTokenAuth
from .config import MB, ServerConfig
from .hosting import HostedService
from .servicer import FormatterServicer
from .status import status_for

__all__ = ["HttpServer", "build_app", "start_http"]


M = TypeVar("M", bound=Message)
_STREAM_TYPES = {
    (False, False): StreamType.UNARY,
    (False, True): StreamType.SERVER_STREAM,
    (True, False): StreamType.CLIENT_STREAM,
    (True, True): StreamType.BIDI_STREAM,
}


# Connect spells CANCELLED with one L; every other name is gRPC's.
_CODES: dict[grpc.StatusCode, Code] = {
    status: Code.CANCELED if status is grpc.StatusCode.CANCELLED else Code[status.name]
    for status in grpc.StatusCode
    if status is not grpc.StatusCode.OK
}
_CODES_BY_NUMBER = {status.value[0]: code for status, code in _CODES.items()}


def _with_json_names(file: FileDescriptor) -> descriptor_pb2.FileDescriptorProto:
    """`file` as a proto, json_name filled in (CopyToProto leaves it out)."""
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    pending: list[tuple[descriptor_pb2.DescriptorProto, Descriptor]] = [
        (message, file.message_types_by_name[message.name]) for message in proto.message_type
    ]
    while pending:
        message, descriptor = pending.pop()
        for field in message.field:
            field.json_name = descriptor.fields_by_name[field.name].json_name
        pending.extend(
            (nested, descriptor.nested_types_by_name[nested.name]) for nested in message.nested_type
        )
    return proto


def _detail_registry() -> Registry:
    """The error detail types, for connectrpc's own protobuf runtime.

    With them, each detail of an error body carries a readable `debug` JSON
    beside its base64 `value`.
    """
    files = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(file: FileDescriptor) -> None:
        if file.name not in seen:
            seen.add(file.name)
            for dependency in file.dependencies:
                add(dependency)
            files.file.append(_with_json_names(file))

    add(error_details_pb2.DESCRIPTOR)
    described = ConnectFileDescriptorSet.from_binary(files.SerializeToString())
    return cast(Registry, described.to_registry())


_DETAILS = _detail_registry()


def _detail(packed: any_pb2.Any) -> ErrorDetail:
    described = _DETAILS.message(packed.TypeName())
    if described is None:
        return ErrorDetail(ConnectAny(type_url=packed.type_url, value=packed.value))
    return ErrorDetail(described.type.from_binary(packed.value))


def connect_error(status: status_pb2.Status) -> ConnectError:
    """The Connect form of a gRPC status with details."""
    code = _CODES_BY_NUMBER.get(status.code, Code.UNKNOWN)
    return ConnectError(code, status.message, [_detail(d) for d in status.details])


class _Context:
    """The part of `grpc.aio.ServicerContext` the servicer uses, over a Connect request."""

    def __init__(
        self,
        ctx: RequestContext[Any, Any],
        requests: AsyncIterator[Message] | None = None,
        writes: asyncio.Queue[Message] | None = None,
    ) -> None:
        self._ctx = ctx
        self._requests = requests
        self._writes = writes
        self._read = 0

    async def write(self, message: Message) -> None:
        if self._writes is None:
            raise RuntimeError("write() on a call without a response stream")
        await self._writes.put(message)

    def time_remaining(self) -> float | None:
        remaining = self._ctx.timeout_ms
        return None if remaining is None else max(remaining, 0.0) / 1000

    async def send_initial_metadata(self, metadata: Iterable[tuple[str, str]]) -> None:
        for key, value in metadata:
            self._ctx.response_headers[key] = value

    async def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        raise ConnectError(_CODES.get(code, Code.UNKNOWN), details)

    async def abort_with_status(self, status: grpc.Status) -> None:
        for key, value in status.trailing_metadata or ():
            if key == rpc_status.GRPC_DETAILS_METADATA_KEY:
                raise connect_error(status_pb2.Status.FromString(value))
        await self.abort(status.code, status.details)

    async def read(self) -> Any:
        if self._requests is None:
            raise RuntimeError("read() on a unary call")
        index = self._read
        self._read += 1
        try:
            return await anext(self._requests)
        except StopAsyncIteration:
            return grpc.aio.EOF
        except ConnectError as exc:
            # The servicer's own errors, so that its error path reports them
            # (anything else would be an internal error there).
            if exc.code is Code.INVALID_ARGUMENT:  # the path names the message, as on gRPC
                reason = exc.message.removeprefix("request: ")
                raise MessageFormatError(f"requests[{index}]", reason) from None
            if exc.code is Code.RESOURCE_EXHAUSTED:
                raise LimitExceededError("max_message_mb", exc.message) from None
            raise


class _DecodeCodec:
    """A codec whose decoding errors carry the details gRPC sends for them.

    gRPC's servicer answers an undecodable request with INVALID_ARGUMENT and a
    BadRequest at `request`; connectrpc alone would send no details.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def name(self) -> str:
        return str(self._inner.name())

    def encode(self, message: Message) -> bytes:
        return bytes(self._inner.encode(message))

    def decode(self, data: bytes | bytearray, message_class: type[M]) -> M:
        try:
            return cast(M, self._inner.decode(data, message_class))
        except Exception as exc:  # ParseError, DecodeError, nesting past protobuf's limit
            name = message_class.DESCRIPTOR.full_name
            reason = f"not a valid {name} ({type(exc).__name__}: {exc})"
            raise connect_error(status_for(MessageFormatError("request", reason))) from None


class _TokenCheck:
    """Bearer-token auth before the body is read (a Connect metadata interceptor)."""

    def __init__(self, token: str) -> None:
        self._auth = BearerTokenAuth(token)

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        if ctx.method.service_name == _HEALTH_SERVICE:
            return  # probes carry no token, as on the gRPC port
        if not self._auth.accepts(ctx.request_headers.get("authorization", "")):
            raise ConnectError(Code.UNAUTHENTICATED, "missing or invalid bearer token")

    async def on_end(
        self, token: None, ctx: RequestContext[Any, Any], error: Exception | None
    ) -> None:
        return None


def _endpoints(
    service: ServiceDescriptor,
    module: Any,
    handlers: Any,
    safe: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """One Connect endpoint per RPC of `service`, each calling `handlers`'
    method of its name; `module` holds the message classes; the RPCs named in
    `safe` have no side effects (so Connect also serves them to GET)."""
    endpoints: dict[str, Any] = {}
    for method in service.methods:
        info: MethodInfo[Any, Any] = MethodInfo(
            name=method.name,
            service_name=service.full_name,
            input=getattr(module, method.input_type.name),
            output=getattr(module, method.output_type.name),
            idempotency_level=(
                IdempotencyLevel.NO_SIDE_EFFECTS
                if method.name in safe
                else IdempotencyLevel.UNKNOWN
            ),
            stream_type=_STREAM_TYPES[(method.client_streaming, method.server_streaming)],
        )
        handler = getattr(handlers, method.name)
        path = f"/{service.full_name}/{method.name}"
        if info.stream_type is StreamType.UNARY:
            endpoints[path] = Endpoint.unary(info, _unary(handler))
        elif info.stream_type is StreamType.SERVER_STREAM:
            endpoints[path] = Endpoint.server_stream(info, _server_stream(handler, info.output))
        elif info.stream_type is StreamType.BIDI_STREAM:
            endpoints[path] = Endpoint.bidi_stream(info, _bidi(handler))
        else:  # pragma: no cover - no schema served has one
            raise NotImplementedError(f"{method.name}: {info.stream_type}")
    return endpoints


def _unary(handler: Any) -> Any:
    async def call(request: Message, ctx: RequestContext[Any, Any]) -> Message:
        return cast(Message, await handler(request, _Context(ctx)))

    return call


def _server_stream(handler: Any, output: type[Message]) -> Any:
    """A server-streaming handler as a Connect server stream: an async
    generator (its responses written as bytes for gRPC, HubService events, are
    decoded for Connect's codecs), or a grpc.aio-style coroutine that writes
    its responses (`context.write`), as health's Watch does."""

    async def call(request: Message, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        writes: asyncio.Queue[Message] = asyncio.Queue()
        running: Any = handler(request, _Context(ctx, writes=writes))
        if inspect.isasyncgen(running):
            async for response in running:
                yield output.FromString(response) if type(response) is bytes else response
            return
        task = asyncio.ensure_future(running)
        try:
            while True:
                written = asyncio.ensure_future(writes.get())
                await asyncio.wait({written, task}, return_when=asyncio.FIRST_COMPLETED)
                if not written.done():
                    written.cancel()
                    while not writes.empty():
                        yield writes.get_nowait()
                    task.result()  # the handler's error, if it ended with one
                    return
                yield written.result()
        finally:
            task.cancel()

    return call


def _bidi(handler: Any) -> Any:
    async def call(
        requests: AsyncIterator[Message], ctx: RequestContext[Any, Any]
    ) -> AsyncIterator[Message]:
        async for response in handler(requests, _Context(ctx, requests)):
            yield response

    return call


class _App(ConnectASGIApplication[Any]):
    """The FormatterService and health, one table of endpoints by path."""

    @property
    def path(self) -> str:
        return "/"


_HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
# What each kind of RPC reads, besides gRPC and gRPC-Web (`application/grpc*`).
_UNARY_CONTENT_TYPES = ("application/json", "application/proto")
_STREAM_CONTENT_TYPES = ("application/connect+json", "application/connect+proto")
_GRPC_CONTENT_TYPES = tuple(
    f"application/{kind}{codec}"
    for kind in ("grpc", "grpc-web")
    for codec in ("", "+proto", "+json")
)


class _ContentTypes:
    """Answers a POST whose content type no protocol reads with HTTP 415, the
    types it takes (`Accept-Post`) and a Connect error with details naming
    `content-type`: connectrpc would send an empty body."""

    def __init__(self, app: Any, streams: dict[str, bool]) -> None:
        self._app = app
        self._streams = streams  # endpoint path -> whether it is a stream

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        stream = self._streams.get(scope.get("path", ""))
        if scope["type"] == "http" and scope["method"] == "POST" and stream is not None:
            given = dict(scope["headers"]).get(b"content-type", b"").decode("latin-1")
            name = given.split(";", 1)[0].strip().lower()
            accepted = _STREAM_CONTENT_TYPES if stream else _UNARY_CONTENT_TYPES
            if name not in accepted and name not in _GRPC_CONTENT_TYPES:
                await _refuse(send, scope["path"].rsplit("/", 1)[-1], given, accepted, stream)
                return
        await self._app(scope, receive, send)


async def _refuse(
    send: Any, method: str, given: str, accepted: tuple[str, ...], stream: bool
) -> None:
    what = f"{given!r} is not a type {method} reads" if given else "missing"
    how = " (Connect streaming: enveloped messages) or gRPC" if stream else " or gRPC"
    reason = f"{what}; send {' or '.join(accepted)}{how}"
    status = status_for(MessageFormatError("content-type", reason))
    error = {
        "code": _CODES_BY_NUMBER[status.code].value,
        "message": status.message,
        "details": [
            {
                "type": detail.TypeName(),
                "value": base64.b64encode(detail.value).decode("ascii").rstrip("="),
                "debug": json_format.MessageToDict(
                    _DETAIL_CLASSES[detail.TypeName()].FromString(detail.value)
                ),
            }
            for detail in status.details
        ],
    }
    body = json.dumps(error).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"accept-post", ", ".join(accepted).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": 415, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_DETAIL_CLASSES = {
    cls.DESCRIPTOR.full_name: cls
    for cls in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest)
}


def build_app(
    config: ServerConfig,
    servicer: FormatterServicer | None = None,
    health_servicer: grpc_health.aio.HealthServicer | None = None,
    services: Sequence[HostedService] = (),
) -> Any:
    """The ASGI application serving the FormatterService, `grpc.health.v1.Health`
    (and each of `services` that names its Connect module and servicer: the
    HubService) with the Connect protocol; health reports `health_servicer`'s
    statuses (the gRPC server's), or SERVING when none is given."""
    servicer = servicer or FormatterServicer(config)
    if health_servicer is None:
        health_servicer = grpc_health.aio.HealthServicer()  # SERVING until it stops
    endpoints: Mapping[str, Any] = {
        **_endpoints(pb.DESCRIPTOR.services_by_name["FormatterService"], pb, servicer),
        **_endpoints(
            health_pb2.DESCRIPTOR.services_by_name["Health"],
            health_pb2,
            health_servicer,
            safe=frozenset({"Check"}),
        ),
    }
    for hosted in services:
        if hosted.connect is not None:
            module, handlers = hosted.connect
            service = module.DESCRIPTOR.services_by_name[hosted.name.rsplit(".", 1)[-1]]
            endpoints = {**endpoints, **_endpoints(service, module, handlers)}
    interceptors = [_TokenCheck(config.auth_token)] if config.auth_token else []
    app = _App(
        service=servicer,
        endpoints=lambda _service: endpoints,
        interceptors=interceptors,
        read_max_bytes=config.max_message_mb * MB,
        codecs=[
            _DecodeCodec(google_protobuf_binary_codec()),
            # Unknown JSON fields are errors, as a typo should be.
            _DecodeCodec(google_protobuf_json_codec(ignore_unknown_fields=False)),
        ],
    )
    streams = {
        path: endpoint.method.stream_type is not StreamType.UNARY
        for path, endpoint in endpoints.items()
    }
    return _ContentTypes(app, streams)


async def start_http(
    config: ServerConfig,
    port: int,
    servicer: FormatterServicer | None = None,
    health: grpc_health.aio.HealthServicer | None = None,
    services: Sequence[HostedService] = (),
) -> HttpServer:
    """Serve the Connect app on `config.host:port` (0: any free port) in this
    event loop; `health` is the gRPC server's (see `build_app`)."""
    sock = listen(config, port)
    return start_asgi(build_app(config, servicer, health, services), config, sock)
