"""The MemoryService requests a client sends and how it reads their answers, shared by
RemoteMemory (blocking) and AsyncRemoteMemory (asyncio), so the two build the same calls from
the same arguments, check them the same way and read the same records back. Only the waiting
differs between them; every conversion goes through `convert`."""

import builtins
from collections.abc import Iterable
from dataclasses import dataclass

from himga_proto.memory.v1 import memory_pb2 as pb

import himga.service.convert as convert
from himga.data.conversation import Message, Session
from himga.errors import InvalidArgument
from himga.memory.base import Hit, Page
from himga.memory.budget import check_budget
from himga.memory.filters import MessageFilter
from himga.service.errors import InvalidRequest
from himga.service.names import namespace_violations


@dataclass(frozen=True, slots=True)
class MemoryCalls:
    """The requests for the memory `memory` ("" for the server's default) of `namespace`."""

    namespace: str
    memory: str = ""

    def __post_init__(self) -> None:
        problems = namespace_violations(self.namespace)
        if problems:
            raise InvalidRequest(problems)

    def ingest(self, message: Message, session: Session) -> pb.IngestRequest:
        return pb.IngestRequest(
            namespace=self.namespace,
            memory=self.memory,
            message=convert.message_to_proto(message),
            session=convert.session_to_proto(session, with_messages=False),
        )

    def ingest_batch(
        self, items: Iterable[tuple[Message, Session]], request_id: str = ""
    ) -> pb.IngestBatchRequest:
        return pb.IngestBatchRequest(
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

    def retrieve(
        self,
        query: str,
        limit: int,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> pb.RetrieveRequest:
        return pb.RetrieveRequest(
            namespace=self.namespace,
            memory=self.memory,
            query=query,
            limit=limit,
            filter=convert.filter_to_proto(filter),
            max_context_tokens=check_budget(max_context_tokens),
        )

    def reset(self) -> pb.ResetRequest:
        return pb.ResetRequest(namespace=self.namespace, memory=self.memory)

    def delete(
        self, ids: Iterable[str], filter: MessageFilter | None, request_id: str = ""
    ) -> pb.DeleteRequest:
        if isinstance(ids, str):
            raise InvalidArgument("ids", "a list of ids, not one string")
        return pb.DeleteRequest(
            namespace=self.namespace,
            memory=self.memory,
            ids=builtins.list(ids),
            filter=convert.filter_to_proto(filter),
            request_id=request_id,
        )

    def delete_namespace(self) -> pb.DeleteNamespaceRequest:
        return pb.DeleteNamespaceRequest(namespace=self.namespace)

    def list(
        self, filter: MessageFilter | None, page_size: int, page_token: str
    ) -> pb.ListMessagesRequest:
        if page_size < 1:
            raise InvalidArgument("page_size", "must be 1 to 1000")
        return pb.ListMessagesRequest(
            namespace=self.namespace,
            memory=self.memory,
            filter=convert.filter_to_proto(filter),
            page_size=page_size,
            page_token=page_token,
        )


@dataclass(frozen=True, slots=True)
class NamespaceInfo:
    """One namespace a server holds: its name, and the memory of its messages ("" when it
    holds episodes only)."""

    name: str
    memory: str


@dataclass(frozen=True, slots=True)
class NamespacePage:
    """One page of ListNamespaces: its namespaces, and the token of the next page ("" on the
    last)."""

    namespaces: builtins.list[NamespaceInfo]
    next_page_token: str


def list_namespaces(prefix: str, page_size: int, page_token: str) -> pb.ListNamespacesRequest:
    if page_size < 1:
        raise InvalidArgument("page_size", "must be 1 to 1000")
    return pb.ListNamespacesRequest(prefix=prefix, page_size=page_size, page_token=page_token)


def namespace_page(response: pb.ListNamespacesResponse) -> NamespacePage:
    """The page a ListNamespaces answer holds."""
    found = [NamespaceInfo(info.name, info.memory) for info in response.namespaces]
    return NamespacePage(found, response.next_page_token)


def hits(response: pb.RetrieveResponse, limit: int) -> builtins.list[Hit]:
    """The hits of a Retrieve answer; none for a limit below 1 (in-process memories give none,
    and the call asked for one, since the server refuses 0)."""
    return convert.hits_from_proto(response.hits) if limit >= 1 else []


def page(response: pb.ListMessagesResponse) -> Page:
    """The page a ListMessages answer holds."""
    messages = [
        convert.stored_from_proto(stored, f"messages[{i}]")
        for i, stored in enumerate(response.messages)
    ]
    return Page(messages, response.next_page_token)
