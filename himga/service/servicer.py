"""The MemoryService servicer: checks a request, converts it, and hands it to its namespace's
memory. It holds no memory logic; the memories know nothing of gRPC."""

from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.schema import Message, Session
from himga.memory.base import DEFAULT_LIMIT
from himga.service import convert
from himga.service.errors import FieldViolation, InvalidRequest, abort
from himga.service.namespaces import Namespaces, namespace_violations

MAX_LIMIT = 1000
"""The most hits one Retrieve may ask for (the proto documents it)."""

T = TypeVar("T")


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    """Serves MemoryService over the namespaces of one server."""

    def __init__(self, namespaces: Namespaces) -> None:
        self.namespaces = namespaces

    def Ingest(self, request: pb.IngestRequest, context: grpc.ServicerContext) -> pb.IngestResponse:
        try:
            found = self._common_violations(request.namespace, request.memory)
            item = _item(request, "", found, _Sessions())
            if found or item is None:
                raise InvalidRequest(found)
            opened = self.namespaces.open(request.namespace, request.memory)
            with opened.lock:
                opened.memory.ingest(*item)
            return _INGESTED
        except Exception as error:
            abort(context, error)

    def IngestBatch(
        self, request: pb.IngestBatchRequest, context: grpc.ServicerContext
    ) -> pb.IngestBatchResponse:
        try:
            found = self._common_violations(request.namespace, request.memory)
            sessions = _Sessions()
            items = [
                _item(it, f"items[{i}].", found, sessions) for i, it in enumerate(request.items)
            ]
            if found:
                raise InvalidRequest(found)
            opened = self.namespaces.open(request.namespace, request.memory)
            with opened.lock:
                count = opened.memory.ingest_many(it for it in items if it is not None)
            return pb.IngestBatchResponse(ingested=count)
        except Exception as error:
            abort(context, error)

    def Retrieve(
        self, request: pb.RetrieveRequest, context: grpc.ServicerContext
    ) -> pb.RetrieveResponse:
        try:
            found = self._common_violations(request.namespace, request.memory)
            if request.limit > MAX_LIMIT:
                found.append(FieldViolation("limit", f"must be at most {MAX_LIMIT}"))
            if found:
                raise InvalidRequest(found)
            limit = request.limit or DEFAULT_LIMIT
            opened = self.namespaces.open(request.namespace, request.memory)
            with opened.lock:
                text, hits = opened.memory.recall(request.query, limit)
            return pb.RetrieveResponse(
                context=text, hits=[convert.hit_to_proto(h) for h in hits[:limit]]
            )
        except Exception as error:
            abort(context, error)

    def Reset(self, request: pb.ResetRequest, context: grpc.ServicerContext) -> pb.ResetResponse:
        try:
            found = self._common_violations(request.namespace, request.memory)
            if found:
                raise InvalidRequest(found)
            opened = self.namespaces.open(request.namespace, request.memory)
            with opened.lock:
                opened.memory.reset()
            return _RESET
        except Exception as error:
            abort(context, error)

    def _common_violations(self, namespace: str, memory: str) -> list[FieldViolation]:
        return namespace_violations(namespace) + self.namespaces.memory_violations(memory)


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
