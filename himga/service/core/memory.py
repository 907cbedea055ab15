"""The MemoryService handlers of the core: each checks a request, converts it, and hands it to
its namespace's memory. They hold no memory logic, and know nothing of the door a call came
through (the memories know nothing of the handlers)."""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from himga_proto.memory.v1 import memory_pb2 as pb

from himga.bounds import Violations
from himga.data.conversation import Message, Session
from himga.errors import InvalidArgument
from himga.memory.base import DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, BaseMemory
from himga.memory.filters import MessageFilter, deletion
from himga.memory.null import NullMemory
from himga.service import auth, catalog, convert, fairness, resources
from himga.service.core.context import CallContext
from himga.service.errors import FieldViolation, InvalidRequest
from himga.service.lifecycle import Calls
from himga.service.namespaces import Namespaces, namespace_violations
from himga.service.receipts import InProcessReceipts, W, request_id_violations, write_once

MAX_LIMIT = 1000
"""The most hits one Retrieve may ask for (the proto documents it)."""
MAX_PAGE_SIZE = 1000
"""The most messages one ListMessages page (or namespaces one ListNamespaces page) may ask for
(the proto documents it)."""
DEFAULT_NAMESPACE_PAGE = 100
"""How many namespaces a ListNamespaces page holds when the request says 0."""

T = TypeVar("T")


class NamespacedRequest(Protocol):
    """What every request has: the namespace it is for, and the memory it names."""

    @property
    def namespace(self) -> str: ...

    @property
    def memory(self) -> str: ...


class MemoryHandlers:
    """MemoryService over the namespaces of one server: a method per RPC, taking the request
    message and the call's CallContext, returning the answer or raising a himga error."""

    def __init__(
        self,
        namespaces: Namespaces,
        calls: Calls | None = None,
        max_response_bytes: int | None = None,
        store: resources.StoreHealth | None = None,
        episode_receipts: InProcessReceipts | None = None,
    ) -> None:
        self.namespaces = namespaces
        self.calls = calls or Calls()
        self.max_response_bytes = max_response_bytes
        self.store = store
        self._receipts = InProcessReceipts()
        self._episode_receipts = episode_receipts  # DeleteNamespace forgets these too

    def Ingest(self, request: pb.IngestRequest, context: CallContext) -> pb.IngestResponse:
        found = request_id_violations(request.request_id)
        item = _item(request, "", found, _Sessions())
        with self._memory(request, found) as memory:
            assert item is not None  # no violation found: the message and session were read
            (stored_id,) = self._write(memory, request, context, lambda: memory.store([item]))
        return pb.IngestResponse(id=stored_id)

    def IngestBatch(
        self, request: pb.IngestBatchRequest, context: CallContext
    ) -> pb.IngestBatchResponse:
        found = Violations(request_id_violations(request.request_id))
        sessions = _Sessions()
        with fairness.large_batch(len(request.items)):
            items = []
            for i, it in enumerate(request.items):
                if found.full:  # refused already: the rest is not read
                    found.unchecked = True
                    break
                items.append(_item(it, f"items[{i}].", found, sessions))
            with self._memory(request, found) as memory:
                ids = self._write(
                    memory, request, context, lambda: memory.store(filter(None, items))
                )
        return pb.IngestBatchResponse(ingested=len(ids), ids=ids)

    def Retrieve(self, request: pb.RetrieveRequest, context: CallContext) -> pb.RetrieveResponse:
        found = []
        if request.limit > MAX_LIMIT:
            found.append(FieldViolation("limit", f"must be at most {MAX_LIMIT}"))
        limit = request.limit or DEFAULT_LIMIT
        chosen = _filter(request, found)
        with self._memory(request, found, create=False, read=True) as memory:
            text, hits = memory.recall(
                request.query,
                limit,
                filter=chosen,
                max_context_tokens=request.max_context_tokens,
            )
        response = pb.RetrieveResponse(
            context=text, hits=[convert.hit_to_proto(h) for h in hits[:limit]]
        )
        return resources.cut_to_fit(response, self.max_response_bytes)

    def Reset(self, request: pb.ResetRequest, context: CallContext) -> pb.ResetResponse:
        with self._memory(request, create=False) as memory:
            memory.reset()
        return _RESET

    def Delete(self, request: pb.DeleteRequest, context: CallContext) -> pb.DeleteResponse:
        found = request_id_violations(request.request_id)
        chosen = _filter(request, found)
        if not found:
            try:  # checked here too, so that every memory refuses a Delete naming nothing
                deletion(request.ids, chosen)
            except InvalidArgument as error:
                found.extend(convert.violations_of(error, "ids"))
        with self._memory(request, found, create=False) as memory:
            deleted = self._write(
                memory, request, context, lambda: memory.delete(list(request.ids), filter=chosen)
            )
        return pb.DeleteResponse(deleted=deleted)

    def ListMessages(
        self, request: pb.ListMessagesRequest, context: CallContext
    ) -> pb.ListMessagesResponse:
        found: list[FieldViolation] = []
        if request.page_size > MAX_PAGE_SIZE:
            found.append(FieldViolation("page_size", f"must be at most {MAX_PAGE_SIZE}"))
        chosen = _filter(request, found)
        with self._memory(request, found, create=False, read=True) as memory:

            def page(size: int) -> pb.ListMessagesResponse:
                listed = memory.list(filter=chosen, page_size=size, page_token=request.page_token)
                return pb.ListMessagesResponse(
                    messages=[convert.stored_to_proto(stored) for stored in listed.messages],
                    next_page_token=listed.next_page_token,
                )

            return resources.fit_page(
                page,
                request.page_size or DEFAULT_PAGE_SIZE,
                lambda answer: answer.messages,
                self.max_response_bytes,
                _message_too_large,
            )

    def ListNamespaces(
        self, request: pb.ListNamespacesRequest, context: CallContext
    ) -> pb.ListNamespacesResponse:
        if request.page_size > MAX_PAGE_SIZE:
            raise InvalidRequest([FieldViolation("page_size", f"must be at most {MAX_PAGE_SIZE}")])
        readable = auth.readable(context)  # None: a server without tokens
        size = request.page_size or DEFAULT_NAMESPACE_PAGE
        after = catalog.after_token(request.page_token, request.prefix)
        page: list[catalog.Held] = []
        while len(page) <= size:  # one more than the page: whether another page follows
            found = catalog.held(self.namespaces, request.prefix, after, size + 1)
            if not found:
                break
            after = found[-1].name
            page += [held for held in found if readable is None or readable(held.name)]
        shown, more = page[:size], len(page) > size
        return pb.ListNamespacesResponse(
            namespaces=[pb.NamespaceInfo(name=held.name, memory=held.memory) for held in shown],
            next_page_token=catalog.page_token(request.prefix, shown[-1].name) if more else "",
        )

    def DeleteNamespace(
        self, request: pb.DeleteNamespaceRequest, context: CallContext
    ) -> pb.DeleteNamespaceResponse:
        violations = namespace_violations(request.namespace)
        if violations:
            raise InvalidRequest(violations)
        deleted = catalog.forget(self.namespaces, request.namespace)
        for receipts in (self._receipts, self._episode_receipts):
            if receipts is not None:
                receipts.forget(request.namespace)
        return pb.DeleteNamespaceResponse(deleted=deleted)

    @contextmanager
    def _memory(
        self,
        request: NamespacedRequest,
        found: list[FieldViolation] | None = None,
        *,
        create: bool = True,
        read: bool = False,
    ) -> Iterator[BaseMemory]:
        """The memory of the request's namespace, held for this call alone (`read`: a call that
        only reads, which shares a thread-safe memory with other reads), once the request is
        known to be well formed: InvalidRequest with `found` (what the handler found wrong) and
        whatever is wrong with the namespace and memory names, before anything is opened.
        Without `create`, a namespace that does not exist is an empty memory, and nothing of it
        is opened or made (for calls that only read or forget)."""
        violations = (
            namespace_violations(request.namespace)
            + self.namespaces.memory_violations(request.memory)
            + (found or [])
        )
        if violations:
            more, unchecked = (
                (found.more, found.unchecked) if isinstance(found, Violations) else (0, False)
            )
            raise InvalidRequest(violations, more=more, unchecked=unchecked)
        with self.namespaces.using(request.namespace, request.memory, create=create) as opened:
            if opened is None:
                yield NullMemory()
                return
            with opened.held(read=read) as memory:
                yield memory

    def _write(
        self,
        memory: BaseMemory,
        request: Any,
        context: CallContext,
        write: Callable[[], W],
    ) -> W:
        """Run `write` (which returns the ids it stored, or how many it deleted) so that it
        commits only while its caller still waits, and at most once per request id
        (himga.service.receipts)."""
        wanted = functools.partial(self.calls.still_wanted, context)
        return write_once(memory, request.namespace, request, wanted, self._receipts, write)


_RESET = pb.ResetResponse()


def _message_too_large(stored: Any, room: int) -> Exception:
    """The error of a stored message too large for any ListMessages answer."""
    return resources.too_big(
        f"message {stored.message.turn_id!r}",
        stored.ByteSize(),
        room,
        "ListMessages",
        "delete it (Delete with its id), or read the namespace from its store "
        "(`himga export --data-dir DIR` or `--database URL`)",
    )


def _filter(
    request: pb.RetrieveRequest | pb.DeleteRequest | pb.ListMessagesRequest,
    found: list[FieldViolation],
) -> MessageFilter | None:
    """The request's filter (None when it carries none), or None after adding what is wrong
    with it to `found`."""
    if not request.HasField("filter"):
        return None
    try:
        return convert.filter_from_proto(request.filter)
    except InvalidArgument as error:
        found.extend(convert.violations_of(error, "filter"))
        return None


class _Sessions:
    """Sessions converted once per call: a batch's items mostly share a few sessions, and
    validating each copy again was half the cost of a batch. Items then share one Session
    object, as in-process callers' messages of one session do."""

    def __init__(self) -> None:
        self._done: dict[bytes, Session] = {}

    def parse(self, session: pb.Session, path: str) -> Session:
        key = session.SerializeToString(deterministic=True)
        done = self._done.get(key)
        if done is None:
            done = self._done[key] = convert.session_from_proto(session, path, with_messages=False)
        return done


def _item(
    request: pb.IngestRequest | pb.IngestItem,
    path: str,
    found: list[FieldViolation],
    sessions: _Sessions,
) -> tuple[Message, Session] | None:
    """The message and session of an Ingest or of one batch item, or None after adding what is
    wrong with them to `found`."""
    message = _required(request, "message", path, found, convert.message_from_proto)
    session = _required(request, "session", path, found, sessions.parse)
    if message is None or session is None:
        return None
    return message, session


def _required(
    request: Any,
    name: str,
    path: str,
    found: list[FieldViolation],
    parse: Callable[[Any, str], T],
) -> T | None:
    if not request.HasField(name):
        found.append(FieldViolation(path + name, "required"))
        return None
    try:
        return parse(getattr(request, name), path + name)
    except InvalidRequest as error:
        found.extend(convert.violations_of(error, path + name))
        return None
