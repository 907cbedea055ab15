"""Searches and listings of one keyword memory run side by side (himga.memory.readwrite), and
still see only whole commits: of this memory's own writes, and of another connection's over the
same store, which a reader reads in under the write side. Two searches rank at the same time,
in a memory and through a server. No combination of readers and writers
deadlocks, and a stream of readers does not starve a writer."""

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

from himga.data import Message, Session
from himga.kinds import Keeps
from himga.memory.indexed import IndexedMemory
from himga.memory.readwrite import ReadWriteLock
from himga.memory.registry import memory_kind, open_memory
from himga.service import RemoteMemory, create_server
from himga.storage.namespaces import OpenNamespace
from himga.storage.place import Place
from tests.memory.test_indexed import INDEXED

BATCH = 20
ROUNDS = 24
READERS = 4
GUARD_SECONDS = 120
"""How long a thread may take before the test calls it a deadlock (not a speed limit: the
threads take well under a second on an idle machine)."""


def batch(round_: int) -> list[tuple[Message, Session]]:
    """The same BATCH ids each round, each saying the round: a reader that sees a mix of
    rounds, or part of a batch, saw part of a commit."""
    session = Session(session_id=f"s{round_ % 3}")
    return [
        (Message(role="Ada", content=f"lantern round{round_} note {n}", turn_id=f"t{n}"), session)
        for n in range(BATCH)
    ]


def rounds_seen(contents: list[str]) -> set[str]:
    return {content.split()[1] for content in contents}


SHARED = [name for name in INDEXED if memory_kind(name).keeps is not Keeps.PROCESS]
"""The engines whose store a second connection can share (the in-process one keeps its rows
in the memory alone)."""


@pytest.fixture(params=INDEXED)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextmanager
def memories(
    engine: str, place: Place, *, apart: bool
) -> Iterator[tuple[IndexedMemory, IndexedMemory]]:
    """A memory writing and one reading: the same one, or (`apart`, for engines whose store
    another connection can share) a second memory over the same namespace."""
    namespace = f"concurrent-{uuid.uuid4().hex}"
    writer = open_memory(engine, namespace, place)
    assert isinstance(writer, IndexedMemory)
    made = [writer]
    try:
        reader = writer
        if apart:
            assert engine in SHARED and writer.durable, f"{engine} keeps its rows alone"
            reader = open_memory(engine, namespace, place)
            assert isinstance(reader, IndexedMemory)
            made.append(reader)
        yield writer, reader
    finally:
        for memory in made:
            memory.close()


def run_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "deadlocked"


def exercise(writer: IndexedMemory, reader: IndexedMemory) -> list[str]:
    """Writes replacing, deleting and adding whole batches while READERS threads search and
    list (the writer waits for a read between its writes, so reads meet every state); what the
    readers saw that was not a whole commit, and what failed."""
    writer.store(batch(0))
    done = threading.Event()
    broken: list[str] = []
    reads = threading.Condition()
    count = [0]

    def read_since(before: int) -> bool:
        return count[0] > before

    def write() -> None:
        try:
            for round_ in range(1, ROUNDS):
                if round_ % 6 == 0:
                    assert writer.delete([f"t{n}" for n in range(BATCH)]) == BATCH
                writer.store(batch(round_))
                with reads:
                    if not reads.wait_for(partial(read_since, count[0]), GUARD_SECONDS):
                        broken.append("no reader read")
                        return
        except BaseException as error:  # reported, not lost in the thread
            broken.append(f"writer: {error!r}")
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                hits = reader.search("lantern note", limit=100)
                found = rounds_seen([hit.content for hit in hits])
                if len(hits) not in (0, BATCH) or len(found) > 1:
                    broken.append(f"search saw {len(hits)} hits of rounds {sorted(found)}")
                page = reader.list(page_size=100)
                found = rounds_seen([message.content for message in page.messages])
                if len(page.messages) not in (0, BATCH) or len(found) > 1:
                    broken.append(f"listing saw {len(page.messages)} of rounds {sorted(found)}")
                with reads:
                    count[0] += 1
                    reads.notify_all()
        except BaseException as error:
            broken.append(f"reader: {error!r}")

    run_all(
        [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(READERS)]
    )
    return broken


def test_readers_beside_its_own_writes_see_whole_commits(
    engine: str, place_of: Callable[[str], Place]
) -> None:
    with memories(engine, place_of(engine), apart=False) as (writer, reader):
        assert exercise(writer, reader) == []
        last = rounds_seen([hit.content for hit in reader.search("lantern note", limit=100)])
        assert last == {f"round{ROUNDS - 1}"}


@pytest.mark.parametrize("engine", SHARED)
def test_readers_beside_another_connections_writes_see_whole_commits(
    engine: str, place_of: Callable[[str], Place]
) -> None:
    """The reader's index is behind at each of its reads: read in under the write side."""
    with memories(engine, place_of(engine), apart=True) as (writer, reader):
        assert writer is not reader
        assert exercise(writer, reader) == []
        last = rounds_seen([hit.content for hit in reader.search("lantern note", limit=100)])
        assert last == {f"round{ROUNDS - 1}"}


def test_a_servers_reads_of_a_thread_safe_memory_take_no_namespace_lock(
    engine: str, place_of: Callable[[str], Place]
) -> None:
    """A Retrieve goes on while a write holds the namespace's lock; a write waits for it."""
    memory = open_memory(engine, f"held-{uuid.uuid4().hex}", place_of(engine))
    try:
        opened = OpenNamespace(engine, memory)
        assert memory.thread_safe
        with opened.lock:  # a write in progress
            with opened.held(read=True) as held:
                assert held is memory and held.search("lantern") == []
            assert not opened.lock.acquire(blocking=False)  # a write would wait
    finally:
        memory.close()


def test_readers_share_the_lock_and_writers_hold_it_alone() -> None:
    lock = ReadWriteLock()
    both_in = threading.Barrier(2, timeout=GUARD_SECONDS)
    order: list[str] = []

    def reader(name: str) -> None:
        with lock.reading():
            both_in.wait()  # broken (an error) if the readers could not both hold it
            order.append(name)

    run_all([threading.Thread(target=reader, args=(name,)) for name in ("r1", "r2")])
    assert sorted(order) == ["r1", "r2"]

    inside = threading.Event()

    def late_reader() -> None:
        with lock.reading():
            inside.set()

    with lock.writing():
        thread = threading.Thread(target=late_reader)
        thread.start()
        assert not inside.wait(0.2)  # a reader does not get in beside a writer
    assert inside.wait(GUARD_SECONDS)
    thread.join(GUARD_SECONDS)


def test_a_waiting_writer_goes_before_readers_that_come_after_it() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    first_in, release_first = threading.Event(), threading.Event()

    def first_reader() -> None:
        with lock.reading():
            first_in.set()
            release_first.wait(GUARD_SECONDS)
            order.append("first reader")

    def writer() -> None:
        with lock.writing():
            order.append("writer")

    def late_reader() -> None:
        with lock.reading():
            order.append("late reader")

    threads = [threading.Thread(target=f) for f in (first_reader, writer, late_reader)]
    threads[0].start()
    assert first_in.wait(GUARD_SECONDS)
    threads[1].start()
    waited = time.monotonic()
    while lock._writers_waiting == 0 and time.monotonic() - waited < GUARD_SECONDS:
        time.sleep(0.001)
    threads[2].start()
    time.sleep(0.05)  # the late reader, arriving, waits behind the writer
    release_first.set()
    for thread in threads:
        thread.join(GUARD_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "deadlocked"
    assert order == ["first reader", "writer", "late reader"]


@contextmanager
def meeting_in_the_ranking(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Barrier]:
    """The C ranking, made to wait inside until a second search is inside it too: the
    barrier is broken (its waits raise) if searches cannot rank at the same time."""
    from himga.memory import ranking

    both_inside = threading.Barrier(2, timeout=GUARD_SECONDS)
    rank = ranking._ranking.rank

    def meeting(*args: object) -> object:
        both_inside.wait()
        return rank(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ranking._ranking, "rank", meeting)
    yield both_inside


def test_two_searches_of_one_memory_rank_at_the_same_time(
    engine: str, place_of: Callable[[str], Place], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = open_memory(engine, f"together-{uuid.uuid4().hex}", place_of(engine))
    try:
        memory.store(batch(0))
        found: list[int] = []
        with meeting_in_the_ranking(monkeypatch) as both_inside:

            def search() -> None:
                found.append(len(memory.search("lantern", limit=100)))

            run_all([threading.Thread(target=search) for _ in range(2)])
            assert not both_inside.broken
        assert found == [BATCH, BATCH]
    finally:
        memory.close()


def test_a_server_ranks_two_retrieves_of_one_namespace_at_the_same_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the wire: no lock of the server runs one namespace's Retrieves one at a time."""
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        target = f"127.0.0.1:{port}"
        with RemoteMemory(target, "together") as remote:
            remote.store(batch(0))
        found: list[int] = []
        with meeting_in_the_ranking(monkeypatch) as both_inside:

            def retrieve() -> None:
                with RemoteMemory(target, "together") as remote:
                    found.append(len(remote.search("lantern", limit=100)))

            run_all([threading.Thread(target=retrieve) for _ in range(2)])
            assert not both_inside.broken
        assert found == [BATCH, BATCH]
    finally:
        server.stop(None)
