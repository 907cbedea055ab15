"""HybridPostgresMemory: the hybrid memory (himga.memory.hybrid) over PostgreSQL, so that
several servers over one database are one service, as the keyword memory's are
(himga.memory.postgres).

The vectors are rows of `himga_vectors` (himga.storage.postgres_schema): each turn with text,
under its namespace and number, as little-endian float32 bytes, referencing its message (a
delete or a reset takes them with it). A write stores its turns' vectors in the transaction
that stores the turns (new ones by COPY, corrected ones replaced, ones corrected to an empty
text deleted). Every server holds the namespace's vectors in process beside its postings and
reads in others' commits as it reads their rows: rows appended bring their vectors, and the
turns the change log names as replaced are read again, vectors with them.

The namespace's row records the model that made its vectors (`embedding_model`). A server
opening a namespace whose vectors another model made refuses it, naming `himga reembed`; and
since every call reads that row, a server whose model is no longer the namespace's (someone
re-embedded it meanwhile) refuses its calls instead of mixing models.
"""

import builtins
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg

from himga.errors import IncompatibleStoreError, InvalidArgument
from himga.memory.derived import Placing
from himga.memory.hybrid import EmbeddedTurns, HybridMemory, HybridOptions, check_model
from himga.memory.postgres import PostgresKeywordMemory, _PostgresRows
from himga.memory.ranking import Turns
from himga.memory.registry import place_problem
from himga.memory.rows import Rows, Version
from himga.storage.place import Place
from himga.storage.postgres import Database

_READ_ROWS = 10_000
_UPSERT = """
    INSERT INTO himga_vectors (namespace, number, vector) VALUES (%s, %s, %s)
    ON CONFLICT (namespace, number) DO UPDATE SET vector = excluded.vector"""


class HybridPostgresMemory(HybridMemory, PostgresKeywordMemory):
    """The hybrid memory of namespace `namespace` in the PostgreSQL `database`, embedding with
    `options.embedding_model`; see the module's text."""

    def __init__(
        self, database: Database, namespace: str, options: HybridOptions | None = None
    ) -> None:
        self._set_model(options or HybridOptions())
        super().__init__(database, namespace)
        self._record_model()
        self.embedded_at_open = self._embed_missing()

    @classmethod
    def for_namespace(  # type: ignore[override]
        cls, namespace: str, place: Place, options: HybridOptions
    ) -> "HybridPostgresMemory":
        """The registry's factory: the namespace in the server's database."""
        if not isinstance(place, Database):
            raise InvalidArgument("memory", place_problem("hybrid", place) or "needs a database")
        return cls(place, namespace, options)

    def _where(self) -> str:
        return f"--database URL --namespace {self.namespace}"

    def _record_model(self) -> None:
        """Refuse vectors another model made; record this one's for a namespace without."""
        model = self._embedder.model_id
        with self._database.transaction() as connection:
            row = connection.execute(
                "SELECT embedding_model FROM himga_namespaces WHERE id = %s FOR UPDATE",
                (self._id,),
            ).fetchone()
            recorded = None if row is None else row[0]
            held = connection.execute(
                "SELECT octet_length(vector) FROM himga_vectors WHERE namespace = %s LIMIT 1",
                (self._id,),
            ).fetchone()
            if held is not None:
                check_model(
                    f"namespace {self.namespace!r}",
                    recorded,
                    self._embedder,
                    self._fusion.embedding_model,
                    self._where(),
                    held[0],
                )
            if recorded == model:
                return
            connection.execute(
                "UPDATE himga_namespaces SET embedding_model = %s WHERE id = %s",
                (model, self._id),
            )

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Rows]:
        with self._database.transaction(snapshot=not write) as connection:
            yield _HybridPostgresRows(connection, self._id, self)


class _HybridPostgresRows(_PostgresRows):
    """The rows of one namespace of a hybrid memory, and their vectors."""

    def __init__(
        self, connection: psycopg.Connection[Any], namespace: int, memory: HybridPostgresMemory
    ) -> None:
        super().__init__(connection, namespace)
        self._memory = memory
        self._dimension = memory.embedder.dimension

    def counters(self, *, lock: bool) -> Version:
        row = self._connection.execute(
            "SELECT version, generation, next_number, embedding_model FROM himga_namespaces "
            "WHERE id = %s" + (" FOR UPDATE" if lock else ""),
            (self._id,),
        ).fetchone()
        assert row is not None  # namespaces' rows are never deleted
        memory = self._memory
        if row[3] is not None and row[3] != memory.embedder.model_id:
            raise IncompatibleStoreError(
                f"namespace {memory.namespace!r} was embedded again with model {row[3]!r} "
                f"since this server opened it with {memory.embedder.model_id!r}: restart the "
                "server with that model"
            )
        return Version(row[0], row[1], row[2])

    def write(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        super().write(turns, placing, old_terms)
        assert isinstance(turns, EmbeddedTurns)
        keys, vectors, bare = turns.vector_rows(placing)
        replaced = set(placing.replaced_numbers)
        blobs = [bytes(row) for row in np.ascontiguousarray(vectors, dtype="<f4")]
        with self._connection.cursor() as cursor:
            with cursor.copy("COPY himga_vectors (namespace, number, vector) FROM STDIN") as copy:
                for key, blob in zip(keys, blobs, strict=True):
                    if key not in replaced:
                        copy.write_row((self._id, key, blob))
            again = [
                (self._id, key, blob)
                for key, blob in zip(keys, blobs, strict=True)
                if key in replaced
            ]
            if again:
                cursor.executemany(_UPSERT, again)
        emptied = [n for n in bare if n in replaced]
        if emptied:
            self._connection.execute(
                "DELETE FROM himga_vectors WHERE namespace = %s AND number = ANY(%s)",
                (self._id, emptied),
            )

    # A delete or a reset takes the vectors with the messages (ON DELETE CASCADE).

    def write_vectors(self, numbers: Sequence[int], vectors: np.ndarray) -> None:
        rows = np.ascontiguousarray(vectors, dtype="<f4")
        with self._connection.cursor() as cursor:
            cursor.executemany(
                _UPSERT,
                [(self._id, n, bytes(row)) for n, row in zip(numbers, rows, strict=True)],
            )

    def vectors_from(self, first: int) -> Iterator[tuple[Sequence[int], np.ndarray]]:
        with self._connection.cursor(name="himga_vectors") as cursor:
            cursor.itersize = _READ_ROWS
            cursor.execute(
                "SELECT number, vector FROM himga_vectors "
                "WHERE namespace = %s AND number >= %s ORDER BY number",
                (self._id, first),
            )
            while rows := cursor.fetchmany(_READ_ROWS):
                yield self._decoded(rows)

    def vectors_of(self, numbers: Sequence[int]) -> tuple[Sequence[int], np.ndarray]:
        rows = self._connection.execute(
            "SELECT number, vector FROM himga_vectors "
            "WHERE namespace = %s AND number = ANY(%s) ORDER BY number",
            (self._id, builtins.list(numbers)),
        ).fetchall()
        return self._decoded(rows)

    def _decoded(self, rows: Sequence[Any]) -> tuple[Sequence[int], np.ndarray]:
        keys = [key for key, _ in rows]
        matrix = np.frombuffer(b"".join(bytes(blob) for _, blob in rows), dtype="<f4")
        return keys, matrix.reshape(len(keys), self._dimension).astype(np.float32)

    def unembedded(self) -> tuple[builtins.list[int], builtins.list[str], builtins.list[str]]:
        rows = self._connection.execute(
            "SELECT m.number, m.role, m.content FROM himga_messages m "
            "LEFT JOIN himga_vectors v ON v.namespace = m.namespace AND v.number = m.number "
            "WHERE m.namespace = %s AND v.number IS NULL AND m.content <> '' "
            "ORDER BY m.number",
            (self._id,),
        ).fetchall()
        chosen = [row for row in rows if row[2].strip()]
        return [r[0] for r in chosen], [r[1] for r in chosen], [r[2] for r in chosen]


def forget_vectors(database: Database, namespace: str, model_id: str) -> int:
    """Delete every vector of `namespace` and record `model_id` as the model of its vectors,
    in one transaction, so that it opens with that model and embeds every turn again (`himga
    reembed`); how many vectors there were. Every server holding it reads it anew, and one
    serving it with another model refuses its calls from then on. LookupError when the
    namespace holds no hybrid memory."""
    with database.transaction() as connection:
        row = connection.execute(
            "SELECT id, memory FROM himga_namespaces WHERE name = %s FOR UPDATE", (namespace,)
        ).fetchone()
        if row is None or row[1] != "hybrid":
            raise LookupError(f"namespace {namespace!r} holds no hybrid memory in the database")
        deleted = connection.execute(
            "DELETE FROM himga_vectors WHERE namespace = %s", (row[0],)
        ).rowcount
        connection.execute(
            "UPDATE himga_namespaces SET embedding_model = %s, version = version + 1, "
            "generation = generation + 1 WHERE id = %s",
            (model_id, row[0]),
        )
    return int(deleted)
