"""The MemoryService servicer: checks a request, converts it, and hands it to its namespace's
memory. It holds no memory logic; the memories know nothing of gRPC."""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.conversation import Message, Session
from himga.memory.base import DEFAULT_LIMIT, BaseMemory
from himga.memory.null import NullMemory
from himga.service import convert, fairness, resources
from himga.service.errors import FieldViolation, InvalidRequest, abort
from himga.service.lifecycle import Calls
from himga.service.namespaces import Namespaces, namespace_violations
from himga.service.receipts import InProcessReceipts, request_id_violations, write_once

MAX_LIMIT = 1000
"""The most hits one Retrieve may ask for (the proto documents it)."""

T = TypeVar("T")
S = TypeVar("S")
Req = TypeVar("Req")
Resp = TypeVar("Resp")


class NamespacedRequest(Protocol):
    """What every request has: the namespace it is for, and the memory it names."""

    @property
    def namespace(self) -> str: ...

    @property
    def memory(self) -> str: ...


def rpc(handler: Callable[[S, Req, grpc.ServicerContext], Resp]) -> Callable[..., Resp]:
    """The one path of every RPC: run `handler`, and end the call with the status of whatever it
    raises (`himga.service.errors.abort`). A handler only checks, calls the memory and answers."""

    @functools.wraps(handler)
    def serve(self: S, request: Req, context: grpc.ServicerContext) -> Resp:
        try:
            return handler(self, request, context)
        except Exception as error:
            abort(context, resources.classify(error, getattr(self, "store", None)))

    return serve


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    """Serves MemoryService over the namespaces of one server."""

    def __init__(
        self,
        namespaces: Namespaces,
        calls: Calls | None = None,
        max_response_bytes: int | None = None,
        store: resources.StoreHealth | None = None,
    ) -> None:
        self.namespaces = namespaces
        self.calls = calls or Calls()
        self.max_response_bytes = max_response_bytes
        self.store = store
        self._receipts = InProcessReceipts()

    @rpc
    def Ingest(self, request: pb.IngestRequest, context: grpc.ServicerContext) -> pb.IngestResponse:
        found = request_id_violations(request.request_id)
        item = _item(request, "", found, _Sessions())
        with self._memory(request, found) as memory:
            assert item is not None  # no violation found: the message and session were read
            self._write(memory, request, context, lambda: _ingest_one(memory, item))
        return _INGESTED

    @rpc
    def IngestBatch(
        self, request: pb.IngestBatchRequest, context: grpc.ServicerContext
    ) -> pb.IngestBatchResponse:
        found = request_id_violations(request.request_id)
        sessions = _Sessions()
        with fairness.large_batch(len(request.items)):
            items = [
                _item(it, f"items[{i}].", found, sessions) for i, it in enumerate(request.items)
            ]
            with self._memory(request, found) as memory:
                count = self._write(
                    memory, request, context, lambda: memory.ingest_many(filter(None, items))
                )
        return pb.IngestBatchResponse(ingested=count)

    @rpc
    def Retrieve(
        self, request: pb.RetrieveRequest, context: grpc.ServicerContext
    ) -> pb.RetrieveResponse:
        found = []
        if request.limit > MAX_LIMIT:
            found.append(FieldViolation("limit", f"must be at most {MAX_LIMIT}"))
        limit = request.limit or DEFAULT_LIMIT
        with self._memory(request, found, create=False) as memory:
            text, hits = memory.recall(request.query, limit)
        response = pb.RetrieveResponse(
            context=text, hits=[convert.hit_to_proto(h) for h in hits[:limit]]
        )
        return resources.cut_to_fit(response, self.max_response_bytes)

    @rpc
    def Reset(self, request: pb.ResetRequest, context: grpc.ServicerContext) -> pb.ResetResponse:
        with self._memory(request, create=False) as memory:
            memory.reset()
        return _RESET

    @contextmanager
    def _memory(
        self,
        request: NamespacedRequest,
        found: list[FieldViolation] | None = None,
        *,
        create: bool = True,
    ) -> Iterator[BaseMemory]:
        """The memory of the request's namespace, held for this call alone, once the request is
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
            raise InvalidRequest(violations)
        with self.namespaces.using(request.namespace, request.memory, create=create) as opened:
            if opened is None:
                yield NullMemory()
                return
            with opened.lock:
                yield opened.memory

    def _write(
        self,
        memory: BaseMemory,
        request: Any,
        context: grpc.ServicerContext,
        write: Callable[[], int],
    ) -> int:
        """Run `write` so that it commits only while its caller still waits, and at most once
        per request id (himga.service.receipts)."""
        wanted = functools.partial(self.calls.still_wanted, context)
        return write_once(memory, request.namespace, request, wanted, self._receipts, write)


def _ingest_one(memory: BaseMemory, item: tuple[Message, Session]) -> int:
    memory.ingest(*item)
    return 1


_INGESTED = pb.IngestResponse()
_RESET = pb.ResetResponse()


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
        found.extend(error.violations)
        return None
