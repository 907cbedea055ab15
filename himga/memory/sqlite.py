"""SQLiteKeywordMemory: the shared keyword method (himga.memory.ranking) in a durable SQLite store.

One database per memory: a `messages` table (what was said, by whom, in which session, when), a
`speakers` table, and a contentless FTS5 table `turns_fts(own, near, speaker)` whose rows are
the messages' index fields (terms already stemmed by himga.memory.text, so FTS5's plain `ascii`
tokenizer only splits on the spaces between them). Turns rank by `bm25(1.0, 0.5, 0.0)`:
OWN_WEIGHT, NEAR_WEIGHT, and nothing for the speaker token, which is there only to select the
turns of speakers a query names.

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
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterable, Sequence
from pathlib import Path

from himga.data.schema import Message, Session
from himga.memory.base import DEFAULT_LIMIT, Hit
from himga.memory.context import ContextFromHits
from himga.memory.ranking import (
    NEAR_TURNS,
    NEAR_WEIGHT,
    OWN_WEIGHT,
    SPEAKER_BOOST,
    Turn,
    is_named,
    near_terms,
)
from himga.memory.text import query_terms, terms

# Written into each database; a database indexed by another method is refused, not misread.
METHOD = (
    f"terms: porter, stopwords; fields: own {OWN_WEIGHT}, near {NEAR_TURNS} turns {NEAR_WEIGHT}; "
    f"speaker x{1 + SPEAKER_BOOST}"
)
DATABASE_NAME = "memory.sqlite3"
_BUSY_TIMEOUT_MS = 10_000
CACHE_KIB = 65_536

# bm25() named in the query rather than FTS5's `rank` column: measured faster at 100k turns.
# Ties go to the earlier turn, as in KeywordMemory, whatever the LIMIT.
_SELECT = (
    f"SELECT rowid, -bm25(turns_fts, {OWN_WEIGHT}, {NEAR_WEIGHT}, 0.0) AS score FROM turns_fts "
    "WHERE turns_fts MATCH ? ORDER BY score DESC, rowid LIMIT ?"
)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS himga_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS speakers (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        date_str TEXT NOT NULL,
        speaker INTEGER NOT NULL REFERENCES speakers (id)
    )""",
    "CREATE INDEX IF NOT EXISTS messages_by_session ON messages (session_id, id)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5("
    "own, near, speaker, content='', tokenize='ascii')",
)


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
        # Up to CACHE_KIB of pages, taken only as the database grows: ranking reads every matching
        # row's size, and at 100k turns (a 46 MB file) the 2 MiB default measured slower.
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                db.execute(statement)
            found = db.execute("SELECT value FROM himga_meta WHERE key = 'method'").fetchone()
            if found is None:
                db.execute("INSERT INTO himga_meta VALUES ('method', ?)", (METHOD,))
            elif found[0] != METHOD:
                raise ValueError(
                    f"{self.path}: indexed with method {found[0]!r}, this himga uses {METHOD!r}; "
                    "ingest the messages again into a new database"
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._speakers: dict[str, int] = dict(db.execute("SELECT key, id FROM speakers"))

    def close(self) -> None:
        """Close the database; the memory is unusable afterwards."""
        with self._lock:
            self._db.close()

    def ingest(self, message: Message, session: Session) -> None:
        self.ingest_many([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        """Store every item in one transaction: all of them are on disk when this returns, or
        (on any error) none."""
        rows = [Turn.of(message, session) for message, session in items]
        if not rows:
            return 0
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                speakers = self._speaker_ids({row.speaker for row in rows})
                self._insert(rows, speakers)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._speakers.update(speakers)
        return len(rows)

    def _speaker_ids(self, keys: set[str]) -> dict[str, int]:
        ids = {key: self._speakers[key] for key in keys if key in self._speakers}
        for key in keys - ids.keys():
            self._db.execute("INSERT OR IGNORE INTO speakers (key) VALUES (?)", (key,))
            (ids[key],) = self._db.execute(
                "SELECT id FROM speakers WHERE key = ?", (key,)
            ).fetchone()
        return ids

    def _insert(self, rows: list[Turn], speakers: dict[str, int]) -> None:
        db = self._db
        (last,) = db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
        ids = range(last + 1, last + 1 + len(rows))
        db.executemany(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (i, r.session_id, r.turn_id, r.role, r.content, r.date_str, speakers[r.speaker])
                for i, r in zip(ids, rows, strict=True)
            ],
        )
        by_session: dict[str, list[tuple[int, list[str], int]]] = {}
        for i, r in zip(ids, rows, strict=True):
            by_session.setdefault(r.session_id, []).append((i, r.terms, speakers[r.speaker]))
        removals: list[tuple[int, str, str, str]] = []
        additions: list[tuple[int, str, str, str]] = []
        for session_id, new in by_session.items():
            # The turns already stored just before this batch: the last NEAR_TURNS of them gain
            # later neighbours, and their old fields need the NEAR_TURNS before them.
            tail = [
                (i, terms(content), speaker)
                for i, content, speaker in db.execute(
                    "SELECT id, content, speaker FROM messages WHERE session_id = ? AND id <= ? "
                    "ORDER BY id DESC LIMIT ?",
                    (session_id, last, 2 * NEAR_TURNS),
                )
            ][::-1]
            before = [t for _, t, _ in tail]
            window = before + [t for _, t, _ in new]
            for position in range(max(0, len(tail) - NEAR_TURNS), len(tail)):
                i, own, speaker = tail[position]
                removals.append(_fields(i, own, near_terms(before, position), speaker))
                additions.append(_fields(i, own, near_terms(window, position), speaker))
            for offset, (i, own, speaker) in enumerate(new):
                additions.append(_fields(i, own, near_terms(window, len(tail) + offset), speaker))
        db.executemany(
            "INSERT INTO turns_fts (turns_fts, rowid, own, near, speaker) "
            "VALUES ('delete', ?, ?, ?, ?)",
            removals,
        )
        db.executemany(
            "INSERT INTO turns_fts (rowid, own, near, speaker) VALUES (?, ?, ?, ?)", additions
        )

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        match = "{own near} : (" + " OR ".join(f'"{term}"' for term in wanted) + ")"
        asked = set(wanted)
        with self._lock:
            named = {i for key, i in self._speakers.items() if is_named(key, asked)}
            scores = dict(self._db.execute(_SELECT, (match, limit)))
            if named:
                # The best turns of the named speakers, which the boost may lift above the rest.
                tokens = " OR ".join(f'"s{i}"' for i in sorted(named))
                scores.update(
                    self._db.execute(_SELECT, (f"{match} AND speaker : ({tokens})", limit))
                )
            if not scores:
                return []
            marks = ",".join("?" * len(scores))
            found = self._db.execute(
                "SELECT id, session_id, turn_id, role, content, date_str, speaker FROM messages "
                f"WHERE id IN ({marks})",
                list(scores),
            ).fetchall()
        ranked = []
        for i, session_id, turn_id, role, content, date_str, speaker in found:
            score = scores[i] * (1 + SPEAKER_BOOST if speaker in named else 1)
            ranked.append((-score, i, Hit(turn_id, session_id, role, content, date_str, score)))
        ranked.sort(key=lambda item: (item[0], item[1]))
        return [hit for _, _, hit in ranked[:limit]]

    def reset(self) -> None:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM messages")
                db.execute("DELETE FROM speakers")
                db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('delete-all')")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._speakers = {}


def namespace_path(data_dir: Path, namespace: str) -> Path:
    """The database file of `namespace` in a server's data directory (see the module's text)."""
    readable = urllib.parse.quote(namespace, safe="")[:80]
    digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:16]
    return Path(data_dir) / "sqlite" / f"{readable}-{digest}.sqlite3"


def _fields(
    i: int, own: Sequence[str], near: Sequence[str], speaker: int
) -> tuple[int, str, str, str]:
    return (i, " ".join(own), " ".join(near), f"s{speaker}")
