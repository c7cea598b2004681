"""Server reflection that keeps the schema's comments, as `grpc.reflection.v1`
and `v1alpha`.

grpcio-reflection serialises each file with `CopyToProto`, which drops its
source info, so `grpcurl describe` and grpcui would show no documentation.
This servicer answers from the descriptor set that `make generate` writes
with `--include_source_info` (`_generated/descriptors.binpb`); files outside
it (health, the error detail types, reflection itself, the well-known types
the schema imports) come from their Python modules without comments.

grpcio-reflection only ships `v1alpha`; newer tools ask `v1` first. `v1` is
`v1alpha` promoted unchanged, message for message and field for field, so the
same servicer answers both, and `v1`'s schema is `v1alpha`'s under its package.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from importlib import resources
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor
from grpc_reflection.v1alpha import reflection_pb2 as rpb
from grpc_reflection.v1alpha import reflection_pb2_grpc

__all__ = [
    "SERVICE_NAME",
    "V1_SERVICE_NAME",
    "DocumentedReflection",
    "documented_files",
    "enable_reflection",
]

SERVICE_NAME: str = rpb.DESCRIPTOR.services_by_name["ServerReflection"].full_name
_V1_PACKAGE = "grpc.reflection.v1"
V1_SERVICE_NAME = f"{_V1_PACKAGE}.ServerReflection"
_DESCRIPTOR_SET = "descriptors.binpb"


def documented_files() -> list[descriptor_pb2.FileDescriptorProto]:
    """The schema's files with their comments, dependencies first (as protoc writes them)."""
    package = resources.files("agentscope_proto._generated")
    data = package.joinpath(_DESCRIPTOR_SET).read_bytes()
    return list(descriptor_pb2.FileDescriptorSet.FromString(data).file)


class DocumentedReflection:
    """A `grpc.reflection.v1alpha.ServerReflection` servicer over a pool built
    from the documented descriptor set.

    `extra_files` (e.g. health) join the pool with their dependencies, as the
    default pool knows them.
    """

    def __init__(self, service_names: Iterable[str], extra_files: Iterable[FileDescriptor]) -> None:
        self._services = sorted(service_names)
        self._pool = descriptor_pool.DescriptorPool()
        # What each file is answered with: its serialized FileDescriptorProto.
        self._protos: dict[str, bytes] = {}
        documented = documented_files()
        ours = {proto.name for proto in documented}
        imported = {name for proto in documented for name in proto.dependency} - ours
        for file in [*extra_files, *(_imported(name) for name in sorted(imported))]:
            self._add_plain(file)
        for proto in [_v1_file(), *documented]:
            self._add(proto)

    def _add(self, proto: descriptor_pb2.FileDescriptorProto) -> None:
        self._pool.Add(proto)
        self._protos[proto.name] = proto.SerializeToString()

    def _add_plain(self, file: FileDescriptor) -> None:
        if file.name in self._protos:
            return
        for dependency in file.dependencies:
            self._add_plain(dependency)
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        self._add(proto)

    def _with_dependencies(self, file: FileDescriptor) -> list[bytes]:
        """`file` and everything it imports, transitively (the client asks once)."""
        seen: dict[str, bytes] = {}
        pending = [file]
        while pending:
            current = pending.pop()
            if current.name not in seen:
                seen[current.name] = self._protos[current.name]
                pending.extend(current.dependencies)
        return list(seen.values())

    def _answer(self, request: rpb.ServerReflectionRequest) -> rpb.ServerReflectionResponse:
        response = rpb.ServerReflectionResponse(original_request=request)
        which = request.WhichOneof("message_request")
        pool = self._pool
        try:
            if which == "list_services":
                services = [rpb.ServiceResponse(name=name) for name in self._services]
                response.list_services_response.service.extend(services)
            elif which == "all_extension_numbers_of_type":
                message = pool.FindMessageTypeByName(request.all_extension_numbers_of_type)
                numbers = sorted(ext.number for ext in pool.FindAllExtensions(message))
                answer = response.all_extension_numbers_response
                answer.base_type_name = message.full_name
                answer.extension_number.extend(numbers)
            else:
                if which == "file_by_filename":
                    file = pool.FindFileByName(request.file_by_filename)
                elif which == "file_containing_symbol":
                    file = pool.FindFileContainingSymbol(request.file_containing_symbol)
                elif which == "file_containing_extension":
                    wanted = request.file_containing_extension
                    message = pool.FindMessageTypeByName(wanted.containing_type)
                    extension = pool.FindExtensionByNumber(message, wanted.extension_number)
                    file = pool.FindFileContainingSymbol(extension.full_name)
                else:
                    return _error(response, grpc.StatusCode.INVALID_ARGUMENT)
                protos = self._with_dependencies(file)
                response.file_descriptor_response.file_descriptor_proto.extend(protos)
        except KeyError:
            return _error(response, grpc.StatusCode.NOT_FOUND)
        return response

    async def ServerReflectionInfo(
        self, request_iterator: AsyncIterable[rpb.ServerReflectionRequest], context: Any
    ) -> AsyncIterator[rpb.ServerReflectionResponse]:
        async for request in request_iterator:
            yield self._answer(request)


def _error(
    response: rpb.ServerReflectionResponse, code: grpc.StatusCode
) -> rpb.ServerReflectionResponse:
    number, text = code.value
    response.error_response.error_code = number
    response.error_response.error_message = text
    return response


def _imported(name: str) -> FileDescriptor:
    """A file the schema imports from outside proto/ (`google/protobuf/struct.proto`),
    from the Python module protobuf names after it (`google.protobuf.struct_pb2`)."""
    module = importlib.import_module(name.removesuffix(".proto").replace("/", ".") + "_pb2")
    return module.DESCRIPTOR  # type: ignore[no-any-return]


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """`grpc/reflection/v1/reflection.proto`: v1alpha's file under v1's package."""
    proto = descriptor_pb2.FileDescriptorProto()
    rpb.DESCRIPTOR.CopyToProto(proto)
    old = f".{rpb.DESCRIPTOR.package}."
    new = f".{_V1_PACKAGE}."
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = _V1_PACKAGE
    proto.ClearField("options")  # v1alpha's language options, not v1's
    fields = [field for message in proto.message_type for field in message.field]
    for field in fields:
        if field.type_name.startswith(old):
            field.type_name = new + field.type_name.removeprefix(old)
    for method in proto.service[0].method:
        method.input_type = method.input_type.replace(old, new, 1)
        method.output_type = method.output_type.replace(old, new, 1)
    return proto


def enable_reflection(
    service_names: Iterable[str], server: grpc.aio.Server, extra_files: Iterable[FileDescriptor]
) -> None:
    """Add the documented reflection service, as v1 and v1alpha, to `server`
    (it lists both)."""
    servicer = DocumentedReflection(
        [*service_names, V1_SERVICE_NAME, SERVICE_NAME], [*extra_files, rpb.DESCRIPTOR]
    )
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    # The same messages on the wire, so v1alpha's classes read and write v1's.
    v1 = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=rpb.ServerReflectionRequest.FromString,
        response_serializer=rpb.ServerReflectionResponse.SerializeToString,
    )
    handlers = {"ServerReflectionInfo": v1}
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE_NAME, handlers),)
    )
