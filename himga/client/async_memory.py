"""AsyncRemoteMemory: RemoteMemory for asyncio agent loops, on grpc.aio. The same methods,
awaitable; the same requests and readings (himga.client.calls); the same errors."""

import builtins
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.client import calls
from himga.client.calls import MemoryCalls
from himga.client.channels import ClientTls, aio_channel, bearer, channel_options
from himga.data.conversation import Message, Session
from himga.limits import MAX_MESSAGE_BYTES
from himga.memory.base import DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, Hit, Page
from himga.memory.filters import MessageFilter
from himga.service.errors import from_rpc_error

R = TypeVar("R")


class AsyncRemoteMemory:
    """The memory of `namespace` in the server at `target` ("host:port"), for asyncio.

    Every method of RemoteMemory, as a coroutine, taking the same arguments and raising the same
    exceptions (InvalidRequest naming the field, NotFoundError, ...; grpc.RpcError for an
    unreachable server). Many calls may be awaited at once on one connection. Make it inside the
    event loop that uses it; `await close()` (or `async with`) releases the connection.
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
        self._channel = aio_channel(target, tls, options=channel_options(max_message_bytes))
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)

    async def ingest(self, message: Message, session: Session) -> None:
        await self.ingest_one(message, session)

    async def ingest_one(self, message: Message, session: Session) -> str:
        """Store one message with one Ingest call; its id."""
        request = self._calls.ingest(message, session)
        response: pb.IngestResponse = await self._call(self._stub.Ingest, request)
        return response.id

    async def ingest_many(
        self, items: Iterable[tuple[Message, Session]], *, request_id: str = ""
    ) -> int:
        """Store all of `items` in one IngestBatch call: all of them, or none on an error."""
        return len(await self.store(items, request_id=request_id))

    async def store(
        self, items: Iterable[tuple[Message, Session]], *, request_id: str = ""
    ) -> builtins.list[str]:
        """Store all of `items` in one IngestBatch call; their ids, in order."""
        request = self._calls.ingest_batch(items, request_id)
        response: pb.IngestBatchResponse = await self._call(self._stub.IngestBatch, request)
        return builtins.list(response.ids)

    async def retrieve(self, query: str) -> str:
        return (await self._retrieve(query, DEFAULT_LIMIT)).context

    async def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        """At most `limit` hits (none for a limit below 1)."""
        if limit < 1:
            return []
        return calls.hits(await self._retrieve(query, limit, filter), limit)

    async def recall(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        *,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> tuple[str, builtins.list[Hit]]:
        if limit < 1:  # as RemoteMemory.recall
            return "", []
        response = await self._retrieve(query, limit, filter, max_context_tokens)
        return response.context, calls.hits(response, limit)

    async def reset(self) -> None:
        await self._call(self._stub.Reset, self._calls.reset())

    async def delete(
        self,
        ids: Iterable[str] = (),
        *,
        filter: MessageFilter | None = None,
        request_id: str = "",
    ) -> int:
        """As RemoteMemory.delete."""
        request = self._calls.delete(ids, filter, request_id)
        response: pb.DeleteResponse = await self._call(self._stub.Delete, request)
        return response.deleted

    async def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        """One page of ListMessages; page_size 1 to 1000."""
        request = self._calls.list(filter, page_size, page_token)
        response: pb.ListMessagesResponse = await self._call(self._stub.ListMessages, request)
        return calls.page(response)

    async def list_namespaces(
        self, *, prefix: str = "", page_size: int = 100, page_token: str = ""
    ) -> calls.NamespacePage:
        """As RemoteMemory.list_namespaces."""
        request = calls.list_namespaces(prefix, page_size, page_token)
        response: pb.ListNamespacesResponse = await self._call(self._stub.ListNamespaces, request)
        return calls.namespace_page(response)

    async def delete_namespace(self) -> bool:
        """As RemoteMemory.delete_namespace."""
        request = self._calls.delete_namespace()
        response: pb.DeleteNamespaceResponse = await self._call(self._stub.DeleteNamespace, request)
        return response.deleted

    @property
    def durable(self) -> bool:
        """False, as RemoteMemory's: whether the server keeps it is the server's to say."""
        return False

    async def close(self) -> None:
        """Release the connection; the memory is kept by the server."""
        await self._channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _retrieve(
        self,
        query: str,
        limit: int,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> pb.RetrieveResponse:
        request = self._calls.retrieve(query, limit, filter, max_context_tokens)
        response: pb.RetrieveResponse = await self._call(self._stub.Retrieve, request)
        return response

    async def _call(self, method: Callable[..., Awaitable[R]], request: Any) -> R:
        try:
            return await method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            translated = from_rpc_error(error)
            if translated is error:
                raise
            raise translated from error
