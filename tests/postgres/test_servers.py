"""Several `himga serve --database` processes over one PostgreSQL are one service: what one
acknowledges, every other reads right after; writers on two servers lose and duplicate nothing;
a retry through another server is answered from the first one's receipt; the schema is
migrated once, and a newer one is refused."""

import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from himga.data import Message, Session
from himga.errors import IncompatibleStoreError, NotFoundError
from himga.memory.filters import MessageFilter
from himga.records import EpisodeTrace, TaskContext
from himga.service import RemoteEpisodes, RemoteMemory
from himga.storage.postgres import Database, migrate_schema
from himga.storage.postgres_schema import VERSION
from tests.postgres.servers import Serving, listed, several
from tests.postgres_cluster import Postgres
from tests.server_process import Watched


@pytest.fixture(scope="module")
def servers(postgres: Postgres) -> Iterator[list[Serving]]:
    """Three servers over the session's database."""
    with several(postgres.url, 3) as started:
        yield started


WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def new_namespace() -> str:
    return f"many-{uuid.uuid4().hex}"


def said(turn_id: str, text: str, session_id: str = "s1") -> tuple[Message, Session]:
    return Message(role="Ada", content=text, turn_id=turn_id), Session(session_id=session_id)


def test_a_write_on_one_server_is_read_on_every_other_right_after(
    servers: list[Serving],
) -> None:
    namespace = new_namespace()
    memories = [RemoteMemory(s.target, namespace) for s in servers]
    try:
        for round_ in range(6):  # each server writes in turn; every server reads it next
            writer = memories[round_ % 3]
            # each in a session of its own: a neighbour's words would count at half weight
            writer.store([said(f"T{round_}", f"kayak {WORDS[round_]}", f"s{round_}")])
            for reader in memories:
                assert [hit.turn_id for hit in reader.search(WORDS[round_])] == [f"T{round_}"]
        # A correction in place, on another server than the one that stored it.
        memories[1].store([said("T0", "pottery class on tuesday", "s0")])
        for reader in memories:
            assert [h.turn_id for h in reader.search("pottery")] == ["T0"]
            assert reader.search(WORDS[0]) == []
            assert listed(reader) == [f"T{n}" for n in range(6)]
        # Deletes, by id and by filter.
        assert memories[2].delete(["T1"]) == 1
        memories[0].store([said("S1", "kayak in another session", "s9")])
        assert memories[1].delete(filter=MessageFilter(session_ids=["s9"])) == 1
        for reader in memories:
            assert reader.search(WORDS[1]) == []
            assert "S1" not in listed(reader)
            assert len(listed(reader)) == 5
        # A reset through one empties the namespace for all.
        memories[0].reset()
        for reader in memories:
            assert reader.search("kayak") == []
            assert listed(reader) == []
        memories[2].store([said("A", "after the reset, a kayak")])
        for reader in memories:
            assert [h.turn_id for h in reader.search("kayak")] == ["A"]
    finally:
        for memory in memories:
            memory.close()


def test_after_the_newest_turns_are_deleted_every_server_numbers_new_ones_alike(
    servers: list[Serving],
) -> None:
    """A server that read the namespace anew after a delete of its newest turns numbers the next
    new turn as the deleting server expects it, so that one reads it in."""
    namespace = new_namespace()
    first, second = (RemoteMemory(s.target, namespace) for s in servers[:2])
    try:
        first.store([said(f"T{n}", f"kayak {WORDS[n % 6]}") for n in range(10)])
        assert len(listed(second)) == 10
        assert first.delete(["T8", "T9"]) == 2
        assert len(listed(second)) == 8  # read anew: deletes are not appended rows
        second.store([said("X", "a zebra on the shore", "s2")])
        assert [hit.turn_id for hit in first.search("zebra")] == ["X"]
        first.store([said("X", "a giraffe on the shore", "s2")])  # corrected on the other one
        for memory in (first, second):
            assert [hit.turn_id for hit in memory.search("giraffe")] == ["X"]
            assert memory.search("zebra") == []
    finally:
        first.close()
        second.close()


def test_episodes_written_on_one_server_are_read_on_every_other(servers: list[Serving]) -> None:
    namespace = new_namespace()
    stores = [RemoteEpisodes(s.target, namespace) for s in servers]
    task = TaskContext(goal="fix the redirect loop in the login", files=["auth/session.py"])
    try:
        trace = EpisodeTrace.create(task_id="t1", agent="coder", goal="Fix the login redirect loop")
        trace.files_modified = ["auth/session.py"]
        stores[0].record(trace)
        for reader in stores:
            assert reader.get(trace.id).goal == trace.goal
            assert [hit.episode.id for hit in reader.search(task).hits] == [trace.id]
        document = trace.to_dict()
        document["context"]["goal"] = "Fix the logout crash"
        corrected = EpisodeTrace.from_dict(document)
        stores[1].record(corrected)
        for reader in stores:
            assert reader.get(trace.id).goal == "Fix the logout crash"
        assert stores[2].delete(trace.id)
        for reader in stores:
            with pytest.raises(NotFoundError):
                reader.get(trace.id)
            assert reader.search(task).hits == []
            assert reader.list().episodes == []
    finally:
        for store in stores:
            store.close()


def test_two_servers_writing_one_namespace_lose_and_duplicate_nothing(
    servers: list[Serving],
) -> None:
    namespace = new_namespace()
    threads, batches, size = 6, 15, 4

    def write(thread: int) -> list[str]:
        memory = RemoteMemory(servers[thread % 2].target, namespace)
        try:
            acknowledged = []
            for batch in range(batches):
                items = [
                    said(f"w{thread}-{batch}-{i}", f"word{thread} kayak {batch} {i}")
                    for i in range(size)
                ]
                acknowledged += memory.store(items)
            return acknowledged
        finally:
            memory.close()

    with ThreadPoolExecutor(threads) as pool:
        written = [id_ for ids in pool.map(write, range(threads)) for id_ in ids]
    reader = RemoteMemory(servers[2].target, namespace)
    try:
        ids = listed(reader)
        assert len(ids) == len(set(ids)) == threads * batches * size
        assert set(ids) == set(written)
        found = reader.search("kayak", limit=1000)
        assert sorted(hit.turn_id for hit in found) == sorted(written)
    finally:
        reader.close()


def test_a_retry_through_another_server_is_answered_from_the_first_ones_receipt(
    servers: list[Serving],
) -> None:
    namespace = new_namespace()
    first, second = (RemoteMemory(s.target, namespace) for s in servers[:2])
    try:
        items = [said("R1", "a receipt for kayak"), said("", "no id given, one is made")]
        ids = first.store(items, request_id="request-1")
        assert second.store(items, request_id="request-1") == ids  # the same made id too
        assert sorted(listed(second)) == sorted(ids)
        assert first.delete(["R1"], request_id="delete-1") == 1
        first.store([said("R1", "stored again")])
        assert second.delete(["R1"], request_id="delete-1") == 1  # answered, not deleted again
        assert "R1" in listed(first)
    finally:
        first.close()
        second.close()


def test_one_request_sent_through_two_servers_at_once_is_stored_once(
    servers: list[Serving],
) -> None:
    """A client (or a balancer) that sends a write to two servers at the same moment gets the
    same answer from both, and the write is stored once: the second to commit finds the first
    one's receipt and answers from it."""
    namespace = new_namespace()
    first, second = (RemoteMemory(s.target, namespace) for s in servers[:2])
    rounds = 20
    try:
        with ThreadPoolExecutor(2) as pool:
            for round_ in range(rounds):
                items = [said("", f"kayak trip number {round_}")]  # ids made by the server
                both = [
                    pool.submit(memory.store, items, request_id=f"twice-{round_}")
                    for memory in (first, second)
                ]
                answers = [future.result() for future in both]
                assert answers[0] == answers[1]
        assert len(listed(first)) == rounds
    finally:
        first.close()
        second.close()


def fresh_database(postgres: Postgres) -> str:
    """The URL of a new, empty database on the session's PostgreSQL."""
    name = f"himga_{uuid.uuid4().hex[:12]}"
    postgres.sql(f"CREATE DATABASE {name}")
    return postgres.url.rsplit("/", 1)[0] + "/" + name


def test_servers_starting_at_once_migrate_the_schema_once(postgres: Postgres) -> None:
    url = fresh_database(postgres)
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--database", url]
    starts = [Watched(command) for _ in range(3)]
    logs = []
    try:
        for started in starts:
            started.wait_for("listening on")
            assert started.stop() == 0, started.log  # each stopped right as it serves, too
            logs.append(started.log)
    finally:
        for started in starts:
            started.kill()
    for version in range(1, VERSION + 1):
        assert sum(f"migrated to version {version}\n" in log for log in logs) == 1, logs
    with Database(url, migrate=False) as database, database.transaction() as connection:
        assert connection.execute("SELECT version FROM himga_schema").fetchall() == [(VERSION,)]


def test_an_old_schema_is_migrated_and_keeps_what_it_holds(postgres: Postgres) -> None:
    url = fresh_database(postgres)
    with Database(url, migrate=False) as old:
        assert migrate_schema(old, upto=1) == 0  # the schema before episodes and tokens
        with old.transaction() as connection:
            connection.execute(
                "INSERT INTO himga_namespaces (name, memory, method, version) "
                "VALUES ('old', 'postgres', 'another method', 1)"
            )
            connection.execute(
                "INSERT INTO himga_messages VALUES ((SELECT id FROM himga_namespaces), 0, "
                "'D1:1', 's1', 'x', 1, 'Ada', 'We paddled the kayak', '', NULL, NULL, NULL, "
                "NULL, 'stale')"
            )
    with several(url, 1) as (server,):
        memory = RemoteMemory(server.target, "old")
        try:
            assert [hit.turn_id for hit in memory.search("kayak")] == ["D1:1"]  # indexed again
            store = RemoteEpisodes(server.target, "old")
            store.record(EpisodeTrace.create(task_id="t", agent="a", goal="episodes now work"))
            assert len(store.list().episodes) == 1
            store.close()
        finally:
            memory.close()


def test_a_namespace_deleted_before_the_upgrade_is_unlisted_after_a_failed_write(
    postgres: Postgres,
) -> None:
    """Migration 9: a namespace a himga of schema 8 deleted (its row kept, no memory, numbers
    given) is listed again only once a write after the upgrade numbers a message, not after
    one that failed."""
    from himga.service import catalog
    from himga.service.namespaces import Namespaces
    from himga.storage.commit import CallerGone, Terms, committing

    def gone() -> None:
        raise CallerGone("the caller went away")

    url = fresh_database(postgres)
    with Database(url, migrate=False) as old:
        migrate_schema(old, upto=8)
        with old.transaction() as connection:
            connection.execute(
                "INSERT INTO himga_namespaces (name, memory, version, generation, next_number) "
                "VALUES ('deleted', NULL, 3, 2, 5)"
            )
    with Database(url) as database:
        namespaces = Namespaces("postgres", database)
        try:
            with (
                pytest.raises(CallerGone),
                namespaces.using("deleted") as opened,
                committing(Terms(gone)),
            ):
                assert opened is not None
                opened.memory.ingest(Message(role="u", content="lost"), Session(session_id="s"))
            assert catalog.held(namespaces, "", "") == []
            with namespaces.using("deleted") as opened:
                assert opened is not None
                opened.memory.ingest(Message(role="u", content="kept"), Session(session_id="s"))
            assert catalog.held(namespaces, "", "") == [catalog.Held("deleted", "postgres")]
        finally:
            namespaces.close()


def test_a_server_refuses_a_newer_schema_naming_both_versions(postgres: Postgres) -> None:
    url = fresh_database(postgres)
    with Database(url) as database, database.transaction() as connection:
        connection.execute("UPDATE himga_schema SET version = %s", (VERSION + 1,))
    with pytest.raises(IncompatibleStoreError, match=f"version {VERSION + 1}.*{VERSION}"):
        Database(url)
    done = subprocess.run(
        [sys.executable, "-m", "himga", "serve", "--port", "0", "--database", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert f"schema version {VERSION + 1}, newer than this himga's {VERSION}" in done.stderr


def test_a_server_over_a_database_offers_only_shared_memories(servers: list[Serving]) -> None:
    from himga.service.errors import InvalidRequest

    for refused in ("sqlite", "keyword", "naive"):
        memory = RemoteMemory(servers[0].target, new_namespace(), memory=refused)
        with pytest.raises(InvalidRequest, match=r"memory.*shared by every server"):
            memory.store([said("x", "kayak")])
        memory.close()
