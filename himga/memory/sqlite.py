"""SQLiteKeywordMemory: the shared keyword method (himga.memory.ranking) in a durable SQLite store.

The skeleton every keyword memory shares (himga.memory.indexed) over a SQLite database: this
module fills in its rows' SQL (himga.memory.rows). One database per memory (its tables, format
version and migrations: himga.memory.sqlite_schema):
- `messages`: each stored message under its id (`turn_id`), what was said, by whom (a
  `speakers` id), in which session (a `sessions` id), when, with what metadata, and how many
  terms it has. Row ids are turn numbers + 1, in the order ids were first stored.
- `turns_fts`: a contentless FTS5 table holding each turn's own terms, read through the
  `turns_vocab` fts5vocab table as postings: which turns hold a term, how often. A replaced or
  deleted turn's terms are taken out with FTS5's `delete` command, given the terms it was
  indexed with (its stored text, turned into terms again by the same method; the database
  records the method, so they are the same).

The index the skeleton derives (himga.memory.derived) is read from the database when the memory
opens (the postings from `turns_vocab` in one pass); appended rows are read in incrementally
(their terms from their content). Anything else (a reset, a delete, a replacement) bumps a
`generation` in `himga_meta`, and another connection that sees it reads everything again before
its next call (`PRAGMA data_version` tells it that something was committed). Queries never
reach FTS5's query syntax: a query's terms are looked up as exact strings.

Durability: WAL journal, `synchronous=FULL`, one transaction per call that writes, so a store or
delete that has returned is on disk (it survives SIGKILL, and power loss) and a failed one
leaves nothing behind. Threads may share it: the skeleton's lock lets searches rank side by
side and each takes the connection in turn to read its hits, writes run one at a time. Just
before COMMIT a write asks `himga.storage.commit.before_commit` whether it is still wanted (a
server's caller may have gone: it then rolls back) and writes the receipt of its request id in
`himga_receipts`, in the same transaction. A store that has its schema opens by
reading alone, so it can be read on a full disk. The file is created 0600 (himga.storage.files),
and SQLite gives its -wal and -shm files the same mode.

Layout of a server's data directory: `<data_dir>/sqlite/<namespace>-<hash>.sqlite3`, one
database per namespace (named by himga.memory.registry.namespace_file). Each namespace then has
its own BM25 statistics (a busy neighbour does not shift another's scores), its own write lock
(namespaces ingest in parallel), and a reset that touches nothing else.
"""

import builtins
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from himga.kinds import NoOptions
from himga.memory.base import StoredMessage
from himga.memory.derived import Placing, said_columns, stored_of
from himga.memory.indexed import IndexedMemory
from himga.memory.ranking import Turns
from himga.memory.registry import namespace_file
from himga.memory.rows import Change, Loaded, Rows, Version
from himga.memory.sqlite_schema import (
    bump_generation,
    is_current,
    keep_receipt,
    open_store,
    read_receipt,
)
from himga.memory.text import terms_of
from himga.storage.files import create_private
from himga.storage.receipts import Receipt
from himga.storage.sqlite import connect, damaged, named_if_damaged, with_keys

DATABASE_NAME = "memory.sqlite3"
_BUSY_TIMEOUT_MS = 10_000
CACHE_KIB = 65_536
_LOAD_ROWS = 10_000
AUTOMERGE = 8
CHUNK_TURNS = 2048
"""A batch is read and written this many turns at a time (in its one transaction)."""

# Every term's postings, as turn numbers (FTS5 rowids are message ids, from 1; turns count from
# 0), one per occurrence: what a memory opening reads into its Postings.
_ALL_POSTINGS = "SELECT term, group_concat(doc - 1, ' ') FROM turns_vocab GROUP BY term"
# Each turn's place and facets, for Windows and Facets (with its content, for its terms, in
# place of {}: NULL when the postings are read apart).
_PLACES_OF = """
    SELECT messages.id - 1, sessions.key, messages.length, speakers.key, role, time, metadata, {}
    FROM messages
    JOIN speakers ON speakers.id = messages.speaker
    JOIN sessions ON sessions.id = messages.session"""
_PLACES = f"{_PLACES_OF} WHERE messages.id > ? ORDER BY messages.id"
_PLACES_BY_IDS = (
    f"{_PLACES_OF} WHERE messages.id IN (SELECT value FROM json_each(?)) ORDER BY messages.id"
)
# What a StoredMessage holds, by rows; the FROM clause is added where it is used.
_STORED = """
    SELECT messages.id - 1, turn_id, sessions.key, role, content, date_str, time, timestamp,
        session_timestamp, metadata
    FROM messages JOIN sessions ON sessions.id = messages.session"""
# By ids: one `?` an id, up to _MOST_VARIABLES ids; more (a search with a large limit) go
# through json_each, as SQLite caps the number of `?` in a statement (32766 by default).
_BY_IDS = f"{_STORED} WHERE messages.id IN ({{}})"
_BY_JSON_IDS = f"{_STORED} WHERE messages.id IN (SELECT value FROM json_each(?))"
_MOST_VARIABLES = 1000
_INSERT = """
    INSERT INTO messages (id, session, speaker, length, turn_id, role, content, date_str,
        timestamp, session_timestamp, time, metadata)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_UPDATE = """
    UPDATE messages SET session = ?, speaker = ?, length = ?, turn_id = ?, role = ?, content = ?,
        date_str = ?, timestamp = ?, session_timestamp = ?, time = ?, metadata = ?
    WHERE id = ?"""


class SQLiteKeywordMemory(IndexedMemory):
    """BM25 over each turn and its neighbours in SQLite FTS5; in memory when `path` is None.

    `path` is a database file (created with its parent directories if missing) or an existing
    directory, which then holds DATABASE_NAME. A database written by an earlier himga is
    migrated in place when it opens (himga.memory.sqlite_schema).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        if path is None or str(path) == ":memory:":
            self.path: Path | None = None
        else:
            self.path = Path(path)
            if self.path.is_dir():
                self.path = self.path / DATABASE_NAME
            # Created 0600 before SQLite opens it: its -wal and -shm files take its mode.
            create_private(self.path)
        # WAL, and on a full disk (no room for -shm) the log's index in memory instead.
        with named_if_damaged(self.path):
            self._db = connect(self.path, _BUSY_TIMEOUT_MS / 1000)
        self._connection = threading.Lock()  # the connection's one transaction at a time
        self._rows = _SQLiteRows(self._db)
        try:
            with named_if_damaged(self.path):
                self._open()
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def for_namespace(
        cls, namespace: str, data_dir: Path | None, options: NoOptions
    ) -> "SQLiteKeywordMemory":
        """The registry's factory: the namespace's database in `data_dir`, in memory if None."""
        if data_dir is None:
            return cls()
        return cls(namespace_path(data_dir, namespace))

    def _open(self) -> None:
        db = self._db
        if self.path is not None:
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        # Up to CACHE_KIB of pages, taken only as the database grows: a search reads postings
        # from all over the file, and the default cache is small for that.
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        # A store of this format and method is opened by reading alone (it opens on a full disk).
        with self._begin():
            current = is_current(db)
        if not current:
            with self._begin("IMMEDIATE"):
                open_store(db, self.path.name if self.path else "database")
                # FTS5 merges its segments when AUTOMERGE of them are on one level (default 4);
                # merging less often speeds batch ingest (README, Figures).
                db.execute(
                    f"INSERT INTO turns_fts (turns_fts, rank) VALUES ('automerge', {AUTOMERGE})"
                )
        with self._lock.writing(), self._using(write=False):
            pass  # the index, read in now

    @contextmanager
    def _begin(self, mode: str = "DEFERRED") -> Iterator[None]:
        """One transaction: every read in it sees one state of the database; on any error it
        rolls back. A COMMIT that fails (a full disk) leaves SQLite's transaction open: it is
        rolled back too. A damaged file is a DamagedStoreError naming it."""
        self._db.execute(f"BEGIN {mode}")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException as error:
            if self._db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                self._db.execute("ROLLBACK")
            if isinstance(error, sqlite3.DatabaseError) and (named := damaged(error, self.path)):
                raise named from error
            raise

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Rows]:
        # The connection holds one transaction at a time: searches sharing the skeleton's lock
        # take turns here, only to read their hits.
        with self._connection:
            try:
                with self._begin("IMMEDIATE" if write else "DEFERRED"):
                    yield self._rows
            except BaseException:
                self._rows.forget()
                raise

    @property
    def durable(self) -> bool:
        return self.path is not None

    def close(self) -> None:
        """Close the database; the memory is unusable afterwards."""
        with self._lock.writing(), self._connection:
            self._db.close()

    def receipt(self, request_id: str) -> Receipt | None:
        """The receipt of the write made with `request_id` within the receipt window, if any."""
        with self._connection, self._begin():
            return read_receipt(self._db, request_id)


class _SQLiteRows:
    """The rows of a SQLite memory, in the transaction its connection has open."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._seen: Version | None = None  # the counters last read or left by a commit here

    def forget(self) -> None:
        """Read the generation again next time (a transaction rolled back)."""
        self._seen = None

    def counters(self, *, lock: bool) -> Version:
        # data_version moves with every other connection's commit; the generation, read only
        # then, moves with this connection's own commits, which `bump` saw.
        (version,) = self._db.execute("PRAGMA data_version").fetchone()
        seen = self._seen
        if seen is None or seen.version != version:
            meta = dict(self._db.execute(_COUNTERS))
            end = meta.get("end")
            seen = Version(version, int(meta["generation"]), None if end is None else int(end))
            self._seen = seen
        return seen

    def postings(self, first: int) -> Iterable[tuple[str, str]] | None:
        return self._db.execute(_ALL_POSTINGS) if first == 0 else None

    def loaded(self, first: int, *, terms: bool) -> Iterator[Loaded]:
        cursor = self._db.execute(_PLACES.format("content" if terms else "NULL"), (first,))
        while rows := cursor.fetchmany(_LOAD_ROWS):
            yield _loaded(rows, terms=terms)

    def loaded_of(self, numbers: Sequence[int]) -> Loaded:
        chosen = json.dumps([number + 1 for number in numbers])
        rows = self._db.execute(_PLACES_BY_IDS.format("content"), (chosen,)).fetchall()
        return _loaded(rows, terms=True)

    def changes(self, version: int, generation: int, now: Version) -> None:
        return None  # no change log: another connection's changes are read anew

    def numbers(self, ids: Sequence[str]) -> dict[str, int]:
        select = "SELECT turn_id, id - 1 FROM messages WHERE turn_id IN ({keys})"
        return dict(with_keys(self._db, select, builtins.list(dict.fromkeys(ids))))

    def terms(self, numbers: Sequence[int]) -> builtins.list[builtins.list[str]]:
        if not numbers:
            return []
        select = "SELECT id, content FROM messages WHERE id IN (SELECT value FROM json_each(?))"
        rows = self._db.execute(select, (json.dumps([n + 1 for n in numbers]),)).fetchall()
        by_id = dict(
            zip([i for i, _ in rows], terms_of([content for _, content in rows]), strict=True)
        )
        return [by_id.get(n + 1, []) for n in numbers]

    def write(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        speakers = self._ids("speakers", turns.speakers)
        sessions = self._ids("sessions", turns.session_ids)
        replaced = set(placing.replaced_numbers)
        self._unindex(placing.replaced_numbers, old_terms)
        rows = zip(
            [n + 1 for n in placing.numbers],
            map(sessions.__getitem__, turns.session_ids),
            map(speakers.__getitem__, turns.speakers),
            map(len, turns.terms),
            *said_columns(turns),
            strict=True,
        )
        inserts, updates = [], []
        for row in rows:
            if row[0] - 1 in replaced:
                updates.append((*row[1:], row[0]))
            else:
                inserts.append(row)
        self._db.executemany(_UPDATE, updates)
        self._db.executemany(_INSERT, inserts)
        indexed = (
            (n + 1, " ".join(own))
            for n, own in zip(placing.numbers, turns.terms, strict=True)
            if own
        )
        self._db.executemany("INSERT INTO turns_fts (rowid, terms) VALUES (?, ?)", indexed)

    def _ids(self, table: str, keys: Iterable[str]) -> dict[str, int]:
        """The ids of `keys` in `table` (speakers or sessions), adding the missing rows in the
        order given (sessions are numbered in order of first use)."""
        wanted = builtins.list(dict.fromkeys(keys))
        select = f"SELECT key, id FROM {table} WHERE key IN ({{keys}})"
        known = dict(with_keys(self._db, select, wanted))
        added = [key for key in wanted if key not in known]
        if added:
            insert = f"INSERT INTO {table} (key) VALUES (?)"
            self._db.executemany(insert, [(key,) for key in added])
            known.update(with_keys(self._db, select, added))
        return known

    def _unindex(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> None:
        """Take the terms of stored turns out of the index: FTS5's `delete` for a contentless
        table, given the terms each turn was indexed with."""
        self._db.executemany(
            "INSERT INTO turns_fts (turns_fts, rowid, terms) VALUES ('delete', ?, ?)",
            [(n + 1, " ".join(own)) for n, own in zip(numbers, old_terms, strict=True) if own],
        )

    def delete(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> None:
        self._unindex(numbers, old_terms)
        self._db.execute(
            "DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([n + 1 for n in numbers]),),
        )
        # The newest turns deleted leave no row behind: the mark past them keeps another
        # connection from giving a new turn a number this one still holds as deleted.
        self._db.execute(_KEEP_END, (str(max(numbers) + 1),))

    def reset(self) -> None:
        for table in ("messages", "speakers", "sessions"):
            self._db.execute(f"DELETE FROM {table}")
        self._db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('delete-all')")
        self._db.execute("DELETE FROM himga_meta WHERE key = 'end'")

    def bump(self, seen: Version, change: Change | None, end: int | None) -> Version:
        # This connection's own commit leaves its data_version as it was.
        if change is None or change.numbers:
            self._seen = Version(seen.version, int(bump_generation(self._db)))
            return self._seen
        return seen

    def stored(self, numbers: Sequence[int]) -> dict[int, StoredMessage]:
        chosen = [number + 1 for number in numbers]
        if len(chosen) > _MOST_VARIABLES:
            rows = self._db.execute(_BY_JSON_IDS, (json.dumps(chosen),))
        else:
            rows = self._db.execute(_BY_IDS.format(",".join("?" * len(chosen))), chosen)
        return {row[0]: stored_of(row) for row in rows}

    def keep_receipt(self, receipt: Receipt) -> None:
        keep_receipt(self._db, receipt)


_COUNTERS = "SELECT key, value FROM himga_meta WHERE key IN ('generation', 'end')"
# `end` in himga_meta: the number past the newest turn ever deleted since the last reset (the
# store's high-water mark where its newest rows are gone; absent: the rows alone tell it).
_KEEP_END = """INSERT INTO himga_meta VALUES ('end', ?) ON CONFLICT (key) DO UPDATE
    SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))"""


def _loaded(rows: Sequence[Sequence[Any]], *, terms: bool) -> Loaded:
    """Rows of `_PLACES_OF` as the skeleton reads them in."""
    if not rows:
        return Loaded([], [], [], [], [], [], [], [] if terms else None)
    numbers, sessions, lengths, speakers, roles, times, metadata, contents = zip(*rows, strict=True)
    return Loaded(
        numbers,
        sessions,
        lengths,
        speakers,
        roles,
        times,
        [json.loads(m) if m else {} for m in metadata],
        terms_of(contents) if terms else None,
    )


def namespace_path(data_dir: Path, namespace: str) -> Path:
    """The database file of `namespace` in a server's data directory (see the module's text)."""
    return namespace_file(data_dir, "sqlite", namespace, ".sqlite3")
