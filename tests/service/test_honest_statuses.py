"""A write's status tells the truth: a write whose caller has gone (cancelled, deadline passed)
or that a stopping server abandons is rolled back, so a caller told it failed finds nothing
stored; and a write retried with the same request_id is stored once."""

import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.conversation import Message, Session
from himga.kinds import Keeps, Kind, NoOptions
from himga.memory import commit, registry
from himga.memory.sqlite import SQLiteKeywordMemory, namespace_path
from himga.service import create_server
from himga.status import field_violations, reason_of
from tests.service.conftest import ingest_request

GATED = "test-gated-sqlite"
HANG_SECONDS = 60  # protection against a hang only


class Gate:
    """Holds a gated write until its call is no longer wanted; says when it has ended."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.ended = threading.Event()
        self.outcome: BaseException | None = None


GATES: dict[str, Gate] = {}


class GatedSQLite(SQLiteKeywordMemory):
    """SQLite, except that a batch whose first message's content names a gate waits, holding
    its write, until the server no longer wants it; then it writes (and must roll back)."""

    @classmethod
    def for_namespace(
        cls, namespace: str, data_dir: Path | None, options: NoOptions
    ) -> "GatedSQLite":
        assert data_dir is not None
        return cls(namespace_path(data_dir, namespace))

    def store(self, items: Iterable[tuple[Message, Session]]) -> list[str]:
        items = list(items)
        gate = GATES.get(items[0][0].content)
        if gate is None:
            return super().store(items)
        gate.started.set()
        deadline = time.monotonic() + HANG_SECONDS
        try:
            while time.monotonic() < deadline:
                try:
                    commit.still_wanted()
                except Exception:
                    break
                time.sleep(0.01)
            return super().store(items)
        except BaseException as error:
            gate.outcome = error
            raise
        finally:
            gate.ended.set()

    def delete(self, ids: Iterable[str] = (), *, filter: object = None) -> int:
        """A delete naming a gate among its ids waits as a gated batch does, then deletes."""
        ids = list(ids)
        gate = next((GATES[i] for i in ids if i in GATES), None)
        if gate is None:
            return super().delete(ids, filter=filter)  # type: ignore[arg-type]
        gate.started.set()
        deadline = time.monotonic() + HANG_SECONDS
        try:
            while time.monotonic() < deadline:
                try:
                    commit.still_wanted()
                except Exception:
                    break
                time.sleep(0.01)
            return super().delete(ids, filter=filter)  # type: ignore[arg-type]
        except BaseException as error:
            gate.outcome = error
            raise
        finally:
            gate.ended.set()


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[str, object]]:
    registry.register(
        GATED, Kind(__name__, "GatedSQLite.for_namespace", Keeps.DATA_DIRECTORY, shared=False)
    )
    server, port = create_server("127.0.0.1:0", memory=GATED, data_dir=tmp_path)
    try:
        yield f"127.0.0.1:{port}", server
    finally:
        server.stop(None).wait()
        registry.unregister(GATED)


def new_gate() -> tuple[str, Gate]:
    name = f"gate-{uuid.uuid4().hex}"
    GATES[name] = Gate()
    return name, GATES[name]


def stored(stub: memory_pb2_grpc.MemoryServiceStub, namespace: str, word: str) -> list[str]:
    response = stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query=word), timeout=30)
    return [hit.content for hit in response.hits]


def test_a_cancelled_write_is_rolled_back(gated: tuple[str, object]) -> None:
    target, _ = gated
    name, gate = new_gate()
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        stub.Ingest(ingest_request("cancelled", "already here"))
        call = stub.Ingest.future(ingest_request("cancelled", name))
        assert gate.started.wait(HANG_SECONDS)
        call.cancel()
        assert gate.ended.wait(HANG_SECONDS)
        assert isinstance(gate.outcome, commit.CallerGone)
        assert stored(stub, "cancelled", name) == []
        assert stored(stub, "cancelled", "already") == ["already here"]


# How a call whose deadline passes ends for its client: the client's own timer says
# DEADLINE_EXCEEDED, but on a loaded machine the server's answer for a caller gone (CANCELLED,
# reason CALLER_GONE) may reach it first. Either way nothing is committed, which is what counts.
PAST_DEADLINE = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)


def test_a_write_past_its_deadline_is_rolled_back(gated: tuple[str, object]) -> None:
    target, _ = gated
    name, gate = new_gate()
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Ingest(ingest_request("late", name), timeout=1.0)
        assert caught.value.code() in PAST_DEADLINE
        # On a loaded machine the deadline may pass before the call reaches the memory at all.
        if gate.started.wait(5):
            assert gate.ended.wait(HANG_SECONDS)
            assert isinstance(gate.outcome, commit.CallerGone)
        assert stored(stub, "late", name) == []


def test_a_stopping_server_rolls_back_what_it_abandons_and_says_so(
    gated: tuple[str, object], tmp_path: Path
) -> None:
    target, server = gated
    name, gate = new_gate()
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        call = stub.Ingest.future(ingest_request("stopping", name))
        assert gate.started.wait(HANG_SECONDS)
        stopped = server.stop(0)  # type: ignore[attr-defined]
        with pytest.raises(grpc.RpcError) as caught:
            call.result(timeout=HANG_SECONDS)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert reason_of(caught.value) == "SERVER_STOPPING"
        assert "nothing stored" in caught.value.details()
        assert stopped.wait(HANG_SECONDS)
    # Nothing of it is in the store.
    with SQLiteKeywordMemory(namespace_path(tmp_path, "stopping")) as memory:
        assert memory.search(name) == []


def test_a_stopping_server_refuses_new_calls_as_stopping(tmp_path: Path) -> None:
    server, port = create_server("127.0.0.1:0", memory="keyword")
    server.calls.close()  # what stop does first
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Ingest(ingest_request("n", "x"), timeout=HANG_SECONDS)
    server.stop(None).wait()
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert reason_of(caught.value) == "SERVER_STOPPING"


def batch(namespace: str, words: list[str], request_id: str) -> pb.IngestBatchRequest:
    return pb.IngestBatchRequest(
        namespace=namespace,
        request_id=request_id,
        items=[
            pb.IngestItem(
                message=pb.Message(role="u", content=word), session=pb.Session(session_id="s")
            )
            for word in words
        ],
    )


@pytest.mark.parametrize("memory", ["sqlite", "keyword"])
def test_a_retry_with_the_same_request_id_is_stored_once(memory: str, tmp_path: Path) -> None:
    server, port = create_server("127.0.0.1:0", memory=memory, data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            first = stub.IngestBatch(batch("n", ["plum", "plum pie"], "r-1"))
            again = stub.IngestBatch(batch("n", ["plum", "plum pie"], "r-1"))
            assert first.ingested == again.ingested == 2
            stub.Ingest(ingest_request("n", "plum jam", request_id="r-2"))
            stub.Ingest(ingest_request("n", "plum jam", request_id="r-2"))
            assert sorted(stored(stub, "n", "plum")) == ["plum", "plum jam", "plum pie"]
            # Without an id, a write sent twice is two writes.
            stub.IngestBatch(batch("m", ["tart"], ""))
            stub.IngestBatch(batch("m", ["tart"], ""))
            assert stored(stub, "m", "tart") == ["tart", "tart"]
    finally:
        server.stop(None).wait()


def test_a_request_id_is_kept_across_a_restart(tmp_path: Path) -> None:
    answers = []
    for _ in range(2):
        server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                answers.append(stub.IngestBatch(batch("n", ["fig", "fig roll"], "r-9")).ingested)
                found = stored(stub, "n", "fig")
        finally:
            server.stop(None).wait()
    assert answers == [2, 2]
    assert sorted(found) == ["fig", "fig roll"]


def test_the_same_request_id_for_another_write_is_invalid(tmp_path: Path) -> None:
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.IngestBatch(batch("n", ["kiwi"], "r-1"))
            with pytest.raises(grpc.RpcError) as caught:
                stub.IngestBatch(batch("n", ["lime"], "r-1"))
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert [v.field for v in field_violations(caught.value)] == ["request_id"]
            assert stored(stub, "n", "lime") == []
            # Ids are per namespace.
            assert stub.IngestBatch(batch("m", ["lime"], "r-1")).ingested == 1
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ingest(ingest_request("n", "x", request_id="r" * 129))
            assert [v.field for v in field_violations(caught.value)] == ["request_id"]
    finally:
        server.stop(None).wait()


def test_a_rolled_back_write_leaves_no_receipt(gated: tuple[str, object]) -> None:
    target, _ = gated
    name, gate = new_gate()
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        call = stub.IngestBatch.future(batch("retried", [name], "r-1"))
        assert gate.started.wait(HANG_SECONDS)
        call.cancel()
        assert gate.ended.wait(HANG_SECONDS)
        del GATES[name]  # the retry goes through
        assert stub.IngestBatch(batch("retried", [name], "r-1")).ingested == 1
        assert stored(stub, "retried", name) == [name]


def test_a_cancelled_delete_is_rolled_back(gated: tuple[str, object]) -> None:
    target, _ = gated
    name, gate = new_gate()
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        kept = stub.Ingest(ingest_request("undeleted", "still here")).id
        call = stub.Delete.future(pb.DeleteRequest(namespace="undeleted", ids=[kept, name]))
        assert gate.started.wait(HANG_SECONDS)
        call.cancel()
        assert gate.ended.wait(HANG_SECONDS)
        assert isinstance(gate.outcome, commit.CallerGone)
        assert stored(stub, "undeleted", "still") == ["still here"]


def test_a_delete_past_its_deadline_is_rolled_back(gated: tuple[str, object]) -> None:
    target, _ = gated
    name, gate = new_gate()
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        kept = stub.Ingest(ingest_request("late-delete", "still here")).id
        with pytest.raises(grpc.RpcError) as caught:
            stub.Delete(pb.DeleteRequest(namespace="late-delete", ids=[kept, name]), timeout=1.0)
        assert caught.value.code() in PAST_DEADLINE
        if gate.started.wait(5):  # see test_a_write_past_its_deadline_is_rolled_back
            assert gate.ended.wait(HANG_SECONDS)
            assert isinstance(gate.outcome, commit.CallerGone)
        assert stored(stub, "late-delete", "still") == ["still here"]


def listed(stub: memory_pb2_grpc.MemoryServiceStub, prefix: str) -> list[str]:
    response = stub.ListNamespaces(pb.ListNamespacesRequest(prefix=prefix), timeout=30)
    return [namespace.name for namespace in response.namespaces]


def ended(server: object) -> None:
    """Wait until the server's calls have let their namespaces go (a cancelled call's client
    returns before its handler has: this looks under the opener's lock, which a call lets its
    namespace go under)."""
    namespaces = server.namespaces  # type: ignore[attr-defined]
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        with namespaces._opening:
            if not any(opened.users for opened in namespaces._open.values()):
                return
        assert time.monotonic() < deadline
        time.sleep(0.01)


@contextmanager
def cancelled_write(
    stub: memory_pb2_grpc.MemoryServiceStub, namespace: str, server: object
) -> Iterator[None]:
    """A gated write into `namespace`, holding its write while the block runs, then cancelled:
    rolled back, and every call of the server ended."""
    name, gate = new_gate()
    call = stub.Ingest.future(ingest_request(namespace, name))
    assert gate.started.wait(HANG_SECONDS)
    yield
    call.cancel()
    assert gate.ended.wait(HANG_SECONDS)
    assert isinstance(gate.outcome, commit.CallerGone)
    ended(server)


def test_a_new_namespace_whose_first_write_is_rolled_back_is_not_listed(
    gated: tuple[str, object], tmp_path: Path
) -> None:
    target, server = gated
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        with cancelled_write(stub, "never-kept", server):
            # while its first write runs, nothing is stored: not listed (as over a database)
            assert listed(stub, "never-") == []
        assert listed(stub, "never-") == []
        assert list((tmp_path / "namespaces").glob("never-kept-*.memory")) == []  # no record
        stub.Ingest(ingest_request("never-kept", "kept now"))  # its next write makes it again
        assert listed(stub, "never-") == ["never-kept"]
        assert stored(stub, "never-kept", "kept") == ["kept now"]


def test_a_new_namespace_is_kept_by_a_write_beside_its_rolled_back_first(
    gated: tuple[str, object],
) -> None:
    target, server = gated
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        with cancelled_write(stub, "beside", server):
            second = stub.Ingest.future(ingest_request("beside", "second write"))  # waits
        second.result(timeout=HANG_SECONDS)
        assert listed(stub, "beside") == ["beside"]
        assert stored(stub, "beside", "second") == ["second write"]


def test_a_namespace_that_held_something_stays_listed_when_a_write_is_rolled_back(
    gated: tuple[str, object],
) -> None:
    target, server = gated
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        kept = stub.Ingest(ingest_request("emptied", "soon gone")).id
        assert stub.Delete(pb.DeleteRequest(namespace="emptied", ids=[kept])).deleted == 1
        with cancelled_write(stub, "emptied", server):
            pass
        assert listed(stub, "emptied") == ["emptied"]  # written once: held, though empty now
