"""The one opener of namespaces (himga.storage.namespaces), as the server and an embedded
caller use it: a read of a namespace never written creates no file and no row, whichever read
RPC of either service it is; one bound over messages and episodes; a store in use is never
closed; when descriptors run short idle stores are closed to make room, and a call that finds
none to close is RESOURCE_EXHAUSTED; what was closed opens again with all it held."""

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.conversation import Message, Session
from himga.records import TaskContext
from himga.service import convert, create_server
from himga.service.auth import METHOD_RIGHTS
from himga.service.errors import ResourceExhausted
from himga.service.resources import classify
from himga.storage import namespaces as opener
from himga.storage.namespaces import ROOM_DESCRIPTORS, STORE_DESCRIPTORS, NamespaceStores
from himga.storage.postgres import Database
from tests.episodes.helpers import episode

HANG_SECONDS = 60

Stubs = tuple[memory_pb2_grpc.MemoryServiceStub, memory_pb2_grpc.EpisodeServiceStub]

READS: dict[str, Callable[[Stubs, str], object]] = {
    "Retrieve": lambda s, ns: s[0].Retrieve(pb.RetrieveRequest(namespace=ns, query="plum")),
    "ListMessages": lambda s, ns: s[0].ListMessages(pb.ListMessagesRequest(namespace=ns)),
    "ListNamespaces": lambda s, ns: s[0].ListNamespaces(pb.ListNamespacesRequest(prefix=ns)),
    "GetEpisode": lambda s, ns: s[1].GetEpisode(pb.GetEpisodeRequest(namespace=ns, id="ep-1")),
    "ListEpisodes": lambda s, ns: s[1].ListEpisodes(pb.ListEpisodesRequest(namespace=ns)),
    "SearchEpisodes": lambda s, ns: s[1].SearchEpisodes(
        pb.SearchEpisodesRequest(namespace=ns, task=pb.TaskContext(goal="add pagination"))
    ),
}
"""A well-formed call of every method that needs only the right to read."""
FORGETTING: dict[str, Callable[[Stubs, str], object]] = {
    "Reset": lambda s, ns: s[0].Reset(pb.ResetRequest(namespace=ns)),
    "Delete": lambda s, ns: s[0].Delete(pb.DeleteRequest(namespace=ns, ids=["m-1"])),
    "DeleteNamespace": lambda s, ns: s[0].DeleteNamespace(pb.DeleteNamespaceRequest(namespace=ns)),
    "DeleteEpisode": lambda s, ns: s[1].DeleteEpisode(
        pb.DeleteEpisodeRequest(namespace=ns, id="ep-1", request_id=uuid.uuid4().hex)
    ),
}
"""Writes that only forget: of a namespace never written, they make nothing either."""


def test_every_read_method_is_checked() -> None:
    reads = {method.rsplit("/", 1)[1] for method, right in METHOD_RIGHTS.items() if right == "read"}
    assert reads == set(READS)


def call_everything(stubs: Stubs, namespace: str) -> list[str]:
    """Every read and forgetting call on `namespace`; the codes of those that failed."""
    failed = []
    for call in (*READS.values(), *FORGETTING.values()):
        try:
            call(stubs, namespace)
        except grpc.RpcError as error:
            assert isinstance(error, grpc.Call)
            failed.append(error.code().name)
    return failed


def files_under(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*") if not path.is_dir())


def write_both(stubs: Stubs, namespace: str, number: int = 1) -> None:
    stubs[0].Ingest(
        pb.IngestRequest(
            namespace=namespace,
            message=pb.Message(role="u", content=f"plum {number}"),
            session=pb.Session(session_id="s"),
        )
    )
    stubs[1].RecordEpisode(
        pb.RecordEpisodeRequest(namespace=namespace, episode=convert.episode_to_proto(episode(1)))
    )


def test_reads_of_a_namespace_never_written_create_no_file(tmp_path: Path) -> None:
    server, port = create_server("127.0.0.1:0", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stubs = (
                memory_pb2_grpc.MemoryServiceStub(channel),
                memory_pb2_grpc.EpisodeServiceStub(channel),
            )
            write_both(stubs, "written")  # the folders and a namespace exist
            before = files_under(tmp_path)
            assert len(before) > 4  # a record, two databases, their -wal and -shm
            for number in range(20):
                assert call_everything(stubs, f"never-{number}") == ["NOT_FOUND"]  # GetEpisode
            assert files_under(tmp_path) == before
            assert len(server.namespaces) == 2  # the written one's messages and episodes
            assert call_everything(stubs, "written") == ["NOT_FOUND"]  # deleted just now
    finally:
        server.stop(None).wait()


ROWS = "SELECT (SELECT count(*) FROM himga_namespaces), (SELECT count(*) FROM himga_receipts)"


def test_reads_of_a_namespace_never_written_create_no_row(database: Database) -> None:
    server, port = create_server("127.0.0.1:0", database=database)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stubs = (
                memory_pb2_grpc.MemoryServiceStub(channel),
                memory_pb2_grpc.EpisodeServiceStub(channel),
            )
            with database.transaction() as connection:
                before = connection.execute(ROWS).fetchone()
            for number in range(10):
                namespace = f"never-{uuid.uuid4().hex}-{number}"
                assert call_everything(stubs, namespace) == ["NOT_FOUND"]
            with database.transaction() as connection:
                assert connection.execute(ROWS).fetchone() == before
            written = f"written-{uuid.uuid4().hex}"
            write_both(stubs, written)
            with database.transaction() as connection:
                rows = connection.execute(ROWS).fetchone()
            assert rows is not None and before is not None and rows[0] == before[0] + 1
    finally:
        server.stop(None).wait()


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def ingest(stores: NamespaceStores, namespace: str, text: str) -> None:
    with stores.messages(namespace) as opened:
        assert opened is not None
        with opened.lock:
            opened.memory.ingest(Message(role="u", content=text), Session(session_id="s"))


def test_one_bound_over_messages_and_episodes(tmp_path: Path) -> None:
    stores = NamespaceStores(tmp_path, memory="sqlite", episodes="sqlite", max_open=3)
    try:
        ingest(stores, "warm-up", "x")
        start = descriptors()
        for number in range(12):
            ingest(stores, f"ns-{number}", f"fig{number} said")
            with stores.episodes(f"ns-{number}") as store:
                assert store is not None
                store.record(episode(number))
            assert len(stores) <= 3
        assert descriptors() - start <= 3 * 3  # three SQLite stores, not 24
        for number in range(12):  # each opens again with all it held
            with stores.messages(f"ns-{number}", create=False) as opened:
                assert opened is not None
                hits = opened.memory.search(f"fig{number}")
                assert [hit.content for hit in hits] == [f"fig{number} said"]
            with stores.episodes(f"ns-{number}", create=False) as store:
                assert store is not None
                assert store.get(f"ep-{number:04d}").id == f"ep-{number:04d}"
                assert store.search(TaskContext(goal="pagination")).hits
    finally:
        stores.close()


def test_a_store_in_use_is_not_closed_for_the_bound(tmp_path: Path) -> None:
    stores = NamespaceStores(tmp_path, memory="sqlite", episodes="sqlite", max_open=1)
    try:
        with stores.episodes("held") as held:
            assert held is not None
            for number in range(5):
                ingest(stores, f"other-{number}", "x")
            held.record(episode(7))  # still open: it was in use all along
            assert held.get("ep-0007").id == "ep-0007"
        assert len(stores) == 1
    finally:
        stores.close()


def test_short_of_descriptors_idle_stores_make_room_or_the_call_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores = NamespaceStores(tmp_path, memory="sqlite", episodes="sqlite")

    # Room for two open stores, whatever this process holds: short of the room kept beyond
    # them, out of descriptors beyond three.
    def free() -> int:
        return {0: 100, 1: 100, 2: ROOM_DESCRIPTORS - 1}.get(len(stores), STORE_DESCRIPTORS - 1)

    monkeypatch.setattr(opener.exhaustion, "free_descriptors", free)
    try:
        for number in range(6):
            ingest(stores, f"ns-{number}", f"word{number}")
            assert len(stores) <= 2
        with (
            stores.messages("ns-4", create=False),
            stores.episodes("ns-5"),
            stores.messages("ns-3", create=False),  # the third: short of room, but it fits
        ):
            assert len(stores) == 3
            with pytest.raises(OSError) as caught:
                ingest(stores, "one-more", "x")
            assert isinstance(classify(caught.value), ResourceExhausted)
            assert [path for path in files_under(tmp_path) if "one-more" in path.name] == []
        ingest(stores, "one-more", "x")  # the calls ended: room again
        for number in range(6):
            with stores.messages(f"ns-{number}", create=False) as opened:
                assert opened is not None
                assert [hit.content for hit in opened.memory.search(f"word{number}")] == [
                    f"word{number}"
                ]
    finally:
        stores.close()


def test_an_embedded_caller_and_a_server_share_a_data_directory(tmp_path: Path) -> None:
    embedded = NamespaceStores(tmp_path, memory="sqlite", episodes="sqlite")
    try:
        ingest(embedded, "shared", "quince jam")
        with embedded.episodes("shared") as store:
            assert store is not None
            store.record(episode(3))
    finally:
        embedded.close()
    server, port = create_server("127.0.0.1:0", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            hits = memory_pb2_grpc.MemoryServiceStub(channel).Retrieve(
                pb.RetrieveRequest(namespace="shared", query="quince")
            )
            assert [hit.content for hit in hits.hits] == ["quince jam"]
            got = memory_pb2_grpc.EpisodeServiceStub(channel).GetEpisode(
                pb.GetEpisodeRequest(namespace="shared", id="ep-0003")
            )
            assert got.episode.id == "ep-0003"
    finally:
        server.stop(None).wait()


class WriteFailed(Exception):
    """What a write raises here after its namespace was opened (its caller gone, the disk full)."""


@pytest.mark.parametrize("in_directory", [True, False], ids=["data directory", "in process"])
def test_a_namespace_whose_first_write_fails_is_unmade(tmp_path: Path, in_directory: bool) -> None:
    stores = (
        NamespaceStores(tmp_path, memory="sqlite", episodes="sqlite")
        if in_directory
        else NamespaceStores(None, memory="keyword", episodes="inprocess")
    )
    try:
        with stores.episodes("with-episodes") as store:  # its episodes are kept whatever befalls
            assert store is not None
            store.record(episode(2))
        for namespace in ("new", "with-episodes"):
            with pytest.raises(WriteFailed), stores.messages(namespace) as opened:
                assert opened is not None
                raise WriteFailed
            with stores.messages(namespace, create=False) as opened:
                assert opened is None  # no record: as never written
        assert len(stores) == 1  # the episodes
        if in_directory:  # no record (a pending mark without one is not looked at)
            assert list((tmp_path / "namespaces").glob("*.memory")) == []
        with stores.episodes("with-episodes", create=False) as store:
            assert store is not None and store.get("ep-0002").id == "ep-0002"
        ingest(stores, "new", "kept at last")
        with stores.messages("new", create=False) as opened:
            assert opened is not None
            assert [hit.content for hit in opened.memory.search("kept")] == ["kept at last"]
    finally:
        stores.close()


def test_a_namespace_unmade_while_it_is_listed_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing in a data directory finds a namespace's record, which a failed first write (or
    a DeleteNamespace) takes away before the listing reads it: the namespace is left out, and
    the listing answers (it was an internal error, seen by the conformance kit)."""
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    namespaces = Namespaces("sqlite", tmp_path)
    try:
        for namespace in ("kept", "going"):
            ingest(namespaces, namespace, "stored")
        name_of = catalog._name_of

        def unmade_meanwhile(data_dir: Path, stem: str) -> str | None:
            name = name_of(data_dir, stem)
            if name == "going":
                layout.memory_record(data_dir, name).unlink()
            return name

        monkeypatch.setattr(catalog, "_name_of", unmade_meanwhile)
        assert catalog.held(namespaces, "", "") == [catalog.Held("kept", "sqlite")]
    finally:
        namespaces.close()


@pytest.mark.parametrize("in_directory", [True, False], ids=["data directory", "in process"])
def test_a_namespace_whose_first_episode_write_fails_is_unmade(
    tmp_path: Path, in_directory: bool
) -> None:
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    namespaces = (
        Namespaces("sqlite", tmp_path, episodes="sqlite")
        if in_directory
        else Namespaces("keyword", None, episodes="inprocess")
    )
    mark = layout.episodes_unmade(tmp_path, "new")
    try:
        with pytest.raises(WriteFailed), namespaces.episodes("new") as store:
            assert store is not None
            raise WriteFailed
        assert catalog.held(namespaces, "", "") == []  # nothing was stored: as never written
        assert mark.exists() is in_directory  # (in a data directory its empty file stays)
        with namespaces.episodes("new", create=False) as store:
            assert store is None or not store.list().episodes
        with pytest.raises(WriteFailed), namespaces.episodes("new") as store:  # again
            raise WriteFailed
        assert catalog.held(namespaces, "", "") == []
        with namespaces.episodes("new") as store:
            assert store is not None
            store.record(episode(5))
        assert catalog.held(namespaces, "", "") == [catalog.Held("new", "")]
        assert not mark.exists()
        with namespaces.episodes("new") as store:  # emptied: held all the same
            assert store is not None and store.delete("ep-0005")
        with pytest.raises(WriteFailed), namespaces.episodes("new"):
            raise WriteFailed
        assert catalog.held(namespaces, "", "") == [catalog.Held("new", "")]
    finally:
        namespaces.close()


def test_an_episode_stored_by_another_process_as_the_namespace_is_unmade_keeps_it(
    tmp_path: Path,
) -> None:
    """Two openers over one data directory (`himga serve` and `himga mcp --data-dir`): the first
    to open a new namespace's episodes fails its write and marks them unmade while the second,
    which opened them meanwhile, has yet to store the namespace's first episode; the second's
    write then takes the mark away."""
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    first, second = NamespaceStores(tmp_path), NamespaceStores(tmp_path)
    later = Namespaces("sqlite", tmp_path)
    try:
        failing = first.episodes("shared")
        failing.__enter__()
        beside = second.episodes("shared")
        store = beside.__enter__()
        assert store is not None
        assert failing.__exit__(WriteFailed, WriteFailed(), None) is False  # the failure goes on
        assert layout.episodes_unmade(tmp_path, "shared").exists()
        assert catalog.held(later, "", "") == []
        store.record(episode(6))
        beside.__exit__(None, None, None)
        assert not layout.episodes_unmade(tmp_path, "shared").exists()
        assert catalog.held(later, "", "") == [catalog.Held("shared", "")]
    finally:
        for stores in (first, second, later):
            stores.close()


KILLED_DURING_FIRST_WRITE = """
import os, signal, sys
from pathlib import Path
from himga.data.conversation import Message, Session
from himga.storage.namespaces import NamespaceStores
from tests.episodes.helpers import episode

side, stores_it = sys.argv[2], sys.argv[3] == "stored"
stores = NamespaceStores(Path(sys.argv[1]), memory="sqlite", episodes="sqlite")
if side == "messages":
    call = stores.messages("new")  # kept: a call dropped would end, and settle the namespace
    opened = call.__enter__()
    if stores_it:
        with opened.lock:
            opened.memory.ingest(Message(role="u", content="said"), Session(session_id="s"))
else:
    call = stores.episodes("new")
    store = call.__enter__()
    if stores_it:
        store.record(episode(7))
os.kill(os.getpid(), signal.SIGKILL)  # before the call ends: nothing settles it
"""


@pytest.mark.parametrize("side", ["messages", "episodes"])
@pytest.mark.parametrize("stored", [True, False], ids=["stored", "nothing stored"])
def test_a_process_killed_during_a_namespace_first_write_leaves_it_listed_as_it_holds(
    tmp_path: Path, side: str, stored: bool
) -> None:
    """A process (`himga serve`, `himga mcp --data-dir`) killed during a namespace's first write,
    before the call ended (the write committed or not): the next server over the data directory
    lists the namespace if and only if the write stored something, and its next write is listed
    either way (the mark the first write left taken away)."""
    import subprocess
    import sys

    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    killed = subprocess.run(
        [sys.executable, "-c", KILLED_DURING_FIRST_WRITE, str(tmp_path), side,
         "stored" if stored else "nothing"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        timeout=HANG_SECONDS,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr.decode()
    mark = (layout.messages_pending if side == "messages" else layout.episodes_pending)(
        tmp_path, "new"
    )
    assert mark.exists()  # the write that made the namespace's side was under way
    memory = "sqlite" if side == "messages" else ""
    namespaces = Namespaces("sqlite", tmp_path, episodes="sqlite")
    try:
        listed = [catalog.Held("new", memory)] if stored else []
        assert catalog.held(namespaces, "", "") == listed
        assert mark.exists() is not stored  # seen holding something: the mark taken away
        assert catalog.held(namespaces, "", "") == listed  # asked again: the same
        if side == "messages":
            ingest(namespaces, "new", "said again")
        else:
            with namespaces.episodes("new") as store:
                assert store is not None
                store.record(episode(8))
        assert catalog.held(namespaces, "", "") == [catalog.Held("new", memory)]
        assert not mark.exists()
    finally:
        namespaces.close()


def test_a_killed_first_episode_write_after_a_failed_one_is_listed_as_it_holds(
    tmp_path: Path,
) -> None:
    """A first episode write failed (the database marked unmade), then another process stored
    one and was killed before its call ended (marked pending too): the listing looks, and holds
    the namespace, both marks taken away."""
    import subprocess
    import sys

    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    namespaces = Namespaces("sqlite", tmp_path, episodes="sqlite")
    try:
        with pytest.raises(WriteFailed), namespaces.episodes("new"):
            raise WriteFailed
        assert layout.episodes_unmade(tmp_path, "new").exists()
        killed = subprocess.run(
            [sys.executable, "-c", KILLED_DURING_FIRST_WRITE, str(tmp_path), "episodes", "stored"],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            timeout=HANG_SECONDS,
        )
        assert killed.returncode == -9, killed.stderr.decode()
        assert catalog.held(namespaces, "", "") == [catalog.Held("new", "")]
        assert not layout.episodes_unmade(tmp_path, "new").exists()
        assert not layout.episodes_pending(tmp_path, "new").exists()
    finally:
        namespaces.close()


def test_a_first_episode_write_whose_settling_fails_is_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first episode write that stored nothing, whose unmade mark cannot be written (the
    descriptors ran out): its pending mark stays, and the listing, looking, does not hold it."""
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    written = opener.write_private

    def unwritable(path: Path, data: bytes) -> None:
        if path.suffix == ".episodes-unmade":
            raise OSError(24, "Too many open files")
        written(path, data)

    namespaces = Namespaces("sqlite", tmp_path, episodes="sqlite")
    try:
        monkeypatch.setattr(opener, "write_private", unwritable)
        with pytest.raises(OSError, match="Too many"), namespaces.episodes("new"):
            pass  # stores nothing
        monkeypatch.undo()
        assert layout.episodes_pending(tmp_path, "new").exists()
        assert catalog.held(namespaces, "", "") == []
    finally:
        namespaces.close()


def test_a_read_of_a_namespace_deleted_since_its_look_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process deletes a namespace between a read's look for its record and its open:
    the read finds nothing and records nothing; a listing's look into a pending episode store
    so deleted (its open makes the database again) marks that database unmade."""
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    namespaces = Namespaces("sqlite", tmp_path, episodes="sqlite")
    try:
        monkeypatch.setattr(NamespaceStores, "_has_messages", lambda self, namespace: True)
        with namespaces.messages("gone", create=False) as opened:
            assert opened is None
        assert list((tmp_path / "namespaces").glob("gone-*")) == []
        monkeypatch.undo()

        with namespaces.episodes("gone") as store:  # made, then a killed write's mark forged
            assert store is not None
        layout.episodes_unmade(tmp_path, "gone").unlink()
        opener.write_private(layout.episodes_pending(tmp_path, "gone"), b"")
        namespaces.close()
        has_episodes = NamespaceStores._has_episodes

        def deleted_after_the_look(self: NamespaceStores, namespace: str) -> bool:
            found = has_episodes(self, namespace)
            for path in (tmp_path / "namespaces").glob("gone-*"):
                path.unlink()
            layout.episodes_database(tmp_path, namespace).unlink()
            return found

        monkeypatch.setattr(NamespaceStores, "_has_episodes", deleted_after_the_look)
        assert catalog.held(namespaces, "", "") == []
        monkeypatch.undo()
        assert layout.episodes_unmade(tmp_path, "gone").exists()
        assert catalog.held(namespaces, "", "") == []
    finally:
        namespaces.close()


def test_a_first_write_begun_as_another_failed_one_is_unmade_keeps_its_pending_mark(
    tmp_path: Path,
) -> None:
    """A process's first write fails and its settling takes the record away; another process's
    first write begins right then, finds the pending mark there (and makes none of its own),
    records the namespace, and is killed before it stores anything: the mark is still there,
    so the listing does not hold the namespace empty."""
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    first, second = NamespaceStores(tmp_path), NamespaceStores(tmp_path)
    later = Namespaces("sqlite", tmp_path)
    begun: list[object] = []
    unrecord = first._unrecord

    def then_the_second_begins(namespace: str) -> None:
        unrecord(namespace)
        call = second.messages(namespace)  # kept: dropped, the call would end and settle
        begun.extend([call, call.__enter__()])

    try:
        failing = first.messages("shared")
        failing.__enter__()
        first._unrecord = then_the_second_begins  # type: ignore[method-assign]
        assert failing.__exit__(WriteFailed, WriteFailed(), None) is False
        assert begun and layout.memory_record(tmp_path, "shared").exists()  # the second's
        assert layout.messages_pending(tmp_path, "shared").exists()
        assert catalog.held(later, "", "") == []  # the second "killed": nothing stored
    finally:
        for stores in (first, second, later):
            stores.close()


def test_a_read_whose_record_goes_before_it_is_read_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read finds a namespace's record, which another process's failed first write (or a
    delete) takes away before the read reads it: the read finds nothing and writes no record
    back (which would list the namespace empty)."""
    from himga.storage import layout

    stores = NamespaceStores(tmp_path)
    try:
        ingest(stores, "gone", "said")
        stores.close()
        record = layout.memory_record(tmp_path, "gone")
        missing = NamespaceStores._record_missing

        def taken_after_the_look(self: NamespaceStores, namespace: str) -> bool:
            found = missing(self, namespace)
            record.unlink()
            return found

        monkeypatch.setattr(NamespaceStores, "_record_missing", taken_after_the_look)
        with stores.messages("gone", create=False) as opened:
            assert opened is None
        assert not record.exists()
    finally:
        stores.close()


def test_of_two_first_writes_the_one_that_stores_keeps_the_record(tmp_path: Path) -> None:
    """Two processes find a namespace unrecorded and both make it; the first's write fails and
    its settling takes the record away after the second made it again; the second stores a
    message, and its settling records the namespace once more: it is listed."""
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage import layout

    first, second = NamespaceStores(tmp_path), NamespaceStores(tmp_path)
    later = Namespaces("sqlite", tmp_path)
    try:
        failing = first.messages("shared")
        failing.__enter__()
        layout.memory_record(tmp_path, "shared").unlink()  # as if the second looked before it
        storing = second.messages("shared")
        opened = storing.__enter__()
        assert opened is not None and opened.fresh
        assert failing.__exit__(WriteFailed, WriteFailed(), None) is False
        assert not layout.memory_record(tmp_path, "shared").exists()  # taken by the first
        with opened.lock:
            opened.memory.ingest(Message(role="u", content="kept"), Session(session_id="s"))
        storing.__exit__(None, None, None)
        assert catalog.held(later, "", "") == [catalog.Held("shared", "sqlite")]
    finally:
        for stores in (first, second, later):
            stores.close()


def test_a_namespace_whose_first_write_rolled_back_is_not_listed_over_a_database(
    database: Database,
) -> None:
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage.commit import CallerGone, Terms, committing

    def gone() -> None:
        raise CallerGone("the caller went away")

    namespaces = Namespaces("postgres", database)
    prefix = f"rolled-back-{uuid.uuid4().hex}-"
    try:
        with namespaces.episodes(prefix + "with-episodes") as store:
            assert store is not None
            store.record(episode(4))
        for name in ("new", "with-episodes"):
            with (
                pytest.raises(CallerGone),
                namespaces.using(prefix + name) as opened,
                committing(Terms(gone)),
            ):
                assert opened is not None
                opened.memory.ingest(Message(role="u", content="lost"), Session(session_id="s"))
        assert catalog.held(namespaces, prefix, "") == [catalog.Held(prefix + "with-episodes", "")]
        ingest(namespaces, prefix + "new", "kept at last")
        assert [held.name for held in catalog.held(namespaces, prefix, "")] == [
            prefix + "new",
            prefix + "with-episodes",
        ]
        # deleted, then a first write that fails: unlisted, as a new namespace's leaves it
        assert catalog.forget(namespaces, prefix + "new")
        with (
            pytest.raises(CallerGone),
            namespaces.using(prefix + "new") as opened,
            committing(Terms(gone)),
        ):
            assert opened is not None
            opened.memory.ingest(Message(role="u", content="lost"), Session(session_id="s"))
        assert catalog.held(namespaces, prefix, "") == [catalog.Held(prefix + "with-episodes", "")]
        ingest(namespaces, prefix + "new", "kept after the delete")
        with namespaces.using(prefix + "new") as opened:  # emptied by a delete: held all the same
            assert opened is not None
            (hit,) = opened.memory.search("kept")
            assert opened.memory.delete([hit.turn_id]) == 1
        assert [held.name for held in catalog.held(namespaces, prefix, "")] == [
            prefix + "new",
            prefix + "with-episodes",
        ]
    finally:
        namespaces.close()


def test_a_message_stored_by_another_process_as_the_namespace_is_unmade_keeps_it(
    tmp_path: Path,
) -> None:
    """Two openers over one data directory (`himga serve` and `himga mcp --data-dir`): the first
    to open a new namespace fails its write and unmakes it while the second, which opened it
    meanwhile, stores the namespace's first message: the record is made again."""
    first = NamespaceStores(tmp_path, memory="sqlite")
    second = NamespaceStores(tmp_path, memory="sqlite")
    later = NamespaceStores(tmp_path, memory="sqlite")
    try:
        failing = first.messages("shared")
        failing.__enter__()
        beside = second.messages("shared")
        opened = beside.__enter__()
        assert opened is not None and not opened.fresh  # the first one's record was there
        assert failing.__exit__(WriteFailed, WriteFailed(), None) is False  # the failure goes on
        assert list((tmp_path / "namespaces").glob("*.memory")) == []  # unmade: no record
        with opened.lock:
            opened.memory.ingest(Message(role="u", content="kept beside"), Session(session_id="s"))
        beside.__exit__(None, None, None)
        with later.messages("shared", create=False) as found:
            assert found is not None
            assert [hit.content for hit in found.memory.search("kept")] == ["kept beside"]
    finally:
        for stores in (first, second, later):
            stores.close()
