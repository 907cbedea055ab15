"""SQLiteKeywordMemory: the shared keyword method (himga.memory.ranking) in a durable SQLite store.

One database per memory:
- `messages`: what was said (turn_id, role, content), by whom (a `speakers` id), in which
  session (a `sessions` id) and when, and how many terms it has. Ids follow the order of ingest.
- `turns_fts`: a contentless FTS5 table holding each turn's own terms (already stemmed by
  himga.memory.text, so FTS5's plain `ascii` tokenizer only splits on the spaces between them),
  read through the `turns_vocab` fts5vocab table as postings: which turns hold a term, how often.

Where each turn sits in its session (himga.memory.windows) is derived from `messages` when the
memory opens and kept in process memory (about 20 bytes a turn), and so are the postings
(himga.memory.postings, 4 bytes a stored term), read from `turns_vocab` in one pass (about 8 s
for both, a million turns): a search reads nothing from the database but its hits. Rows are
only ever appended, or all deleted by `reset`, which also bumps a `generation` in `himga_meta`;
another connection's commits are noticed (`PRAGMA data_version`) and read in before the next
call (their turns' terms from their content).
Queries never reach FTS5's query syntax: a query's terms are looked up as exact strings.

Durability: WAL journal, `synchronous=FULL`, one transaction per `ingest_many` call, so an
ingest that has returned is on disk (it survives SIGKILL, and power loss) and a failed one
leaves nothing behind. One lock serialises the connection's use, so threads may share it.

Layout of a server's data directory: `<data_dir>/sqlite/<namespace>-<hash>.sqlite3`, one
database per namespace (named by himga.memory.registry.namespace_file). Each namespace then has
its own BM25 statistics (a busy neighbour does not shift another's scores), its own write lock
(namespaces ingest in parallel), and a reset that touches nothing else.
"""

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from himga.data.conversation import Message, Session
from himga.errors import IncompatibleStoreError
from himga.memory.base import DEFAULT_LIMIT, Hit
from himga.memory.context import ContextFromHits
from himga.memory.postings import Postings
from himga.memory.ranking import METHOD, Turns
from himga.memory.registry import namespace_file
from himga.memory.text import query_terms, terms_of
from himga.memory.windows import Windows

DATABASE_NAME = "memory.sqlite3"
_BUSY_TIMEOUT_MS = 10_000
CACHE_KIB = 65_536
_LOAD_ROWS = 10_000
AUTOMERGE = 8

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS himga_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT OR IGNORE INTO himga_meta VALUES ('generation', '0')",
    "CREATE TABLE IF NOT EXISTS speakers (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS sessions (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions (id),
        speaker INTEGER NOT NULL REFERENCES speakers (id),
        length INTEGER NOT NULL,
        turn_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        date_str TEXT NOT NULL
    )""",
    "CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5("
    "terms, content='', tokenize='ascii', columnsize=0)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS turns_vocab USING fts5vocab(turns_fts, instance)",
    # FTS5 merges its segments when AUTOMERGE of them are on one level (default 4): 8 measured
    # 5% faster batch ingest at 10k and 100k turns, with no slower searches.
    f"INSERT INTO turns_fts (turns_fts, rank) VALUES ('automerge', {AUTOMERGE})",
)
# Every term's postings, as turn numbers (FTS5 rowids are message ids, from 1; turns count from
# 0), one per occurrence: what a memory opening reads into its Postings.
_ALL_POSTINGS = "SELECT term, group_concat(doc - 1, ' ') FROM turns_vocab GROUP BY term"
# What turns after the first `?` said: their terms, for the Postings, when another connection
# has added them (cheaper than reading all of turns_vocab again).
_CONTENTS = "SELECT content FROM messages WHERE id > ? ORDER BY id"
# Each turn's place, for Windows: the rows after the first `?`, in order.
_PLACES = """
    SELECT messages.session, messages.length, speakers.key
    FROM messages JOIN speakers ON speakers.id = messages.speaker
    WHERE messages.id > ? ORDER BY messages.id"""
# The hits' rows, by id: one `?` an id (three times faster than ids in json_each at 20k turns).
_HITS = """
    SELECT messages.id, turn_id, sessions.key, role, content, date_str
    FROM messages JOIN sessions ON sessions.id = messages.session
    WHERE messages.id IN ({})"""


class SQLiteKeywordMemory(ContextFromHits):
    """BM25 over each turn and its neighbours in SQLite FTS5; in memory when `path` is None.

    `path` is a database file (created with its parent directories if missing) or an existing
    directory, which then holds DATABASE_NAME.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self._lock = threading.Lock()
        if path is None or str(path) == ":memory:":
            self.path: Path | None = None
            target = ":memory:"
        else:
            self.path = Path(path)
            if self.path.is_dir():
                self.path = self.path / DATABASE_NAME
            self.path.parent.mkdir(parents=True, exist_ok=True)
            target = str(self.path)
        self._db = sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=_BUSY_TIMEOUT_MS / 1000
        )
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
        with self._transaction("IMMEDIATE"):
            db.execute(_SCHEMA[0])
            found = db.execute("SELECT value FROM himga_meta WHERE key = 'method'").fetchone()
            if found is None:
                db.execute("INSERT INTO himga_meta VALUES ('method', ?)", (METHOD,))
            elif found[0] != METHOD:
                name = self.path.name if self.path else "database"
                raise IncompatibleStoreError(
                    f"{name}: indexed with method {found[0]!r}, this himga uses {METHOD!r}; "
                    "move the file away (or delete it) and ingest the messages again"
                )
            for statement in _SCHEMA[1:]:
                db.execute(statement)
            self._refresh()

    @contextmanager
    def _transaction(self, mode: str = "DEFERRED") -> Iterator[None]:
        """One transaction: every read in it sees one state of the database; on any error it
        rolls back, and what this connection caches is read again on its next call."""
        self._db.execute(f"BEGIN {mode}")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            self._version = None
            raise
        self._db.execute("COMMIT")

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
        if generation != self._generation:  # a reset (or the first look): start again
            self._windows = Windows()
            self._postings = Postings()
            self._generation = generation
        self._speakers: dict[str, int] = dict(db.execute("SELECT key, id FROM speakers"))
        self._sessions: dict[str, int] = {}
        self._read_postings(len(self._windows))
        cursor = db.execute(_PLACES, (len(self._windows),))
        while rows := cursor.fetchmany(_LOAD_ROWS):
            sessions, lengths, speakers = zip(*rows, strict=True)
            self._windows.add(sessions, lengths, speakers)
        self._version = version

    def _read_postings(self, first: int) -> None:
        """Read the postings of the turns numbered from `first` on into the Postings: all of
        turns_vocab for a memory that holds none, else the new turns' terms."""
        if first == 0:
            for term, numbers in self._db.execute(_ALL_POSTINGS):
                self._postings.extend(term, numbers)
        else:
            contents = [content for (content,) in self._db.execute(_CONTENTS, (first,))]
            self._postings.add(first, terms_of(contents))

    def close(self) -> None:
        """Close the database; the memory is unusable afterwards."""
        with self._lock:
            self._db.close()

    def ingest(self, message: Message, session: Session) -> None:
        self.ingest_many([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        """Store every item in one transaction: all of them are on disk when this returns, or
        (on any error) none."""
        turns = Turns.of(items)
        if not turns:
            return 0
        with self._lock:
            with self._transaction("IMMEDIATE"):
                self._refresh()  # the write lock is held: numbers cannot change under us
                self._ids("speakers", self._speakers, turns.speakers)
                self._ids("sessions", self._sessions, turns.session_ids)
                sessions, lengths = self._insert(turns)
            try:
                self._postings.add(len(self._windows), turns.terms)
                self._windows.add(sessions, lengths, turns.speakers)
            except BaseException:  # committed but not placed: read it all again next time
                self._version = self._generation = None
                raise
        return len(turns)

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

    def _insert(self, turns: Turns) -> tuple[list[int], list[int]]:
        """Write the rows of `turns`; return their session ids and lengths."""
        first = len(self._windows) + 1  # ids are dense: rows are only appended or all deleted
        ids = range(first, first + len(turns))
        sessions = list(map(self._sessions.__getitem__, turns.session_ids))
        speakers = map(self._speakers.__getitem__, turns.speakers)
        lengths = list(map(len, turns.terms))
        said = (turns.turn_ids, turns.roles, turns.contents, turns.date_strs)
        messages = zip(ids, sessions, speakers, lengths, *said, strict=True)
        self._db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", messages)
        indexed = ((i, " ".join(own)) for i, own in zip(ids, turns.terms, strict=True) if own)
        self._db.executemany("INSERT INTO turns_fts (rowid, terms) VALUES (?, ?)", indexed)
        return sessions, lengths

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        with self._lock, self._transaction():
            db = self._db
            self._refresh()
            best = self._windows.best(self._postings.of(wanted), set(wanted), limit)
            if not best:
                return []
            chosen = [number + 1 for number, _ in best]
            rows = db.execute(_HITS.format(",".join("?" * len(chosen))), chosen)
            said: dict[int, tuple[str, str, str, str, str]] = {
                i - 1: tuple(row) for i, *row in rows
            }
        return [Hit(*said[number], score) for number, score in best]

    def reset(self) -> None:
        with self._lock:
            with self._transaction("IMMEDIATE"):
                for table in ("messages", "speakers", "sessions"):
                    self._db.execute(f"DELETE FROM {table}")
                self._db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('delete-all')")
                self._db.execute(
                    "UPDATE himga_meta SET value = CAST(value AS INTEGER) + 1 "
                    "WHERE key = 'generation'"
                )
            self._version = None
            with self._transaction():
                self._refresh()


def namespace_path(data_dir: Path, namespace: str) -> Path:
    """The database file of `namespace` in a server's data directory (see the module's text)."""
    return namespace_file(data_dir, "sqlite", namespace, ".sqlite3")
