"""SQLite stores that outlive versions: a store written by an earlier himga (committed in
tests/fixtures/stores/) opens, migrated in place, with every message and every search result
kept; a migration cut short by SIGKILL leaves the old store as it was; a store of a newer format
is refused (tests/memory/test_sqlite.py)."""

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from himga.memory import SQLiteKeywordMemory
from himga.memory.filters import MessageFilter
from himga.memory.sqlite_schema import FORMAT
from tests.killed import acknowledged_until_killed

STORES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
OLD = STORES / "before-format-version.sqlite3"
ANSWERS = json.loads((STORES / "before-format-version.json").read_text(encoding="utf-8"))


def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite3"
    shutil.copyfile(OLD, path)
    return path


def renamed(turn_ids: list[str]) -> list[str]:
    """The ids format 1's turn_ids get: themselves, and `<turn_id>#2`, ... for repeats."""
    seen: dict[str, int] = {}
    out = []
    for turn_id in turn_ids:
        seen[turn_id] = seen.get(turn_id, 0) + 1
        out.append(turn_id if seen[turn_id] == 1 else f"{turn_id}#{seen[turn_id]}")
    return out


def dump(path: Path) -> tuple[list[Any], dict[str, list[Any]]]:
    """A database's schema and every row of its tables, to compare two files by content."""
    with sqlite3.connect(path) as db:
        schema = db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        tables = [name for kind, name, _ in schema if kind == "table" and "fts" not in name]
        rows = {t: db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables}
    return schema, rows


def test_a_store_of_the_first_format_opens_with_every_message_and_answer(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    old_rows = ANSWERS["messages"]
    ids = renamed([row[0] for row in old_rows])
    with SQLiteKeywordMemory(path) as memory:
        listed = memory.list(page_size=1000).messages
        assert [(m.id, m.session_id, m.role, m.content, m.date_str) for m in listed] == [
            (new_id, *row[1:]) for new_id, row in zip(ids, old_rows, strict=True)
        ]
        # each message (session, role, content) -> its id now
        id_of = {tuple(row[1:4]): new for new, row in zip(ids, old_rows, strict=True)}
        for question, answer in ANSWERS["answers"].items():
            assert memory.retrieve(question) == answer["context"]
            hits = [
                [h.turn_id, h.session_id, h.role, h.content, h.date_str, h.score]
                for h in memory.search(question, limit=50)
            ]
            # The same hits with the same scores; a repeated turn_id reads as its new id.
            assert [h[1:] for h in hits] == [h[1:] for h in answer["hits"]]
            assert [h[0] for h in hits] == [id_of[tuple(h[1:4])] for h in answer["hits"]]
        # What format 2 adds works on the old messages: times from their date_str, filters.
        first = listed[0]
        assert first.time == datetime(2023, 3, 3, 9, 15, tzinfo=UTC)
        march = MessageFilter(before=datetime(2023, 3, 10, tzinfo=UTC))
        assert {h.session_id for h in memory.search("sailboat", 50, filter=march)} == {"session_1"}
    with sqlite3.connect(path) as db:
        meta = dict(db.execute("SELECT key, value FROM himga_meta"))
    assert meta["format"] == str(FORMAT)
    before = dump(path)
    SQLiteKeywordMemory(path).close()  # opening a current store changes nothing
    assert dump(path) == before


_MIGRATE_THEN_DIE = """
import os, signal, sys
from himga.memory import SQLiteKeywordMemory, sqlite_schema

step = sqlite_schema.MIGRATIONS[1]

def step_then_die(db):
    step(db)  # every change of the migration made, none committed
    print("migrated", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

sqlite_schema.MIGRATIONS[1] = step_then_die
SQLiteKeywordMemory(sys.argv[1])
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_migration_killed_half_way_leaves_the_old_store_as_it_was(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    original = dump(path)
    child = subprocess.run(
        [sys.executable, "-c", _MIGRATE_THEN_DIE, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL and child.stdout == "migrated\n", child.stderr
    assert dump(path) == original  # the old store, readable by the code that wrote it
    with SQLiteKeywordMemory(path) as memory:  # and migrated on the next open
        assert len(memory.list(page_size=1000).messages) == len(ANSWERS["messages"])


_DELETER = """
import sys
from himga.data import Message, Session
from himga.memory import SQLiteKeywordMemory

memory = SQLiteKeywordMemory(sys.argv[1])
total = int(sys.argv[2])
session = Session(session_id="s")
memory.ingest_many(
    (Message(role="Ada", content=f"remember token{i:05d}", turn_id=f"T{i}"), session)
    for i in range(total)
)
print("stored", flush=True)
for i in range(total):
    memory.delete([f"T{i}"])
    print(i, flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_acknowledged_deletes_survive_sigkill(tmp_path: Path) -> None:
    """A child deletes messages one by one and prints each once delete returns; we kill it
    mid-stream, then every acknowledged delete holds, and every other message is whole."""
    path, total = tmp_path / "m.sqlite3", 200
    child = subprocess.Popen(
        [sys.executable, "-c", _DELETER, str(path), str(total)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "stored\n"
    acknowledged = acknowledged_until_killed(child, 15)
    with SQLiteKeywordMemory(path) as memory:
        left = [m.id for m in memory.list(page_size=1000).messages]
        gone = total - len(left)
        assert gone >= len(acknowledged)
        assert left == [f"T{i}" for i in range(gone, total)]  # deleted in order, none half
        for i in acknowledged:
            assert memory.search(f"token{i:05d}") == []
        assert memory.search(f"token{gone:05d}")[0].turn_id == f"T{gone}"
