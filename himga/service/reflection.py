"""Server reflection, `v1` and `v1alpha`, with every symbol resolvable (methods included).

grpcio-reflection serves only `grpc.reflection.v1alpha`, and its descriptor pool does not find a
method by its full name (`grpcurl describe himga.memory.v1.MemoryService.Retrieve` said "Symbol
not found"). Tools now ask for `grpc.reflection.v1` first. The two versions are the same
protocol: their messages have the same fields with the same numbers, only the package differs.
So `v1` is served by the same servicer under the `v1` name, its messages read and written with
the `v1alpha` classes, and the `v1` file itself (the `v1alpha` file under its `v1` name and
package) is added to the descriptor pool so that it is resolvable like every other service.

The compiled modules carry no source info, so reflection would serve himga's files without
their comments; it serves instead the descriptor set `make generate` writes with them
(`memory.binpb`), so that `grpcurl describe` shows what each message, field and call means.
"""

from importlib import resources
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

V1ALPHA = reflection.SERVICE_NAME
V1 = "grpc.reflection.v1.ServerReflection"
_V1_FILE = "grpc/reflection/v1/reflection.proto"
_METHOD = "ServerReflectionInfo"


class _Servicer(reflection.ReflectionServicer):
    """The reference servicer, finding a method by its full name as the file of its service."""

    def __init__(self, service_names: tuple[str, ...], pool: descriptor_pool.DescriptorPool):
        super().__init__(service_names, pool=pool)
        self._symbols = pool

    def _file_by_filename(self, request: Any, filename: str) -> Any:
        return _with_comments(super()._file_by_filename(request, filename))  # type: ignore[misc]

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        pool = self._symbols
        try:
            pool.FindFileContainingSymbol(fully_qualified_name)
        except KeyError:
            service, _, method = fully_qualified_name.rpartition(".")
            try:
                if method in pool.FindServiceByName(service).methods_by_name:
                    fully_qualified_name = service
            except KeyError:
                pass
        return _with_comments(
            super()._file_containing_symbol(  # type: ignore[misc]
                request, fully_qualified_name
            )
        )


def _commented() -> dict[str, bytes]:
    """himga's proto files as FileDescriptorProtos with their source info (the comments), by
    file name, from the descriptor set `make generate` writes beside the compiled module."""
    data = resources.files("himga_proto.memory.v1").joinpath("memory.binpb").read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(data).file
    return {file.name: file.SerializeToString() for file in files}


_COMMENTED = _commented()


def _with_comments(response: Any) -> Any:
    """A file descriptor answer with himga's files replaced by their commented form."""
    if not response.HasField("file_descriptor_response"):
        return response
    served = response.file_descriptor_response.file_descriptor_proto
    for index, serialized in enumerate(served):
        name = descriptor_pb2.FileDescriptorProto.FromString(serialized).name
        if name in _COMMENTED:
            served[index] = _COMMENTED[name]
    return response


def _add_v1_file(pool: descriptor_pool.DescriptorPool) -> None:
    """Put the v1 reflection file into `pool` (once): v1alpha's under its v1 name."""
    try:
        pool.FindFileByName(_V1_FILE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name, proto.package = _V1_FILE, "grpc.reflection.v1"
    proto.ClearField("options")
    for message in proto.message_type:
        for field in message.field:
            if field.type_name:
                field.type_name = field.type_name.replace(".v1alpha.", ".v1.")
    for service in proto.service:
        for method in service.method:
            method.input_type = method.input_type.replace(".v1alpha.", ".v1.")
            method.output_type = method.output_type.replace(".v1alpha.", ".v1.")
    pool.AddSerializedFile(proto.SerializeToString())


def enable(service_names: tuple[str, ...], server: grpc.Server) -> None:
    """Serve reflection v1 and v1alpha on `server`, listing `service_names` and both
    reflection services."""
    pool = descriptor_pool.Default()
    _add_v1_file(pool)
    servicer = _Servicer((*service_names, V1ALPHA, V1), pool=pool)
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(name, {_METHOD: handler}) for name in (V1ALPHA, V1)]
    )
