"""RemoteMemory: a BaseMemory kept in a himga server, so code holding a memory never needs to
know whether it is in-process or remote."""

import builtins
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.client import calls
from himga.client.calls import MemoryCalls
from himga.client.channels import ClientTls, bearer, channel, channel_options
from himga.data.conversation import Message, Session
from himga.limits import MAX_MESSAGE_BYTES
from himga.memory.base import DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, BaseMemory, Hit, Page
from himga.memory.filters import MessageFilter
from himga.service.errors import from_rpc_error

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
        self._calls = MemoryCalls(namespace, memory)
        self.target = target
        self.namespace = namespace
        self.memory = memory
        self.timeout = timeout
        self._metadata = bearer(token)
        self._channel = channel(target, tls, options=channel_options(max_message_bytes))
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)

    def ingest(self, message: Message, session: Session) -> None:
        self.ingest_one(message, session)

    def ingest_one(self, message: Message, session: Session) -> str:
        """Store one message with one Ingest call; its id."""
        request = self._calls.ingest(message, session)
        response: pb.IngestResponse = self._call(self._stub.Ingest, request)
        return response.id

    def ingest_many(self, items: Iterable[tuple[Message, Session]], *, request_id: str = "") -> int:
        """Store all of `items` in one IngestBatch call: all of them, or none on an error. With a
        `request_id`, the same batch sent again with it is stored once (a safe retry)."""
        return len(self.store(items, request_id=request_id))

    def store(
        self, items: Iterable[tuple[Message, Session]], *, request_id: str = ""
    ) -> builtins.list[str]:
        """Store all of `items` in one IngestBatch call, as `ingest_many`; their ids, in order."""
        request = self._calls.ingest_batch(items, request_id)
        response: pb.IngestBatchResponse = self._call(self._stub.IngestBatch, request)
        return builtins.list(response.ids)

    def retrieve(self, query: str) -> str:
        return self._retrieve(query, DEFAULT_LIMIT).context

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        """At most `limit` hits (none for a limit below 1, as in-process memories give; the
        server refuses more than 1000)."""
        if limit < 1:
            return []
        return calls.hits(self._retrieve(query, limit, filter), limit)

    def recall(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        *,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> tuple[str, builtins.list[Hit]]:
        if limit < 1:  # the server reads 0 as its default: no hits and no context, as in process
            return "", []
        response = self._retrieve(query, limit, filter, max_context_tokens)
        return response.context, calls.hits(response, limit)

    def reset(self) -> None:
        self._call(self._stub.Reset, self._calls.reset())

    def delete(
        self,
        ids: Iterable[str] = (),
        *,
        filter: MessageFilter | None = None,
        request_id: str = "",
    ) -> int:
        """Forget the messages named, in one Delete call; how many were stored. With a
        `request_id`, the same delete sent again with it deletes nothing more and answers the
        first one's count (a safe retry)."""
        request = self._calls.delete(ids, filter, request_id)
        response: pb.DeleteResponse = self._call(self._stub.Delete, request)
        return response.deleted

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        """One page of ListMessages; page_size 1 to 1000."""
        request = self._calls.list(filter, page_size, page_token)
        response: pb.ListMessagesResponse = self._call(self._stub.ListMessages, request)
        return calls.page(response)

    def list_namespaces(
        self, *, prefix: str = "", page_size: int = 100, page_token: str = ""
    ) -> calls.NamespacePage:
        """One page of the server's namespaces (ListNamespaces): those whose name starts with
        `prefix` and that the token may read, in name order; page_size 1 to 1000."""
        request = calls.list_namespaces(prefix, page_size, page_token)
        response: pb.ListNamespacesResponse = self._call(self._stub.ListNamespaces, request)
        return calls.namespace_page(response)

    def delete_namespace(self) -> bool:
        """Forget this memory's namespace wholly (DeleteNamespace: its messages, episodes and
        receipts; the token needs `admin`); whether the server held it."""
        request = self._calls.delete_namespace()
        response: pb.DeleteNamespaceResponse = self._call(self._stub.DeleteNamespace, request)
        return response.deleted

    def close(self) -> None:
        """Release the connection; the memory is kept by the server."""
        self._channel.close()

    def _retrieve(
        self,
        query: str,
        limit: int,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> pb.RetrieveResponse:
        request = self._calls.retrieve(query, limit, filter, max_context_tokens)
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
