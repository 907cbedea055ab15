"""The gRPC door: MemoryService and EpisodeService as the generated servicers, each method an
adapter of one line over the core (himga.core). A door fills the call's CallContext from gRPC's
(its metadata's token, its peer, its deadline and whether the caller is still there), hands the
request's bytes to the core, which decodes them once the token is known good, and ends the call
with the status of whatever the core raises (himga.service.errors.abort)."""

import time
from typing import Any

import grpc
from google.protobuf.message import Message
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.service.auth import bearer_token
from himga.service.core.context import CallContext
from himga.service.core.core import SERVICES, Core, Encoded, protobuf
from himga.service.errors import abort


def call_context(method: str, context: grpc.ServicerContext) -> CallContext:
    """The CallContext of a gRPC call of `method`."""
    token = None
    for name, value in context.invocation_metadata() or ():
        if name == "authorization" and isinstance(value, str):
            token = bearer_token(value)
            break
    remaining = context.time_remaining()
    deadline = None if remaining is None else time.monotonic() + remaining
    return CallContext(method, token, context.peer(), deadline, context.is_active)


class _Door:
    def __init__(self, core: Core, service: str) -> None:
        self.core = core
        self._service = service

    def serve(self, name: str, data: bytes, context: grpc.ServicerContext) -> Any:
        method = f"/{self._service}/{name}"
        try:
            return self.core.call(Encoded(data, protobuf), call_context(method, context))
        except Exception as error:
            abort(context, error)


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer, _Door):
    """MemoryService over the core; each request arrives as its bytes (`add_to`)."""

    def __init__(self, core: Core) -> None:
        _Door.__init__(self, core, SERVICES[0])

    def Ingest(self, request: Any, context: grpc.ServicerContext) -> pb.IngestResponse:
        return self.serve("Ingest", request, context)  # type: ignore[no-any-return]

    def IngestBatch(self, request: Any, context: grpc.ServicerContext) -> pb.IngestBatchResponse:
        return self.serve("IngestBatch", request, context)  # type: ignore[no-any-return]

    def Retrieve(self, request: Any, context: grpc.ServicerContext) -> pb.RetrieveResponse:
        return self.serve("Retrieve", request, context)  # type: ignore[no-any-return]

    def Reset(self, request: Any, context: grpc.ServicerContext) -> pb.ResetResponse:
        return self.serve("Reset", request, context)  # type: ignore[no-any-return]

    def Delete(self, request: Any, context: grpc.ServicerContext) -> pb.DeleteResponse:
        return self.serve("Delete", request, context)  # type: ignore[no-any-return]

    def ListMessages(self, request: Any, context: grpc.ServicerContext) -> pb.ListMessagesResponse:
        return self.serve("ListMessages", request, context)  # type: ignore[no-any-return]


class EpisodeServicer(memory_pb2_grpc.EpisodeServiceServicer, _Door):
    """EpisodeService over the core; each request arrives as its bytes (`add_to`)."""

    def __init__(self, core: Core) -> None:
        _Door.__init__(self, core, SERVICES[1])

    def RecordEpisode(
        self, request: Any, context: grpc.ServicerContext
    ) -> pb.RecordEpisodeResponse:
        return self.serve("RecordEpisode", request, context)  # type: ignore[no-any-return]

    def RecordEpisodes(
        self, request: Any, context: grpc.ServicerContext
    ) -> pb.RecordEpisodesResponse:
        return self.serve("RecordEpisodes", request, context)  # type: ignore[no-any-return]

    def GetEpisode(self, request: Any, context: grpc.ServicerContext) -> pb.GetEpisodeResponse:
        return self.serve("GetEpisode", request, context)  # type: ignore[no-any-return]

    def DeleteEpisode(
        self, request: Any, context: grpc.ServicerContext
    ) -> pb.DeleteEpisodeResponse:
        return self.serve("DeleteEpisode", request, context)  # type: ignore[no-any-return]

    def ListEpisodes(self, request: Any, context: grpc.ServicerContext) -> pb.ListEpisodesResponse:
        return self.serve("ListEpisodes", request, context)  # type: ignore[no-any-return]

    def SearchEpisodes(
        self, request: Any, context: grpc.ServicerContext
    ) -> pb.SearchEpisodesResponse:
        return self.serve("SearchEpisodes", request, context)  # type: ignore[no-any-return]


def add_to(server: grpc.Server, core: Core) -> None:
    """Serve the core's methods on `server`: every method of its services, through the servicer
    adapters, the request handed on as its bytes (decoded by the core after auth). A method of
    the services that no adapter has is served too, and refused by the core (auth's table)."""
    adapters: dict[str, _Door] = {
        SERVICES[0]: MemoryServicer(core),
        SERVICES[1]: EpisodeServicer(core),
    }
    by_service: dict[str, dict[str, grpc.RpcMethodHandler]] = {name: {} for name in adapters}
    for full_name, method in core.methods.items():
        service, _, name = full_name.strip("/").partition("/")
        adapter = adapters[service]
        function = getattr(adapter, name, None)
        if function is None:

            def function(
                request: Any, context: grpc.ServicerContext, name: str = name, door: _Door = adapter
            ) -> Any:
                return door.serve(name, request, context)

        by_service[service][name] = grpc.unary_unary_rpc_method_handler(
            function, None, _serializer(method.output)
        )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(s, h) for s, h in by_service.items()]
    )


def _serializer(kind: type[Message]) -> Any:
    return kind.SerializeToString
