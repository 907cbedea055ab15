"""SQLiteKeywordMemory: the shared keyword method (himga.memory.ranking) in a durable SQLite store.

One database per memory:
- `messages`: what was said, by whom (a `speakers` id), in which session (a `sessions` id) and
  at which place in it, when; and each turn's own length and window length
  (himga.memory.ranking). Ids follow the order of ingest;
- `turns_fts`: a contentless FTS5 table holding each turn's own terms (already stemmed by
  himga.memory.text, so FTS5's plain `ascii` tokenizer only splits on the spaces between them),
  read through the `turns_vocab` fts5vocab table as postings: which turns hold a term, how often;
- `totals`: the number of turns and the sum of their window lengths, for BM25's averages.

A search reads the postings of the query's terms, the windows around the turns holding them
(one join on an index of session and place), and ranks them with himga.memory.ranking.rank: the
same function and the same numbers as KeywordMemory, so both give the same hits and scores.
Queries never reach FTS5's query syntax: a query's terms are looked up as exact strings.

Durability: WAL journal, `synchronous=FULL`, one transaction per `ingest_many` call, so an
ingest that has returned is on disk (it survives SIGKILL, and power loss) and a failed one
leaves nothing behind. One lock serialises the connection's use, so threads may share it.

Layout of a server's data directory: `<data_dir>/sqlite/<namespace>-<hash>.sqlite3`, one
database per namespace. Each namespace then has its own BM25 statistics (a busy neighbour
does not shift another's scores), its own write lock (namespaces ingest in parallel), and
a reset that touches nothing else. The namespace is percent-encoded in the file name so a
person can tell the files apart; the hash of the exact name keeps names distinct where file
systems fold case or the encoded name had to be shortened.
"""

import hashlib
import json
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterable
from itertools import count
from pathlib import Path

from himga.data.schema import Message, Session
from himga.memory.base import DEFAULT_LIMIT, Hit
from himga.memory.context import ContextFromHits
from himga.memory.ranking import METHOD, NEAR_TURNS, Turns, is_named, rank, window_lengths
from himga.memory.text import query_terms

DATABASE_NAME = "memory.sqlite3"
_BUSY_TIMEOUT_MS = 10_000
CACHE_KIB = 65_536

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS himga_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS speakers (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS sessions (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions (id),
        place INTEGER NOT NULL,
        turn_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        date_str TEXT NOT NULL,
        speaker INTEGER NOT NULL REFERENCES speakers (id),
        length INTEGER NOT NULL,
        window INTEGER NOT NULL
    )""",
    # Covers the window join: a turn's neighbours, with their window lengths and speakers.
    "CREATE INDEX IF NOT EXISTS messages_in_session ON messages (session, place, window, speaker)",
    """CREATE TABLE IF NOT EXISTS totals (
        id INTEGER PRIMARY KEY CHECK (id = 0),
        turns INTEGER NOT NULL,
        length INTEGER NOT NULL
    )""",
    "INSERT OR IGNORE INTO totals VALUES (0, 0, 0)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5("
    "terms, content='', tokenize='ascii', columnsize=0)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS turns_vocab USING fts5vocab(turns_fts, instance)",
)
_POSTINGS = "SELECT doc, count(*) FROM turns_vocab WHERE term = ? GROUP BY doc"
_WINDOWS = f"""
    SELECT turn.id, near.id, near.window, near.speaker
    FROM messages AS turn JOIN messages AS near
        ON near.session = turn.session
        AND near.place BETWEEN turn.place - {NEAR_TURNS} AND turn.place + {NEAR_TURNS}
    WHERE turn.id IN (SELECT value FROM json_each(?))"""
# The last NEAR_TURNS turns of a session, latest first.
_TAIL = (
    "SELECT id, place, length FROM messages WHERE session = ? "
    f"ORDER BY place DESC LIMIT {NEAR_TURNS}"
)
_HITS = """
    SELECT messages.id, sessions.key, turn_id, role, content, date_str
    FROM messages JOIN sessions ON sessions.id = messages.session
    WHERE messages.id IN (SELECT value FROM json_each(?))"""


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
        # Up to CACHE_KIB of pages, taken only as the database grows: a search reads postings and
        # windows from all over the file, and at 100k turns the 2 MiB default measured slower.
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(_SCHEMA[0])
            found = db.execute("SELECT value FROM himga_meta WHERE key = 'method'").fetchone()
            if found is None:
                db.execute("INSERT INTO himga_meta VALUES ('method', ?)", (METHOD,))
            elif found[0] != METHOD:
                raise ValueError(
                    f"{self.path}: indexed with method {found[0]!r}, this himga uses {METHOD!r}; "
                    "ingest the messages again into a new database"
                )
            for statement in _SCHEMA[1:]:
                db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._version = -1
        self._speakers: dict[str, int] = {}
        self._sessions: dict[str, int] = {}
        self._refresh()

    def _refresh(self) -> None:
        """Drop what this connection caches if another connection has committed since."""
        (version,) = self._db.execute("PRAGMA data_version").fetchone()
        if version != self._version:
            self._version = version
            self._speakers = dict(self._db.execute("SELECT key, id FROM speakers"))
            self._sessions = {}

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
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                self._refresh()
                self._ids("speakers", self._speakers, turns.speakers)
                new = self._ids("sessions", self._sessions, turns.session_ids)
                self._insert(turns, new)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                self._version = -1  # the caches may hold ids that were rolled back
                raise
        return len(turns)

    def _ids(self, table: str, known: dict[str, int], keys: Iterable[str]) -> set[str]:
        """Put the ids of `keys` in `table` (speakers or sessions) into `known`, adding the
        missing rows in the order given (sessions are numbered in order of first use); return
        the keys added."""
        missing = [key for key in dict.fromkeys(keys) if key not in known]
        if not missing:
            return set()
        select = f"SELECT key, id FROM {table} WHERE key IN (SELECT value FROM json_each(?))"
        known.update(self._db.execute(select, (json.dumps(missing),)))
        added = [key for key in missing if key not in known]
        if added:
            insert = f"INSERT INTO {table} (key) VALUES (?)"
            self._db.executemany(insert, [(key,) for key in added])
            known.update(self._db.execute(select, (json.dumps(added),)))
        return set(added)

    def _insert(self, turns: Turns, new_sessions: set[str]) -> None:
        db = self._db
        (last,) = db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
        by_session: dict[str, list[int]] = {}
        for index, session_id in enumerate(turns.session_ids):
            by_session.setdefault(session_id, []).append(index)
        lengths = list(map(len, turns.terms))
        sessions = [0] * len(lengths)
        places = [0] * len(lengths)
        windows = [0] * len(lengths)
        gained: list[tuple[int, int]] = []
        added = 0
        for session_id, indexes in by_session.items():
            session = self._sessions[session_id]
            # The session's last NEAR_TURNS turns gain the new ones as later neighbours.
            tail = [] if session_id in new_sessions else db.execute(_TAIL, (session,)).fetchall()
            tail.reverse()
            gains, session_windows = window_lengths(
                [length for _, _, length in tail], [lengths[i] for i in indexes]
            )
            gained.extend((gain, i) for (i, _, _), gain in zip(tail, gains, strict=True) if gain)
            start = tail[-1][1] + 1 if tail else 0
            for place, index, window in zip(count(start), indexes, session_windows):
                sessions[index] = session
                places[index] = place
                windows[index] = window
            added += sum(gains) + sum(session_windows)
        ids = range(last + 1, last + 1 + len(lengths))
        speakers = map(self._speakers.__getitem__, turns.speakers)
        said = (turns.turn_ids, turns.roles, turns.contents, turns.date_strs, speakers)
        messages = zip(ids, sessions, places, *said, lengths, windows, strict=True)
        db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", messages)
        db.executemany("UPDATE messages SET window = window + ? WHERE id = ?", gained)
        indexed = ((i, " ".join(own)) for i, own in zip(ids, turns.terms, strict=True) if own)
        db.executemany("INSERT INTO turns_fts (rowid, terms) VALUES (?, ?)", indexed)
        totals = (len(lengths), added)
        db.execute("UPDATE totals SET turns = turns + ?, length = length + ?", totals)

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        asked = set(wanted)
        with self._lock:
            db = self._db
            self._refresh()
            postings = [found for term in wanted if (found := dict(db.execute(_POSTINGS, (term,))))]
            if not postings:
                return []
            named = {i for key, i in self._speakers.items() if is_named(key, asked)}
            windows: dict[int, list[int]] = {}
            lengths: dict[int, int] = {}
            boosted = set()
            holding = json.dumps(list(set().union(*postings)))
            for turn, near, window, speaker in db.execute(_WINDOWS, (holding,)):
                windows.setdefault(turn, []).append(near)
                lengths[near] = window
                if speaker in named:
                    boosted.add(near)
            (turns, total_length) = db.execute("SELECT turns, length FROM totals").fetchone()
            best = rank(postings, windows, lengths, turns, total_length, boosted, limit)
            chosen = json.dumps([number for number, _ in best])
            found = {row[0]: row[1:] for row in db.execute(_HITS, (chosen,))}
        hits = []
        for number, score in best:
            session_id, turn_id, role, content, date_str = found[number]
            hits.append(Hit(turn_id, session_id, role, content, date_str, score))
        return hits

    def reset(self) -> None:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                for table in ("messages", "speakers", "sessions"):
                    db.execute(f"DELETE FROM {table}")
                db.execute("UPDATE totals SET turns = 0, length = 0")
                db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('delete-all')")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            finally:
                self._version = -1
            self._refresh()


def namespace_path(data_dir: Path, namespace: str) -> Path:
    """The database file of `namespace` in a server's data directory (see the module's text)."""
    readable = urllib.parse.quote(namespace, safe="")[:80]
    digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:16]
    return Path(data_dir) / "sqlite" / f"{readable}-{digest}.sqlite3"
