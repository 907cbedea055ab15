"""SQLiteKeywordMemory: the shared keyword method (himga.memory.ranking) in a durable SQLite store.

One database per memory (its tables, format version and migrations: himga.memory.sqlite_schema):
- `messages`: each stored message under its id (`turn_id`), what was said, by whom (a
  `speakers` id), in which session (a `sessions` id), when, with what metadata, and how many
  terms it has. Row ids are turn numbers + 1, in the order ids were first stored.
- `turns_fts`: a contentless FTS5 table holding each turn's own terms, read through the
  `turns_vocab` fts5vocab table as postings: which turns hold a term, how often. A replaced or
  deleted turn's terms are taken out with FTS5's `delete` command, given the terms it was
  indexed with (its stored text, turned into terms again by the same method; the database
  records the method, so they are the same).

Where each turn sits in its session (himga.memory.windows), what filters read of it
(himga.memory.facets) and the postings (himga.memory.postings, 4 bytes a stored term), kept
together by himga.memory.derived (which the PostgreSQL memory shares), are derived from the
database when the memory opens (the postings read from `turns_vocab` in one pass) and kept in
process memory, so a search reads nothing from the database but its hits,
and a filter costs no query. Appended rows are read in incrementally (their terms from their
content); anything else (a reset, a delete, a replacement) bumps a `generation` in
`himga_meta`, and another connection that sees it reads everything again before its next call
(`PRAGMA data_version` tells it that something was committed); this connection's own deletes
and replacements update its postings and Windows in place, under its lock. Queries never
reach FTS5's query syntax: a query's terms are looked up as exact strings.

Durability: WAL journal, `synchronous=FULL`, one transaction per call that writes, so a store or
delete that has returned is on disk (it survives SIGKILL, and power loss) and a failed one
leaves nothing behind. One lock serialises the connection's use, so threads may share it.
Just before COMMIT a write asks `himga.memory.commit.before_commit` whether it is still wanted
(a server's caller may have gone: it then rolls back) and writes the receipt of its request id
in `himga_receipts`, in the same transaction. A store that has its schema opens by reading
alone, so it can be read on a full disk. The file is created 0600 (himga.storage.files), and
SQLite gives its -wal and -shm files the same mode.

Layout of a server's data directory: `<data_dir>/sqlite/<namespace>-<hash>.sqlite3`, one
database per namespace (named by himga.memory.registry.namespace_file). Each namespace then has
its own BM25 statistics (a busy neighbour does not shift another's scores), its own write lock
(namespaces ingest in parallel), and a reset that touches nothing else.
"""

import builtins
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from himga.data.conversation import Message, Session
from himga.memory import commit
from himga.memory.base import (
    DEFAULT_LIMIT,
    DEFAULT_PAGE_SIZE,
    Hit,
    Page,
    StoredMessage,
    hit_of,
)
from himga.memory.context import ContextFromHits
from himga.memory.derived import DerivedIndex, said_columns, stored_of
from himga.memory.filters import MessageFilter, deletion
from himga.memory.ranking import Turns
from himga.memory.registry import namespace_file
from himga.memory.sqlite_schema import (
    bump_generation,
    is_current,
    keep_receipt,
    open_store,
    read_receipt,
)
from himga.memory.text import query_terms, terms_of
from himga.storage.files import create_private
from himga.storage.sqlite import connect

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
# What turns after the first `?` said: their numbers and terms, for the Postings, when another
# connection has added them (cheaper than reading all of turns_vocab again).
_CONTENTS = "SELECT id - 1, content FROM messages WHERE id > ? ORDER BY id"
# Each turn's place and facets, for Windows and Facets: the rows after the first `?`, in order.
_PLACES = """
    SELECT messages.id - 1, sessions.key, messages.length, speakers.key, role, time, metadata
    FROM messages
    JOIN speakers ON speakers.id = messages.speaker
    JOIN sessions ON sessions.id = messages.session
    WHERE messages.id > ? ORDER BY messages.id"""
# What a StoredMessage holds, by rows; the FROM clause is added where it is used.
_STORED = """
    SELECT messages.id - 1, turn_id, sessions.key, role, content, date_str, time, timestamp,
        session_timestamp, metadata
    FROM messages JOIN sessions ON sessions.id = messages.session"""
# By ids: one `?` an id (three times faster than ids in json_each at 20k turns), up to
# _MOST_VARIABLES ids; more (a search with a large limit) go through json_each, as SQLite caps
# the number of `?` in a statement (32766 by default).
_BY_IDS = f"{_STORED} WHERE messages.id IN ({{}})"
_BY_JSON_IDS = f"{_STORED} WHERE messages.id IN (SELECT value FROM json_each(?))"
_MOST_VARIABLES = 1000
_PAGE = f"{_STORED} WHERE messages.id > ? ORDER BY messages.id LIMIT ?"
_INSERT = """
    INSERT INTO messages (id, session, speaker, length, turn_id, role, content, date_str,
        timestamp, session_timestamp, time, metadata)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_UPDATE = """
    UPDATE messages SET session = ?, speaker = ?, length = ?, turn_id = ?, role = ?, content = ?,
        date_str = ?, timestamp = ?, session_timestamp = ?, time = ?, metadata = ?
    WHERE id = ?"""


class SQLiteKeywordMemory(ContextFromHits):
    """BM25 over each turn and its neighbours in SQLite FTS5; in memory when `path` is None.

    `path` is a database file (created with its parent directories if missing) or an existing
    directory, which then holds DATABASE_NAME. A database written by an earlier himga is
    migrated in place when it opens (himga.memory.sqlite_schema).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self._lock = threading.Lock()
        if path is None or str(path) == ":memory:":
            self.path: Path | None = None
        else:
            self.path = Path(path)
            if self.path.is_dir():
                self.path = self.path / DATABASE_NAME
            # Created 0600 before SQLite opens it: its -wal and -shm files take its mode.
            create_private(self.path)
        # WAL, and on a full disk (no room for -shm) the log's index in memory instead.
        self._db = connect(self.path, _BUSY_TIMEOUT_MS / 1000)
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def for_namespace(cls, namespace: str, data_dir: Path | None) -> "SQLiteKeywordMemory":
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
        # from all over the file, and at 100k turns the 2 MiB default measured slower.
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self._version: int | None = None
        self._generation: str | None = None
        self._index = DerivedIndex()
        # A store of this format and method is opened by reading alone (it opens on a full disk).
        with self._transaction():
            if is_current(db):
                self._refresh()
                return
        with self._transaction("IMMEDIATE"):
            open_store(db, self.path.name if self.path else "database")
            # FTS5 merges its segments when AUTOMERGE of them are on one level (default 4): 8
            # measured 5% faster batch ingest at 10k and 100k turns, with no slower searches.
            db.execute(f"INSERT INTO turns_fts (turns_fts, rank) VALUES ('automerge', {AUTOMERGE})")
            self._refresh()

    @contextmanager
    def _transaction(self, mode: str = "DEFERRED") -> Iterator[None]:
        """One transaction: every read in it sees one state of the database; on any error it
        rolls back, and what this connection caches is read again on its next call. A COMMIT
        that fails (a full disk) leaves SQLite's transaction open: it is rolled back too."""
        self._db.execute(f"BEGIN {mode}")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            self._version = self._generation = None
            if self._db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                self._db.execute("ROLLBACK")
            raise

    def _refresh(self) -> None:
        """Read in what other connections have committed since this one last looked (called in
        a transaction)."""
        db = self._db
        (version,) = db.execute("PRAGMA data_version").fetchone()
        if version == self._version:
            return
        (generation,) = db.execute(
            "SELECT value FROM himga_meta WHERE key = 'generation'"
        ).fetchone()
        if generation != self._generation:  # not only appended rows (or the first look): anew
            self._index.clear()
            self._generation = generation
        self._speakers: dict[str, int] = dict(db.execute("SELECT key, id FROM speakers"))
        self._sessions: dict[str, int] = {}
        self._read_postings(self._index.end)
        cursor = db.execute(_PLACES, (self._index.end,))
        while rows := cursor.fetchmany(_LOAD_ROWS):
            numbers, sessions, lengths, speakers, roles, times, metadata = zip(*rows, strict=True)
            pairs = [json.loads(m) if m else {} for m in metadata]
            self._index.load(numbers, sessions, lengths, speakers, roles, times, pairs)
        self._version = version

    @property
    def durable(self) -> bool:
        return self.path is not None

    def _read_postings(self, first: int) -> None:
        """Read the postings of the turns numbered from `first` on into the Postings: all of
        turns_vocab for a memory that holds none, else the new turns' terms."""
        if first == 0:
            for term, numbers in self._db.execute(_ALL_POSTINGS):
                self._index.postings.extend(term, numbers)
        else:
            rows = self._db.execute(_CONTENTS, (first,)).fetchall()
            if rows:
                numbers, contents = zip(*rows, strict=True)
                self._index.postings.add_at(numbers, terms_of(contents))

    def close(self) -> None:
        """Close the database; the memory is unusable afterwards."""
        with self._lock:
            self._db.close()

    def ingest(self, message: Message, session: Session) -> None:
        self.store([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        return len(self.store(items))

    def store(self, items: Iterable[tuple[Message, Session]]) -> builtins.list[str]:
        """Store every item in one transaction: all of them are on disk when this returns, or
        (on any error) none. A message whose id is stored replaces it, in its place."""
        turns = Turns.of(items)
        if not turns:
            return turns.item_ids
        with self._lock:
            with self._transaction("IMMEDIATE"):
                self._refresh()  # the write lock is held: numbers cannot change under us
                self._ids("speakers", self._speakers, turns.speakers)
                self._ids("sessions", self._sessions, turns.session_ids)
                placing = self._index.placing(turns, self._numbers(turns.turn_ids))
                old_terms: builtins.list[builtins.list[str]] = []
                if placing.replaced:
                    old_terms = self._unindex(placing.replaced_numbers)
                    generation = bump_generation(self._db)
                self._write(turns, placing.numbers, set(placing.replaced_numbers))
                commit.before_commit(self._keep_receipt, turns.item_ids)
            try:
                if placing.replaced:
                    self._generation = generation
                self._index.place(turns, placing, old_terms)
            except BaseException:  # committed but not placed: read it all again next time
                self._version = self._generation = None
                raise
        return turns.item_ids

    def _numbers(self, ids: Sequence[str]) -> dict[str, int]:
        """The turn numbers of those of `ids` that are stored."""
        select = (
            "SELECT turn_id, id - 1 FROM messages WHERE turn_id IN (SELECT value FROM json_each(?))"
        )
        return dict(self._db.execute(select, (json.dumps(list(ids)),)))

    def receipt(self, request_id: str) -> commit.Receipt | None:
        """The receipt of the write made with `request_id` within the receipt window, if any."""
        with self._lock, self._transaction():
            return read_receipt(self._db, request_id)

    def _keep_receipt(self, receipt: commit.Receipt) -> None:
        keep_receipt(self._db, receipt)

    def _ids(self, table: str, known: dict[str, int], keys: Iterable[str]) -> None:
        """Put the ids of `keys` in `table` (speakers or sessions) into `known`, adding the
        missing rows in the order given (sessions are numbered in order of first use)."""
        missing = [key for key in dict.fromkeys(keys) if key not in known]
        if not missing:
            return
        select = f"SELECT key, id FROM {table} WHERE key IN (SELECT value FROM json_each(?))"
        known.update(self._db.execute(select, (json.dumps(missing),)))
        added = [key for key in missing if key not in known]
        if added:
            insert = f"INSERT INTO {table} (key) VALUES (?)"
            self._db.executemany(insert, [(key,) for key in added])
            known.update(self._db.execute(select, (json.dumps(added),)))

    def _write(self, turns: Turns, numbers: Sequence[int], replaced: set[int]) -> None:
        """Write the rows of `turns` under their turn numbers: an update for the numbers in
        `replaced`, an insert for the others; and index their terms."""
        rows = zip(
            [n + 1 for n in numbers],
            map(self._sessions.__getitem__, turns.session_ids),
            map(self._speakers.__getitem__, turns.speakers),
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
            (n + 1, " ".join(own)) for n, own in zip(numbers, turns.terms, strict=True) if own
        )
        self._db.executemany("INSERT INTO turns_fts (rowid, terms) VALUES (?, ?)", indexed)

    def _unindex(self, numbers: Sequence[int]) -> builtins.list[builtins.list[str]]:
        """Take the terms of stored turns out of the index: FTS5's `delete` for a contentless
        table, given the terms each turn was indexed with (made again from its stored text).
        Return those terms, one list for each of `numbers`, for the Postings."""
        select = "SELECT id, content FROM messages WHERE id IN (SELECT value FROM json_each(?))"
        rows = self._db.execute(select, (json.dumps([n + 1 for n in numbers]),)).fetchall()
        by_id = dict(
            zip([i for i, _ in rows], terms_of([content for _, content in rows]), strict=True)
        )
        self._db.executemany(
            "INSERT INTO turns_fts (turns_fts, rowid, terms) VALUES ('delete', ?, ?)",
            [(i, " ".join(own)) for i, own in by_id.items() if own],
        )
        return [by_id.get(n + 1, []) for n in numbers]

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        with self._lock, self._transaction():
            self._refresh()
            best = self._index.best(wanted, limit, filter)
            if not best:
                return []
            stored = self._stored([number for number, _ in best])
        return [hit_of(stored[number], score) for number, score in best]

    def _stored(self, numbers: Sequence[int]) -> dict[int, StoredMessage]:
        """The stored messages of these turn numbers, by number."""
        chosen = [number + 1 for number in numbers]
        if len(chosen) > _MOST_VARIABLES:
            rows = self._db.execute(_BY_JSON_IDS, (json.dumps(chosen),))
        else:
            rows = self._db.execute(_BY_IDS.format(",".join("?" * len(chosen))), chosen)
        return {row[0]: stored_of(row) for row in rows}

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        wanted, chosen = deletion(ids, filter)
        with self._lock:
            with self._transaction("IMMEDIATE"):
                self._refresh()
                known = sorted(self._numbers(sorted(wanted)).values()) if wanted else None
                numbers = self._index.deletable(known, chosen)
                old_terms: builtins.list[builtins.list[str]] = []
                if numbers:
                    old_terms = self._unindex(numbers)
                    self._db.execute(
                        "DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps([n + 1 for n in numbers]),),
                    )
                    generation = bump_generation(self._db)
                # Even when nothing matched: a retry of this delete then answers 0 again.
                commit.before_commit(self._keep_receipt, len(numbers))
            if not numbers:
                return 0
            try:
                self._generation = generation
                return self._index.drop(numbers, old_terms)
            except BaseException:  # committed but not placed: read it all again next time
                self._version = self._generation = None
                raise

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        with self._lock, self._transaction():
            self._refresh()
            return self._index.page(
                filter,
                page_size,
                page_token,
                lambda after, count: self._db.execute(_PAGE, (after + 1, count)).fetchall(),
                self._stored,
            )

    def reset(self) -> None:
        with self._lock:
            with self._transaction("IMMEDIATE"):
                for table in ("messages", "speakers", "sessions"):
                    self._db.execute(f"DELETE FROM {table}")
                self._db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('delete-all')")
                bump_generation(self._db)
            self._version = None
            with self._transaction():
                self._refresh()


def namespace_path(data_dir: Path, namespace: str) -> Path:
    """The database file of `namespace` in a server's data directory (see the module's text)."""
    return namespace_file(data_dir, "sqlite", namespace, ".sqlite3")
