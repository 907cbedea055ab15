"""HybridSQLiteMemory: the hybrid memory (himga.memory.hybrid) in the namespace's SQLite file,
the keyword memory's tables (himga.memory.sqlite) and one more:

- `himga_vectors`: the vector of each turn with text, under its message's row id (the turn's
  number + 1), as little-endian float32; written, replaced and deleted in the transaction that
  writes, corrects or deletes its message, so a write that returned has its vectors on disk.
- `himga_meta`'s `embedding_model`: the id of the model that made them
  (himga.embeddings.Embedder.model_id). A database recording another model is refused, naming
  `himga reembed`; one without the table (a keyword store, or a hybrid one of an earlier himga)
  gets it, and its turns their vectors, when it opens.

The keyword tables keep their format and migrations (himga.memory.sqlite_schema): a hybrid
store of an earlier format is migrated as the keyword memory's is. Layout:
`<data_dir>/hybrid/<namespace>-<hash>.sqlite3`, one database per namespace.
"""

import builtins
import json
import shlex
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from himga.errors import IncompatibleStoreError
from himga.memory.derived import Placing
from himga.memory.hybrid import (
    EmbeddedTurns,
    HybridMemory,
    HybridOptions,
    check_model,
)
from himga.memory.ranking import Turns
from himga.memory.registry import namespace_file
from himga.memory.rows import Version
from himga.memory.sqlite import SQLiteKeywordMemory, _SQLiteRows
from himga.memory.sqlite_schema import META, bump_generation
from himga.storage.sqlite import connect

FOLDER = "hybrid"
VECTORS = "CREATE TABLE IF NOT EXISTS himga_vectors (id INTEGER PRIMARY KEY, vector BLOB NOT NULL)"
MODEL_KEY = "embedding_model"
_READ_ROWS = 10_000


class HybridSQLiteMemory(HybridMemory, SQLiteKeywordMemory):
    """The hybrid memory over a SQLite database at `path` (a file, an existing directory, or
    None: in memory), embedding with `options.embedding_model`."""

    def __init__(
        self,
        path: str | Path | None = None,
        options: HybridOptions | None = None,
        *,
        where: str = "",
    ) -> None:
        self._set_model(options or HybridOptions())
        self._where = where  # the reembed arguments a refusal names ("": this file's own)
        super().__init__(path)

    @classmethod
    def for_namespace(  # type: ignore[override]
        cls, namespace: str, data_dir: Path | None, options: HybridOptions
    ) -> "HybridSQLiteMemory":
        """The registry's factory: the namespace's database in `data_dir`, in memory if None."""
        if data_dir is None:
            return cls(None, options)
        return cls(
            namespace_path(data_dir, namespace),
            options,
            where=f"--data-dir {shlex.quote(str(data_dir))} --namespace {shlex.quote(namespace)}",
        )

    def _open(self) -> None:
        self._rows = _HybridSQLiteRows(self._db, self._embedder.dimension, self._embedder.model_id)
        self._open_vectors()
        super()._open()
        self.embedded_at_open = self._embed_missing()

    def _open_vectors(self) -> None:
        """Refuse vectors of another model; make the vectors' table if there is none."""
        with self._begin():
            has_vectors, recorded = self._checked_model()
        if has_vectors and recorded == self._embedder.model_id:
            return
        # Checked again in the transaction that records the model: another connection may have
        # embedded the store with its own model since.
        with self._begin("IMMEDIATE"):
            has_vectors, recorded = self._checked_model()
            if not has_vectors or recorded != self._embedder.model_id:
                self._db.execute(VECTORS)
                self._db.execute(META)
                self._db.execute(
                    "INSERT OR REPLACE INTO himga_meta VALUES (?, ?)",
                    (MODEL_KEY, self._embedder.model_id),
                )

    def _checked_model(self) -> tuple[bool, str | None]:
        """Whether the store has a vectors' table, and the model it records; refused (naming
        the command that embeds it again) when it holds vectors of another model. In a
        transaction of the caller's."""
        db = self._db
        has_vectors = _has_table(db, "himga_vectors")
        row = (
            db.execute("SELECT value FROM himga_meta WHERE key = ?", (MODEL_KEY,)).fetchone()
            if _has_table(db, "himga_meta")
            else None
        )
        any_vector = (
            db.execute("SELECT length(vector) FROM himga_vectors LIMIT 1").fetchone()
            if has_vectors
            else None
        )
        recorded = None if row is None else str(row[0])
        if any_vector is not None:
            name = self.path.name if self.path else "database"
            where = self._where or (f"--file {shlex.quote(str(self.path))}" if self.path else "")
            check_model(
                name, recorded, self._embedder, self._fusion.embedding_model, where, any_vector[0]
            )
        return has_vectors, recorded


class _HybridSQLiteRows(_SQLiteRows):
    """The rows of a hybrid SQLite memory: the keyword memory's, and their vectors."""

    def __init__(self, db: sqlite3.Connection, dimension: int, model_id: str) -> None:
        super().__init__(db)
        self._dimension = dimension
        self._model_id = model_id

    def counters(self, *, lock: bool) -> Version:
        seen = self._seen
        now = super().counters(lock=lock)
        if now is not seen:  # another connection committed: was the store embedded again?
            row = self._db.execute(
                "SELECT value FROM himga_meta WHERE key = ?", (MODEL_KEY,)
            ).fetchone()
            if row is not None and row[0] != self._model_id:
                raise IncompatibleStoreError(
                    f"the store was embedded again with model {row[0]!r} since this memory "
                    f"opened it with {self._model_id!r}: open it again with the model that "
                    "made them (a server: restart it with that model's --embedding-model)"
                )
        return now

    def write(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        super().write(turns, placing, old_terms)
        assert isinstance(turns, EmbeddedTurns)
        keys, vectors, bare = turns.vector_rows(placing)
        replaced = set(placing.replaced_numbers)
        self._drop_vectors([n for n in bare if n in replaced])  # corrected to an empty text
        self.write_vectors(keys, vectors)

    def delete(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> None:
        super().delete(numbers, old_terms)
        self._drop_vectors(numbers)

    def reset(self) -> None:
        super().reset()
        self._db.execute("DELETE FROM himga_vectors")

    def _drop_vectors(self, numbers: Sequence[int]) -> None:
        if numbers:
            self._db.execute(
                "DELETE FROM himga_vectors WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([n + 1 for n in numbers]),),
            )

    def write_vectors(self, numbers: Sequence[int], vectors: np.ndarray) -> None:
        if not len(numbers):
            return
        rows = np.ascontiguousarray(vectors, dtype="<f4")
        self._db.executemany(
            "INSERT OR REPLACE INTO himga_vectors (id, vector) VALUES (?, ?)",
            zip([n + 1 for n in numbers], map(bytes, rows), strict=True),
        )

    def vectors_from(self, first: int) -> Iterator[tuple[Sequence[int], np.ndarray]]:
        cursor = self._db.execute(
            "SELECT id - 1, vector FROM himga_vectors WHERE id > ? ORDER BY id", (first,)
        )
        while rows := cursor.fetchmany(_READ_ROWS):
            yield self._decoded(rows)

    def vectors_of(self, numbers: Sequence[int]) -> tuple[Sequence[int], np.ndarray]:
        rows = self._db.execute(
            "SELECT id - 1, vector FROM himga_vectors "
            "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (json.dumps([n + 1 for n in numbers]),),
        ).fetchall()
        return self._decoded(rows)

    def _decoded(self, rows: Sequence[tuple[int, bytes]]) -> tuple[Sequence[int], np.ndarray]:
        keys = [key for key, _ in rows]
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4")
        return keys, matrix.reshape(len(keys), self._dimension).astype(np.float32)

    def unembedded(self) -> tuple[builtins.list[int], builtins.list[str], builtins.list[str]]:
        rows = self._db.execute(
            "SELECT messages.id - 1, role, content FROM messages "
            "LEFT JOIN himga_vectors ON himga_vectors.id = messages.id "
            "WHERE himga_vectors.id IS NULL AND content <> '' ORDER BY messages.id"
        ).fetchall()
        chosen = [row for row in rows if row[2].strip()]
        return [r[0] for r in chosen], [r[1] for r in chosen], [r[2] for r in chosen]


def _has_table(db: sqlite3.Connection, table: str) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return found.fetchone() is not None


def namespace_path(data_dir: Path, namespace: str) -> Path:
    """The database file of `namespace`'s hybrid memory in a server's data directory."""
    return namespace_file(data_dir, FOLDER, namespace, ".sqlite3")


def is_hybrid_store(path: Path) -> bool:
    """Whether the SQLite file at `path` is a hybrid memory's store (it records the model of
    its vectors), read without writing; sqlite3.DatabaseError when it is no SQLite database."""
    db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        if not _has_table(db, "himga_meta"):
            return False
        found = db.execute("SELECT 1 FROM himga_meta WHERE key = ?", (MODEL_KEY,))
        return found.fetchone() is not None
    finally:
        db.close()


def forget_vectors(path: Path, model_id: str) -> int:
    """Delete every vector of the hybrid store at `path` and record `model_id` as the model of
    its vectors, in one transaction, so that it opens with that model and embeds every turn
    again (`himga reembed`); how many vectors there were. FileNotFoundError when there is no
    store at `path`."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no hybrid store there")
    db = connect(path, 10.0)
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            count = 0
            if _has_table(db, "himga_vectors"):
                (count,) = db.execute("SELECT count(*) FROM himga_vectors").fetchone()
                db.execute("DELETE FROM himga_vectors")
            db.execute(VECTORS)
            db.execute(META)
            db.execute("INSERT OR REPLACE INTO himga_meta VALUES (?, ?)", (MODEL_KEY, model_id))
            if _has_table(db, "messages"):
                bump_generation(db)  # a memory holding the store reads it anew
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    finally:
        db.close()
    return int(count)
