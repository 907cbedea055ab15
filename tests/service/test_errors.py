"""Every malformed request the issue lists gets its status code, with BadRequest field
violations naming the fields, stores nothing, and leaves the server serving the next call."""

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.memory import SQLiteKeywordMemory
from himga.memory.sqlite import namespace_path
from himga.memory.sqlite_schema import FORMAT
from himga.service import create_server
from himga.service.errors import field_violations, reason_of
from tests.service.conftest import FAILING, LISTING, ingest_request

Stub = memory_pb2_grpc.MemoryServiceStub

# (method, request for a namespace, the fields the violations must name)
BAD_REQUESTS: dict[str, tuple[str, Callable[[str], Any], set[str]]] = {
    "no message": (
        "Ingest",
        lambda ns: pb.IngestRequest(namespace=ns, session=pb.Session(session_id="s")),
        {"message"},
    ),
    "empty role": (
        "Ingest",
        lambda ns: ingest_request(ns, "x", message=pb.Message(content="x")),
        {"message.role"},
    ),
    "no session": (
        "Ingest",
        lambda ns: pb.IngestRequest(namespace=ns, message=pb.Message(role="u")),
        {"session"},
    ),
    "empty session_id": (
        "Ingest",
        lambda ns: ingest_request(ns, "x", session=pb.Session()),
        {"session.session_id"},
    ),
    "missing namespace": ("Ingest", lambda ns: ingest_request("", "x"), {"namespace"}),
    "namespace with a space": ("Ingest", lambda ns: ingest_request("agent 7", "x"), {"namespace"}),
    "namespace with a slash": ("Reset", lambda ns: pb.ResetRequest(namespace="a/b"), {"namespace"}),
    "namespace of 129 characters": (
        "Retrieve",
        lambda ns: pb.RetrieveRequest(namespace="n" * 129),
        {"namespace"},
    ),
    "non-ASCII namespace": (
        "Retrieve",
        lambda ns: pb.RetrieveRequest(namespace="café"),
        {"namespace"},
    ),
    "unknown memory name": (
        "Ingest",
        lambda ns: ingest_request(ns, "x", memory="no-such-memory"),
        {"memory"},
    ),
    "unknown memory on retrieve": (
        "Retrieve",
        lambda ns: pb.RetrieveRequest(namespace=ns, memory="nope"),
        {"memory"},
    ),
    "limit over 1000": (
        "Retrieve",
        lambda ns: pb.RetrieveRequest(namespace=ns, query="x", limit=1001),
        {"limit"},
    ),
    "every problem at once": (
        "Ingest",
        lambda ns: pb.IngestRequest(namespace="", message=pb.Message(), memory="nope"),
        {"namespace", "memory", "message.role", "session"},
    ),
    "metadata key too long": (
        "Ingest",
        lambda ns: ingest_request(ns, "x", message=pb.Message(role="u", metadata={"k" * 65: "v"})),
        {"message.metadata." + "k" * 65},
    ),
    "metadata value too long": (
        "Ingest",
        lambda ns: ingest_request(
            ns, "x", message=pb.Message(role="u", metadata={"n": "v" * 1025})
        ),
        {"message.metadata.n"},
    ),
    "too many metadata pairs": (
        "Ingest",
        lambda ns: ingest_request(
            ns, "x", message=pb.Message(role="u", metadata={f"k{i}": "" for i in range(33)})
        ),
        {"message.metadata"},
    ),
    "a session's timestamp before year 1": (
        "Ingest",
        lambda ns: ingest_request(
            ns, "x", session=pb.Session(session_id="s", timestamp=Timestamp(seconds=-(2**60)))
        ),
        {"session.timestamp"},
    ),
    "a filter's time out of range": (
        "Delete",
        lambda ns: pb.DeleteRequest(
            namespace=ns, filter=pb.MessageFilter(after=Timestamp(seconds=1, nanos=2 * 10**9))
        ),
        {"filter.after"},
    ),
    "delete naming nothing": ("Delete", lambda ns: pb.DeleteRequest(namespace=ns), {"ids"}),
    "delete with an empty filter": (
        "Delete",
        lambda ns: pb.DeleteRequest(namespace=ns, filter=pb.MessageFilter()),
        {"ids"},
    ),
    "a time range that ends before it starts": (
        "Retrieve",
        lambda ns: pb.RetrieveRequest(
            namespace=ns,
            query="x",
            filter=pb.MessageFilter(after=Timestamp(seconds=10), before=Timestamp(seconds=5)),
        ),
        {"filter.before"},
    ),
    "page_size over 1000": (
        "ListMessages",
        lambda ns: pb.ListMessagesRequest(namespace=ns, page_size=1001),
        {"page_size"},
    ),
    "batch item without role": (
        "IngestBatch",
        lambda ns: pb.IngestBatchRequest(
            namespace=ns,
            items=[
                pb.IngestItem(
                    message=pb.Message(role="u", content="first"),
                    session=pb.Session(session_id="s"),
                ),
                pb.IngestItem(
                    message=pb.Message(content="second"), session=pb.Session(session_id="s")
                ),
                pb.IngestItem(message=pb.Message(role="u", content="third")),
            ],
        ),
        {"items[1].message.role", "items[2].session"},
    ),
}


def violations(error: grpc.RpcError) -> set[str]:
    """The fields named by the BadRequest details of a failed call, which must also carry the
    ErrorInfo reason of a bad request."""
    assert reason_of(error) == "INVALID_REQUEST"
    found = field_violations(error)
    assert found and all(v.description for v in found)
    return {v.field for v in found}


def assert_still_serving(stub: Stub) -> None:
    """A good Ingest then Retrieve on a fresh namespace works."""
    namespace = f"after-{uuid.uuid4().hex}"
    stub.Ingest(ingest_request(namespace, "still serving"))
    assert stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="still")).context == (
        "Caroline: still serving"
    )


@pytest.mark.parametrize("case", BAD_REQUESTS)
def test_bad_request_is_invalid_argument_naming_the_fields(stub: Stub, case: str) -> None:
    method, make, fields = BAD_REQUESTS[case]
    namespace = f"bad-{uuid.uuid4().hex}"
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub, method)(make(namespace))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert violations(caught.value) == fields
    for field in fields:
        assert field in caught.value.details()
    # Nothing of it was stored, and the server serves the next call.
    assert stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="first")).hits == []
    assert_still_serving(stub)


def test_failed_batch_stores_nothing(stub: Stub) -> None:
    namespace = f"batch-{uuid.uuid4().hex}"
    good = pb.IngestItem(
        message=pb.Message(role="u", content="alpha"), session=pb.Session(session_id="s")
    )
    bad = pb.IngestItem(
        message=pb.Message(role="", content="alpha"), session=pb.Session(session_id="s")
    )
    with pytest.raises(grpc.RpcError):
        stub.IngestBatch(pb.IngestBatchRequest(namespace=namespace, items=[good, good, bad]))
    assert stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="alpha")).hits == []
    response = stub.IngestBatch(pb.IngestBatchRequest(namespace=namespace, items=[good, good]))
    assert response.ingested == 2
    assert len(stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="alpha")).hits) == 2


def test_other_memory_for_an_open_namespace_is_failed_precondition(stub: Stub) -> None:
    namespace = f"mismatch-{uuid.uuid4().hex}"
    stub.Ingest(ingest_request(namespace, "kept"))
    with pytest.raises(grpc.RpcError) as caught:
        stub.Ingest(ingest_request(namespace, "x", memory="null"))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert LISTING in caught.value.details()
    # Naming the namespace's own memory is fine, and what it holds is untouched.
    stub.Ingest(ingest_request(namespace, "kept too", memory=LISTING))
    assert len(stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="kept")).hits) == 2
    assert_still_serving(stub)


def test_oversized_request_is_resource_exhausted(stub: Stub) -> None:
    namespace = f"big-{uuid.uuid4().hex}"
    huge = "x" * (16 * 1024 * 1024 + 1)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Ingest(ingest_request(namespace, huge))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="x")).hits == []
    assert_still_serving(stub)


def test_an_error_inside_a_memory_is_internal_and_keeps_its_message_private(stub: Stub) -> None:
    namespace = f"broken-{uuid.uuid4().hex}"
    with pytest.raises(grpc.RpcError) as caught:
        stub.Ingest(ingest_request(namespace, "x", memory=FAILING))
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "secret" not in caught.value.details()
    assert_still_serving(stub)


def test_a_namespace_stored_by_a_newer_himga_is_failed_precondition(tmp_path: Path) -> None:
    namespace = "kept-by-a-newer-himga"
    newer = namespace_path(tmp_path, namespace)
    SQLiteKeywordMemory(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE himga_meta SET value = ? WHERE key = 'format'", (str(FORMAT + 1),))
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ingest(ingest_request(namespace, "anything"))
            assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert f"written by a newer himga (store format {FORMAT + 1}" in caught.value.details()
            assert reason_of(caught.value) == "INCOMPATIBLE_STORE"
            assert str(tmp_path) not in caught.value.details()  # no server paths sent
            stub.Ingest(ingest_request("fresh", "still serving"))  # other namespaces work
            hits = stub.Retrieve(pb.RetrieveRequest(namespace="fresh", query="serving")).hits
            assert [hit.content for hit in hits] == ["still serving"]
    finally:
        server.stop(None)


def test_a_namespace_keeps_its_memory_across_a_restart(tmp_path: Path) -> None:
    for restart in range(2):
        server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                if restart == 0:
                    stub.Ingest(ingest_request("agent-7", "kayak trip", memory="keyword"))
                with pytest.raises(grpc.RpcError) as caught:  # the default, sqlite, is another
                    stub.Retrieve(pb.RetrieveRequest(namespace="agent-7", query="kayak"))
                assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
                assert "holds memory 'keyword', not 'sqlite'" in caught.value.details()
                request = pb.RetrieveRequest(namespace="agent-7", query="kayak", memory="keyword")
                found = stub.Retrieve(request).hits  # in process: kept until the restart
                assert [hit.content for hit in found] == (["kayak trip"] if restart == 0 else [])
        finally:
            server.stop(None)


def test_a_call_its_memory_cannot_do_is_refused_as_unsupported(stub: Stub) -> None:
    """ListMemory keeps only the seed's methods: it refuses deletes, listings and filters,
    rather than ignoring them, and still fits its context to a budget."""
    namespace = f"seed-only-{uuid.uuid4().hex}"
    stub.Ingest(ingest_request(namespace, "one two three four five"))
    calls = {
        "Delete": pb.DeleteRequest(namespace=namespace, ids=["D1:1"]),
        "ListMessages": pb.ListMessagesRequest(namespace=namespace),
        "Retrieve": pb.RetrieveRequest(
            namespace=namespace, query="three", filter=pb.MessageFilter(roles=["Caroline"])
        ),
    }
    for method, request in calls.items():
        with pytest.raises(grpc.RpcError) as caught:
            getattr(stub, method)(request)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION, method
        assert reason_of(caught.value) == "UNSUPPORTED", method
    budgeted = pb.RetrieveRequest(namespace=namespace, query="three", max_context_tokens=4)
    assert stub.Retrieve(budgeted).context == "Caroline: one…"
    assert stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="three")).hits
