"""SQLiteKeywordMemory's store: durable, all or nothing, one database per namespace."""

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.data import Message, Session
from himga.errors import IncompatibleStoreError
from himga.memory import BaseMemory, KeywordMemory, SQLiteKeywordMemory
from himga.memory.hybrid_sqlite import HybridSQLiteMemory
from himga.memory.ranking import METHOD
from himga.memory.registry import open_memory
from himga.memory.sqlite import DATABASE_NAME, namespace_path
from himga.memory.sqlite_schema import FORMAT
from tests.killed import acknowledged_until_killed

SESSION = Session(session_id="s1", date_str="3 March, 2023")


def _message(i: int) -> tuple[Message, Session]:
    return Message(role="Ada", content=f"remember token{i:05d}", turn_id=f"T{i}"), SESSION


def _stored(path: Path) -> int:
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT count(*) FROM messages").fetchone()
    return int(count)


def test_messages_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "store.sqlite3"
    with SQLiteKeywordMemory(path) as memory:
        memory.ingest_many(_message(i) for i in range(3))
    with SQLiteKeywordMemory(path) as memory:
        assert memory.search("token00001")[0].turn_id == "T1"
        memory.ingest(*_message(3))  # and the index keeps growing where it stopped
        assert memory.search("token00003")[0].turn_id == "T3"


def test_a_reopened_memory_ranks_as_the_one_that_wrote(tmp_path: Path) -> None:
    # Reopening reads every posting back from FTS5: repeated words and interleaved sessions
    # must come back as the live memory holds them, so that every score stays the same.
    texts = ["kayak kayak lake", "lake sunset", "mug mug mug coffee", "kayak mug", "sunset lake"]
    said = [
        (Message(role="Ada", content=text, turn_id=f"T{i}"), Session(session_id=f"s{i % 2}"))
        for i, text in enumerate(texts * 3)
    ]
    path = tmp_path / "m.sqlite3"
    with SQLiteKeywordMemory(path) as live:
        live.ingest_many(said)
        expected = {query: live.search(query, 20) for query in ("kayak", "mug lake", "Ada sunset")}
    with SQLiteKeywordMemory(path) as reopened:
        for query, hits in expected.items():
            assert hits and reopened.search(query, 20) == hits


def test_a_directory_holds_the_database(tmp_path: Path) -> None:
    with SQLiteKeywordMemory(tmp_path) as memory:
        memory.ingest(*_message(1))
        assert memory.path == tmp_path / DATABASE_NAME
    assert _stored(tmp_path / DATABASE_NAME) == 1


def test_on_disk_it_uses_wal(tmp_path: Path) -> None:
    with (
        SQLiteKeywordMemory(tmp_path / "m.sqlite3"),
        sqlite3.connect(tmp_path / "m.sqlite3") as db,
    ):
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_without_a_path_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with SQLiteKeywordMemory() as memory:
        memory.ingest(*_message(1))
        assert memory.path is None and memory.search("token00001")
    assert list(tmp_path.iterdir()) == []


def test_reset_is_durable(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with SQLiteKeywordMemory(path) as memory:
        memory.ingest_many(_message(i) for i in range(5))
        memory.reset()
        memory.ingest(*_message(9))
    with SQLiteKeywordMemory(path) as memory:
        assert memory.search("token00001") == []
        assert memory.search("token00009")[0].turn_id == "T9"


def test_a_failing_batch_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with SQLiteKeywordMemory(path) as memory:
        memory.ingest(*_message(0))
        # Make the database itself refuse the fourth message, half-way through the batch.
        with sqlite3.connect(path) as db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.turn_id = 'T4' "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        with pytest.raises(sqlite3.IntegrityError, match="refused"):
            memory.ingest_many(_message(i) for i in range(1, 8))
        assert [h.turn_id for h in memory.search("remember", limit=50)] == ["T0"]
        assert memory.search("token00002") == []

        def broken() -> Iterator[tuple[Message, Session]]:
            yield _message(10)
            raise RuntimeError("the caller's items broke")

        with pytest.raises(RuntimeError):
            memory.ingest_many(broken())
        assert memory.search("token00010") == []
    assert _stored(path) == 1


def test_connections_to_one_database_follow_each_others_writes(tmp_path: Path) -> None:
    said = [
        (Message(role=role, content=text, turn_id=f"T{i}"), Session(session_id=session))
        for i, (session, role, text) in enumerate(
            [
                ("s1", "Ada", "we took the kayak out on the lake"),
                ("s2", "Bruno", "my pottery class made a mug"),
                ("s1", "Bruno", "was the water cold"),
                ("s1", "Ada", "freezing, but the sunset was worth it"),
                ("s2", "Ada", "a mug for coffee or for tea"),
                ("s1", "Bruno", "next time bring the paddles"),
            ]
        )
    ]
    questions = ["kayak lake", "sunset water", "mug coffee", "Bruno paddles", "Ada pottery"]
    path = tmp_path / "m.sqlite3"
    with SQLiteKeywordMemory(path) as one, SQLiteKeywordMemory(path) as other:
        # Turns of one session written through both: their windows span the two connections.
        one.ingest_many(said[:3])
        other.ingest_many(said[3:5])
        one.ingest(*said[5])
        everything = KeywordMemory()
        everything.ingest_many(said)
        for question in questions:
            expected = everything.search(question, 10)
            assert expected and one.search(question, 10) == other.search(question, 10) == expected
        other.reset()
        assert one.search("kayak") == []
        one.ingest(*said[1])
        assert [hit.turn_id for hit in other.search("mug")] == ["T1"]


def test_connections_follow_each_others_deletes_and_corrections(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with SQLiteKeywordMemory(path) as one, SQLiteKeywordMemory(path) as other:
        one.ingest_many(_message(i) for i in range(6))
        assert other.search("token00002")[0].turn_id == "T2"
        assert other.delete(["T2", "T3"]) == 2
        assert one.search("token00002") == [] and one.search("remember", 10)
        one.ingest(Message(role="Bo", content="corrected kayak", turn_id="T4"), SESSION)
        assert [(h.turn_id, h.content) for h in other.search("kayak", 1)] == [
            ("T4", "corrected kayak")
        ]
        assert "remember token00004" not in [h.content for h in other.search("token00004", 10)]
        fresh = KeywordMemory()
        fresh.ingest_many(_message(i) for i in (0, 1))
        fresh.ingest(Message(role="Bo", content="corrected kayak", turn_id="T4"), SESSION)
        fresh.ingest(*_message(5))
        for query in ("remember", "kayak", "Ada token00005"):
            assert one.search(query, 10) == other.search(query, 10) == fresh.search(query, 10)
        assert [m.id for m in other.list().messages] == ["T0", "T1", "T4", "T5"]


@pytest.mark.parametrize("kind", [SQLiteKeywordMemory, HybridSQLiteMemory])
def test_a_connection_never_numbers_a_turn_where_another_deleted_the_newest(
    tmp_path: Path, kind: type[SQLiteKeywordMemory]
) -> None:
    path = tmp_path / "m.sqlite3"
    with kind(path) as one:
        one.ingest_many(_message(i) for i in range(3))
        assert one.delete(["T2"]) == 1  # the newest: no row is left past it
        with kind(path) as other:  # opened after the delete, it sees the rows alone
            other.ingest(Message(role="Bo", content="a new kayak", turn_id="T9"), SESSION)
            assert [hit.turn_id for hit in one.search("kayak", 1)] == ["T9"]
            assert [m.id for m in one.list().messages] == ["T0", "T1", "T9"]
            one.ingest(Message(role="Bo", content="a red canoe", turn_id="T9"), SESSION)
            assert [(h.turn_id, h.content) for h in other.search("canoe", 1)] == [
                ("T9", "a red canoe")
            ]
            assert "a new kayak" not in [h.content for h in other.search("kayak", 10)]
            other.reset()  # the mark goes with the rows: numbering starts again
            one.ingest(*_message(0))
            assert [m.id for m in other.list().messages] == ["T0"]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT id FROM messages").fetchall() == [(1,)]


def test_a_database_of_another_method_is_indexed_again(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with SQLiteKeywordMemory(path) as memory:
        memory.ingest_many(_message(i) for i in range(5))
        before = memory.search("remember token00003", limit=10)
    with sqlite3.connect(path) as db:
        # What another method left: its own method, other lengths, speakers and terms.
        db.execute("UPDATE himga_meta SET value = 'something older' WHERE key = 'method'")
        db.execute("UPDATE messages SET length = 1, speaker = 99")
        db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('delete-all')")
        db.execute("INSERT INTO turns_fts (rowid, terms) VALUES (1, 'stale')")
    with SQLiteKeywordMemory(path) as memory:
        assert memory.search("remember token00003", limit=10) == before
        assert memory.search("stale") == []
    with sqlite3.connect(path) as db:
        (method,) = db.execute("SELECT value FROM himga_meta WHERE key = 'method'").fetchone()
    assert method == METHOD


def test_a_database_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    SQLiteKeywordMemory(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE himga_meta SET value = ? WHERE key = 'format'", (str(FORMAT + 1),))
    with pytest.raises(IncompatibleStoreError, match=f"newer himga .store format {FORMAT + 1}"):
        SQLiteKeywordMemory(path)


def test_one_database_per_namespace_in_the_data_directory(tmp_path: Path) -> None:
    def factory(namespace: str, data_dir: Path) -> BaseMemory:
        return open_memory("sqlite", namespace, data_dir)

    names = ["alice", "Alice", "a/../../b", "", "名前 with spaces", "x" * 500]
    paths = {namespace_path(tmp_path, name) for name in names}
    assert len(paths) == len(names)  # distinct even where file systems fold case
    for path in paths:
        assert path.parent == tmp_path / "sqlite" and len(path.name) < 200
    first = factory("alice", tmp_path)
    first.ingest(*_message(1))
    again = factory("alice", tmp_path)  # the same namespace opens the same database
    assert again.search("token00001")
    assert factory("Alice", tmp_path).search("token00001") == []
    assert namespace_path(tmp_path, "alice").exists()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
@pytest.mark.parametrize("batch", [1, 20])
def test_acknowledged_ingests_survive_sigkill(tmp_path: Path, batch: int) -> None:
    """A child ingests without end and prints each batch once ingest returns; we kill it
    mid-stream, then every acknowledged message is there, and no partial batch."""
    path = tmp_path / "m.sqlite3"
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(batch)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acknowledged = acknowledged_until_killed(child, 15)
    stored = _stored(path)
    assert stored % batch == 0 and stored >= len(acknowledged) * batch
    with SQLiteKeywordMemory(path) as memory:
        for b in acknowledged:
            for i in range(b * batch, (b + 1) * batch):
                assert memory.search(f"token{i:05d}")[0].turn_id == f"T{i}"


_WRITER = """
import sys
from himga.data import Message, Session
from himga.memory import KeywordMemory, SQLiteKeywordMemory

memory = SQLiteKeywordMemory(sys.argv[1])
batch = int(sys.argv[2])
session = Session(session_id="s1")
b = 0
while True:
    memory.ingest_many(
        (Message(role="Ada", content=f"remember token{i:05d}", turn_id=f"T{i}"), session)
        for i in range(b * batch, (b + 1) * batch)
    )
    print(b, flush=True)
    b += 1
"""


def test_a_batch_larger_than_a_chunk_is_one_transaction_in_order(tmp_path: Path) -> None:
    from himga.memory.sqlite import CHUNK_TURNS

    count = 2 * CHUNK_TURNS + 7
    items = [
        (
            Message(role="Caroline", content=f"word{i} said", turn_id=f"D1:{i}"),
            Session(session_id=f"s{i // 50}"),
        )
        for i in range(count)
    ]
    with SQLiteKeywordMemory(tmp_path / "m.sqlite3") as memory:
        assert memory.ingest_many(items) == count
        found = memory.search(f"word{count - 1}", limit=1)
    with SQLiteKeywordMemory(tmp_path / "m.sqlite3") as reopened:
        again = reopened.search(f"word{count - 1}", limit=1)
        assert [h.turn_id for h in reopened.search(f"word{CHUNK_TURNS}", limit=1)] == [
            f"D1:{CHUNK_TURNS}"
        ]
    assert [h.turn_id for h in found] == [h.turn_id for h in again] == [f"D1:{count - 1}"]
    assert found[0].score == again[0].score


@pytest.mark.parametrize("kind", ["sqlite", "hybrid"])
def test_ids_that_differ_only_past_a_nul_stay_apart(tmp_path: Path, kind: str) -> None:
    # SQLite's JSON functions end a string at an escaped NUL: through json_each, "a\0x" matched
    # "a", and deleting it deleted the other message.
    session, other = Session(session_id="s1"), Session(session_id="s1\x00b")
    with open_memory(kind, "ns", tmp_path) as memory:
        memory.store(
            [
                (Message(role="Ann", content="green tea", turn_id="a"), session),
                (Message(role="Ann", content="red car", turn_id="a\x00x"), other),
            ]
        )
        memory.store([(Message(role="Ann", content="blue bike", turn_id="a\x00x"), other)])
        assert [(m.id, m.content) for m in memory.list().messages] == [
            ("a", "green tea"),
            ("a\x00x", "blue bike"),
        ]
        assert memory.delete(["a\x00x"]) == 1
        assert [m.id for m in memory.list().messages] == ["a"]
        assert [hit.turn_id for hit in memory.search("green tea")] == ["a"]
        assert "a\x00x" not in {hit.turn_id for hit in memory.search("blue bike")}
