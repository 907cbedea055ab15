"""RemoteMemory: a BaseMemory kept in a himga server, so code holding a memory never needs to
know whether it is in-process or remote."""

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.conversation import Message, Session
from himga.memory.base import DEFAULT_LIMIT, BaseMemory, Hit
from himga.service import convert
from himga.service.credentials import ClientTls, channel
from himga.service.errors import InvalidRequest, from_rpc_error
from himga.service.namespaces import namespace_violations
from himga.service.server import MAX_MESSAGE_BYTES

R = TypeVar("R")


class RemoteMemory(BaseMemory):
    """The memory of `namespace` in the server at `target` ("host:port").

    `memory` names the implementation the server opens the namespace with ("" for the server's
    default). A bad request raises InvalidRequest (a ValueError) naming the field, as the
    server's field violations say; an unreachable server raises grpc.RpcError (UNAVAILABLE).
    Close it (or use it as a context manager) to release the connection.

    `token` is sent as `authorization: Bearer TOKEN` with every call, for a server with an auth
    file; `tls` makes the connection TLS (with a client certificate for mutual TLS).
    """

    def __init__(
        self,
        target: str,
        namespace: str,
        *,
        memory: str = "",
        timeout: float | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        token: str | None = None,
        tls: ClientTls | None = None,
    ) -> None:
        problems = namespace_violations(namespace)
        if problems:
            raise InvalidRequest(problems)
        self.target = target
        self.namespace = namespace
        self.memory = memory
        self.timeout = timeout
        self._metadata = [("authorization", f"Bearer {token}")] if token is not None else None
        self._channel = channel(
            target,
            tls,
            options=[
                ("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", max_message_bytes),
            ],
        )
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)

    def ingest(self, message: Message, session: Session) -> None:
        self._call(
            self._stub.Ingest,
            pb.IngestRequest(
                namespace=self.namespace,
                memory=self.memory,
                message=convert.message_to_proto(message),
                session=convert.session_to_proto(session, with_messages=False),
            ),
        )

    def ingest_many(self, items: Iterable[tuple[Message, Session]], *, request_id: str = "") -> int:
        """Store all of `items` in one IngestBatch call: all of them, or none on an error. With a
        `request_id`, the same batch sent again with it is stored once (a safe retry)."""
        request = pb.IngestBatchRequest(
            namespace=self.namespace,
            memory=self.memory,
            request_id=request_id,
            items=[
                pb.IngestItem(
                    message=convert.message_to_proto(message),
                    session=convert.session_to_proto(session, with_messages=False),
                )
                for message, session in items
            ],
        )
        response: pb.IngestBatchResponse = self._call(self._stub.IngestBatch, request)
        return response.ingested

    def retrieve(self, query: str) -> str:
        return self._retrieve(query, DEFAULT_LIMIT).context

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        """At most `limit` hits (none for a limit below 1, as in-process memories give; the
        server refuses more than 1000)."""
        if limit < 1:
            return []
        return convert.hits_from_proto(self._retrieve(query, limit).hits)

    def recall(self, query: str, limit: int = DEFAULT_LIMIT) -> tuple[str, list[Hit]]:
        if limit < 1:
            return self.retrieve(query), []
        response = self._retrieve(query, limit)
        return response.context, convert.hits_from_proto(response.hits)

    def reset(self) -> None:
        self._call(self._stub.Reset, pb.ResetRequest(namespace=self.namespace, memory=self.memory))

    def close(self) -> None:
        """Release the connection; the memory is kept by the server."""
        self._channel.close()

    def _retrieve(self, query: str, limit: int) -> pb.RetrieveResponse:
        request = pb.RetrieveRequest(
            namespace=self.namespace, memory=self.memory, query=query, limit=limit
        )
        response: pb.RetrieveResponse = self._call(self._stub.Retrieve, request)
        return response

    def _call(self, method: Callable[..., R], request: Any) -> R:
        try:
            return method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            translated = from_rpc_error(error)
            if translated is error:
                raise
            raise translated from error
