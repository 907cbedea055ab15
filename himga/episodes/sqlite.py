"""SQLiteEpisodes: the episodes of one namespace in a durable SQLite database.

Tables:
- `episodes`: each episode's wire form (`document`, as recorded), the columns ListEpisodes
  filters and orders on (time in microseconds, task_id, agent, phase, outcome), its access
  statistics (kept apart from the document, which a retrieval does not rewrite), and the
  features the ranking reads (`features`: JSON with the terms already stemmed).
- `episode_files`: (path, id) of every file an episode read, modified or names in its context,
  for ListEpisodes' file filter.
- `episode_vectors`: with an embedding model (the `embedding_model` option), each episode's
  vector (float32) and the id of the model that made it, written and deleted in the episode's
  own transaction. Opened with another model (or none before), the episodes without a vector of
  this one are embedded when the store opens, and the other model's vectors replaced: vectors of
  two models never meet.

The EpisodeIndex is rebuilt from `features` when the store opens (no text is stemmed again) and
kept up to date by the store's own writes; a commit by another connection (PRAGMA data_version)
makes it rebuild before the next call. A database whose terms another method made
(himga.memory.text.TERMS, in its `format`) has its features made again from its episodes when
it opens, in the transaction that opens it.

Durability: WAL journal, `synchronous=FULL`, one transaction per record_many, so an episode
recorded is on disk once the call returns (it survives SIGKILL and power loss) and a failed
call leaves nothing behind. Just before COMMIT a record or delete asks
`himga.storage.commit.before_commit` whether it is still wanted (a server's caller may have
gone: it then rolls back) and writes the receipt of its request id in `himga_receipts`, in the
same transaction. Access statistics are written with `synchronous=NORMAL`: they
survive the process being killed, but the last few may be lost with the power, which spares
every search an fsync.

A server's data directory holds one database per namespace:
`<data_dir>/episodes/<namespace>-<hash>.sqlite3`.
"""

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from himga.episodes.base import EpisodeFilter
from himga.episodes.features import Features, features, normal_path
from himga.episodes.index import EpisodeIndex
from himga.episodes.indexed import IndexedStore, Row
from himga.episodes.meaning import EpisodeOptions, EpisodeVectors, Vector, embedder_of
from himga.episodes.paging import Position, listed_files, micros
from himga.errors import IncompatibleStoreError
from himga.memory.text import TERMS
from himga.storage import commit
from himga.storage.files import create_private
from himga.storage.layout import episodes_database
from himga.storage.receipts import SQLITE_TABLE, Receipt, keep_sqlite, read_sqlite
from himga.storage.sqlite import connect, named_if_damaged, with_keys
from himga.timeutil import parse_utc_datetime, to_utc_isoformat

_LAYOUT = "episodes 1; terms: "
FORMAT = f"{_LAYOUT}{TERMS}"
"""Written into each database: the tables', then the terms' (himga.memory.text.TERMS). A
database whose terms another method made has its features made again from its episodes when it
opens; one of other tables (a newer himga's) is refused, not misread."""

if TYPE_CHECKING:
    from himga.embeddings import Embedder

_BUSY_TIMEOUT_S = 10.0
_EMBED_BATCH = 256
"""Episodes embedded, then written, at a time when a store opened with a new model."""
_BATCH = 1000
"""Episodes read at a time when a store opens to make their features again."""
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS himga_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS episodes (
        id TEXT PRIMARY KEY,
        micros INTEGER NOT NULL,
        task_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        phase TEXT NOT NULL,
        outcome TEXT NOT NULL,
        access_count INTEGER NOT NULL,
        last_accessed TEXT,
        document TEXT NOT NULL,
        features TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS episodes_by_time ON episodes (micros, id)",
    "CREATE INDEX IF NOT EXISTS episodes_by_task ON episodes (task_id, micros, id)",
    "CREATE INDEX IF NOT EXISTS episodes_by_agent ON episodes (agent, micros, id)",
    """CREATE TABLE IF NOT EXISTS episode_files (
        path TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (path, id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS episode_files_by_id ON episode_files (id)",
    # Added to a database of this format when it opens (a himga before it ignores the table).
    """CREATE TABLE IF NOT EXISTS episode_vectors (
        id TEXT PRIMARY KEY, model TEXT NOT NULL, vector BLOB NOT NULL
    )""",
    # The receipts of writes made with a request id, as the memory's (himga.storage.receipts):
    # added to a database of this format when it opens (a himga before them ignores them).
    *SQLITE_TABLE,
)
_INSERT = "INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_COLUMNS = "id, document, access_count, last_accessed"


class SQLiteEpisodes(IndexedStore):
    """Episodes in SQLite at `path` (created with its folders if missing); in memory if None."""

    def __init__(self, path: str | Path | None = None, embedder: "Embedder | None" = None) -> None:
        super().__init__(embedder)
        self.path = Path(path) if path is not None and str(path) != ":memory:" else None
        if self.path is not None:
            # Created 0600 (its folders 0700) before SQLite opens it: -wal and -shm take its mode.
            create_private(self.path)
        with named_if_damaged(self.path):
            self._db = connect(self.path, _BUSY_TIMEOUT_S)  # opens on a full disk too
        try:
            with named_if_damaged(self.path):
                self._open()
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def for_namespace(
        cls, namespace: str, data_dir: Path | None, options: EpisodeOptions
    ) -> "SQLiteEpisodes":
        """The registry's factory: the namespace's database in `data_dir`, in memory if None."""
        embedder = embedder_of(options)
        if data_dir is None:
            return cls(embedder=embedder)
        return cls(episodes_database(data_dir, namespace), embedder)

    def _open(self) -> None:
        db = self._db
        db.execute("PRAGMA synchronous=FULL")
        self._version: int | None = None
        # A store of this format opens by reading alone (so it opens on a full disk).
        db.execute("BEGIN")
        try:
            current = _is_current(db)
        finally:
            db.execute("ROLLBACK")
        if current:
            return
        with self._transaction():
            db.execute(_SCHEMA[0])
            found = db.execute("SELECT value FROM himga_meta WHERE key = 'format'").fetchone()
            if found is not None and not found[0].startswith(_LAYOUT):
                name = self.path.name if self.path else "database"
                raise IncompatibleStoreError(
                    f"{name}: episodes stored in format {found[0]!r}, which this himga does not "
                    f"read (it reads {FORMAT!r}); open it with the himga that wrote it, or move "
                    "the file away to start afresh"
                )
            for statement in _SCHEMA[1:]:
                db.execute(statement)
            if found is not None and found[0] != FORMAT:
                _make_features_again(db)
            db.execute("INSERT OR REPLACE INTO himga_meta VALUES ('format', ?)", (FORMAT,))

    @property
    def durable(self) -> bool:
        return self.path is not None

    def close(self) -> None:
        """Close the database; the store is unusable afterwards."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                self._db.execute("ROLLBACK")
            self._version = None  # read everything again next time
            raise

    @contextmanager
    def _call(self, *, write: bool = False) -> Iterator[None]:
        with self._lock, named_if_damaged(self.path):
            (version,) = self._db.execute("PRAGMA data_version").fetchone()
            if version != self._version:
                self._rebuild()
                self._version = version
            yield

    def _rebuild(self) -> None:
        """The index of every stored episode, read from the `features` column, and with a
        model their vectors (those it lacks embedded now)."""
        index = EpisodeIndex()
        for (text,) in self._db.execute("SELECT features FROM episodes ORDER BY rowid"):
            index.add(features_of(json.loads(text)))
        self._index = index
        if self._embedder is None:
            return
        model = self._embedder.model_id
        # a vector of another width (a model's name served at another size) is made again
        width = 4 * self._embedder.dimension
        vectors = EpisodeVectors(self._embedder.dimension)
        found = self._db.execute(
            "SELECT id, vector FROM episode_vectors WHERE model = ? AND length(vector) = ? "
            "ORDER BY rowid",
            (model, width),
        ).fetchall()
        if found:
            vectors.add(
                [episode_id for episode_id, _ in found],
                np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32).reshape(
                    len(found), self._embedder.dimension
                ),
            )
        missing = self._db.execute(
            "SELECT document FROM episodes WHERE id NOT IN "
            "(SELECT id FROM episode_vectors WHERE model = ? AND length(vector) = ?) "
            "ORDER BY rowid",
            (model, width),
        ).fetchall()
        for start in range(0, len(missing), _EMBED_BATCH):
            rows = [json.loads(text) for (text,) in missing[start : start + _EMBED_BATCH]]
            embedded = self._embedded(rows)
            with self._transaction():
                self._db.executemany(
                    "DELETE FROM episode_vectors WHERE id = ?", [(row["id"],) for row in rows]
                )
                self._insert_vectors(embedded)
            if embedded:
                vectors.add(list(embedded), np.stack(list(embedded.values())))
        self._vectors = vectors

    def _insert_vectors(self, vectors: dict[str, Vector]) -> None:
        assert self._embedder is not None or not vectors
        model = self._embedder.model_id if self._embedder is not None else ""
        self._db.executemany(
            "INSERT OR REPLACE INTO episode_vectors VALUES (?, ?, ?)",
            [(episode_id, model, vector.tobytes()) for episode_id, vector in vectors.items()],
        )

    def receipt(self, request_id: str) -> Receipt | None:
        """The receipt of the write made with `request_id` within the receipt window, if any."""
        with self._lock:
            return read_sqlite(self._db, request_id)

    def _keep_receipt(self, receipt: Receipt) -> None:
        keep_sqlite(self._db, receipt)

    def _write(
        self, rows: list[tuple[Row, Features]], recorded: int, vectors: dict[str, Vector]
    ) -> None:
        db = self._db
        with self._transaction():
            ids = [(row["id"],) for row, _ in rows]
            db.executemany("DELETE FROM episode_files WHERE id = ?", ids)
            db.executemany("DELETE FROM episode_vectors WHERE id = ?", ids)
            self._insert_vectors(vectors)
            db.executemany(_INSERT, [row_values(row, found) for row, found in rows])
            db.executemany(
                "INSERT OR IGNORE INTO episode_files VALUES (?, ?)",
                [(path, row["id"]) for row, _ in rows for path in listed_files(row)],
            )
            commit.before_commit(self._keep_receipt, recorded)

    def _read(self, ids: list[str]) -> dict[str, Row]:
        select = f"SELECT {_COLUMNS} FROM episodes WHERE id IN ({{keys}})"
        rows = with_keys(self._db, select, list(dict.fromkeys(ids)))
        return {row[0]: row_of(*row[1:]) for row in rows}

    def _erase(self, episode_id: str) -> bool:
        with self._transaction():
            self._db.execute("DELETE FROM episode_files WHERE id = ?", (episode_id,))
            self._db.execute("DELETE FROM episode_vectors WHERE id = ?", (episode_id,))
            erased = self._db.execute("DELETE FROM episodes WHERE id = ?", (episode_id,)).rowcount
            commit.before_commit(self._keep_receipt, erased > 0)
        return erased > 0

    def _touch(self, ids: list[str], when: datetime) -> None:
        version = self._version  # counts are not in the index: it stays good if this fails
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._transaction():
                self._db.executemany(
                    "UPDATE episodes SET access_count = access_count + 1, last_accessed = ? "
                    "WHERE id = ?",
                    [(to_utc_isoformat(when), episode_id) for episode_id in ids],
                )
        except BaseException:
            self._version = version
            raise
        finally:
            self._db.execute("PRAGMA synchronous=FULL")

    def _listed(self, filters: EpisodeFilter, start: Position | None, count: int) -> list[Row]:
        condition, values = where_of(filters, start)
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM episodes {condition} ORDER BY micros DESC, id DESC LIMIT ?",
            (*values, count),
        )
        return [row_of(*row[1:]) for row in rows]


def _make_features_again(db: sqlite3.Connection) -> None:
    """Make every episode's features again from its wire form (in a write transaction of the
    caller's), with this himga's terms."""
    last = ""
    while found := db.execute(
        "SELECT id, document FROM episodes WHERE id > ? ORDER BY id LIMIT ?", (last, _BATCH)
    ).fetchall():
        db.executemany(
            "UPDATE episodes SET features = ? WHERE id = ?",
            [(features_anew(document), id_) for id_, document in found],
        )
        last = found[-1][0]


def _is_current(db: sqlite3.Connection) -> bool:
    """Whether the database (read in a transaction of the caller's) has every table of FORMAT."""
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"himga_meta", "episodes", "episode_files", "episode_vectors", "himga_receipts"} <= (
        tables
    ):
        return False
    found = db.execute("SELECT value FROM himga_meta WHERE key = 'format'").fetchone()
    return found is not None and found[0] == FORMAT


def where_of(
    filters: EpisodeFilter,
    start: Position | None,
    mark: str = "?",
    files: str = "SELECT id FROM episode_files WHERE",
) -> tuple[str, list[Any]]:
    """The WHERE clause (with `mark` for each value) of a listing of the episodes `filters`
    pass, after `start` if given, and its values: for SQLite and PostgreSQL alike. `files`
    begins the query of the ids of the episodes that touched a path."""
    where: list[str] = []
    values: list[Any] = []
    for column in ("task_id", "agent", "phase", "outcome"):
        wanted = getattr(filters, column)
        if wanted:
            where.append(f"{column} = {mark}")
            values.append(wanted)
    if filters.since is not None:
        where.append(f"micros >= {mark}")
        values.append(micros(filters.since))
    if filters.until is not None:
        where.append(f"micros < {mark}")
        values.append(micros(filters.until))
    if filters.file:
        where.append(f"id IN ({files} path = {mark})")
        values.append(normal_path(filters.file))
    if start is not None:
        where.append(f"(micros, id) < ({mark}, {mark})")
        values.extend(start)
    return (f"WHERE {' AND '.join(where)}" if where else ""), values


def features_text(found: Features) -> str:
    """The `features` column of an episode (features_of reads it)."""
    data = {
        "id": found.id,
        "t": found.timestamp,
        "i": found.importance,
        "p": found.phase,
        "o": found.outcome,
        "r": found.resolved,
        "g": " ".join(found.goal),
        "e": " ".join(found.errors),
        "a": " ".join(found.actions),
        "f": found.files,
    }
    return json.dumps(data, ensure_ascii=False)


def features_anew(document: str) -> str:
    """The `features` column of the episode stored as `document`, made again from it."""
    return features_text(features(json.loads(document)))


def row_values(row: Row, found: Features) -> tuple[Any, ...]:
    """The `episodes` row of an episode."""
    context = row["context"]
    return (
        row["id"],
        micros_of(row),
        row["task_id"],
        row["agent"],
        context.get("phase", ""),
        row.get("outcome", "success"),
        row.get("access_count", 0),
        row.get("last_accessed"),
        json.dumps(row, ensure_ascii=False),
        features_text(found),
    )


def micros_of(row: Row) -> int:
    """The episode's time, in microseconds since the epoch."""
    return micros(parse_utc_datetime(row["timestamp"]))


def features_of(data: dict[str, Any]) -> Features:
    return Features(
        id=data["id"],
        timestamp=data["t"],
        importance=data["i"],
        phase=data["p"],
        outcome=data["o"],
        resolved=data["r"],
        goal=data["g"].split(),
        errors=data["e"].split(),
        actions=data["a"].split(),
        files=data["f"],
    )


def row_of(document: str, access_count: int, last_accessed: str | None) -> Row:
    """An episode's wire form with its current access statistics."""
    row: Row = json.loads(document)
    row["access_count"] = access_count
    if last_accessed is not None:
        row["last_accessed"] = last_accessed
    return row
