"""PostgresEpisodes: the episodes of one namespace in PostgreSQL, shared by every server over
the database (tables: himga.storage.postgres_schema).

Rows are those of the SQLite store (the wire form, the columns listings filter on, the ranking's
features with their terms already stemmed), keyed by the namespace's id, and `seq`: the
namespace's `episode_version` that wrote the row. The EpisodeIndex is loaded from the features
when a server first opens the namespace; before each call the namespace's row says what changed:
rows recorded since (their `seq` past what this process read) are indexed, and a delete
(`episode_generation` moved) has everything read again. A namespace whose features' terms were
made by another text method (`episode_terms`) has them made again when a server opens it.

With an embedding model (the `embedding_model` option), each episode's vector is written with
it in `himga_episode_vectors` (deleted with it by the foreign key), read as the features are,
and an episode read without a vector of this model (recorded by a server without one, or with
another) is embedded then and its vector written.

A call runs in one transaction that holds the namespace's row: FOR UPDATE for a record or a
delete (writers serialise across servers), FOR SHARE for the others (readers do not wait for
each other, and no delete lands between the index's answer and the rows read for it). A
record or delete asks `himga.storage.commit.before_commit` whether it is still wanted and writes
its receipt, in its transaction. Access statistics are updated in the call's transaction.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from himga.episodes.base import EpisodeFilter
from himga.episodes.features import Features
from himga.episodes.index import EpisodeIndex
from himga.episodes.indexed import IndexedStore, Row
from himga.episodes.meaning import EpisodeOptions, EpisodeVectors, Vector, embedder_of
from himga.episodes.paging import Position, listed_files
from himga.episodes.registry import DATABASE_STORE, place_problem
from himga.episodes.sqlite import features_anew, features_of, row_of, row_values, where_of
from himga.memory.text import TERMS
from himga.storage import commit
from himga.storage.place import Place
from himga.storage.postgres import Database, namespace_id
from himga.storage.receipts import Receipt, keep_postgres, read_postgres
from himga.timeutil import to_utc_isoformat

if TYPE_CHECKING:
    from himga.embeddings import Embedder

EPISODES = "episodes"
"""The receipts' kind of EpisodeService's writes."""
_COLUMNS = "id, document, access_count, last_accessed"
_UPSERT = """
    INSERT INTO himga_episodes (namespace, seq, id, micros, task_id, agent, phase, outcome,
        access_count, last_accessed, document, features)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (namespace, id) DO UPDATE SET seq = excluded.seq, micros = excluded.micros,
        task_id = excluded.task_id, agent = excluded.agent, phase = excluded.phase,
        outcome = excluded.outcome, access_count = excluded.access_count,
        last_accessed = excluded.last_accessed, document = excluded.document,
        features = excluded.features"""


class PostgresEpisodes(IndexedStore):
    """The episodes of `namespace` in the PostgreSQL `database` (whose pool the server owns)."""

    def __init__(
        self, database: Database, namespace: str, embedder: "Embedder | None" = None
    ) -> None:
        super().__init__(embedder)
        self._database = database
        with database.transaction() as connection:
            self._id = namespace_id(connection, namespace)
            self._check_terms(connection)
        self._version: int | None = None
        self._generation: int | None = None
        self._connection: psycopg.Connection[Any] | None = None

    @classmethod
    def for_namespace(
        cls, namespace: str, place: Place, options: EpisodeOptions
    ) -> "PostgresEpisodes":
        """The registry's factory: the namespace in the server's database."""
        problem = place_problem(DATABASE_STORE, place)
        if problem is not None or not isinstance(place, Database):
            raise ValueError(problem or f"episode store {DATABASE_STORE} needs a database")
        return cls(place, namespace, embedder_of(options))

    def _check_terms(self, connection: psycopg.Connection[Any]) -> None:
        """Make the features of the namespace's episodes again if their terms were made by
        another text method (himga.memory.text.TERMS), and have every server read them anew."""
        row = connection.execute(
            "SELECT episode_terms FROM himga_namespaces WHERE id = %s FOR UPDATE", (self._id,)
        ).fetchone()
        if row is not None and row[0] == TERMS:
            return
        found = connection.execute(
            "SELECT id, document FROM himga_episodes WHERE namespace = %s", (self._id,)
        ).fetchall()
        with connection.cursor() as cursor:
            cursor.executemany(
                "UPDATE himga_episodes SET features = %s WHERE namespace = %s AND id = %s",
                [(features_anew(document), self._id, episode_id) for episode_id, document in found],
            )
        connection.execute(
            "UPDATE himga_namespaces SET episode_terms = %s, episode_version = episode_version "
            "+ 1, episode_generation = episode_generation + 1 WHERE id = %s",
            (TERMS, self._id),
        )

    @property
    def durable(self) -> bool:
        return True

    def close(self) -> None:
        """Forget the index (the database's pool is the server's)."""
        with self._lock:
            self._index = EpisodeIndex()
            self._version = self._generation = None

    @property
    def _db(self) -> psycopg.Connection[Any]:
        assert self._connection is not None, "used outside a call"
        return self._connection

    @contextmanager
    def _call(self, *, write: bool = False) -> Iterator[None]:
        with self._lock:
            try:
                with self._database.transaction() as connection:
                    self._connection = connection
                    self._refresh(write)
                    yield
            except BaseException:  # the index may hold what did not commit: read it anew
                self._version = self._generation = None
                raise
            finally:
                self._connection = None

    def _refresh(self, write: bool) -> None:
        row = self._db.execute(
            "SELECT episode_version, episode_generation FROM himga_namespaces WHERE id = %s "
            + ("FOR UPDATE" if write else "FOR SHARE"),
            (self._id,),
        ).fetchone()
        assert row is not None  # namespaces' rows are never deleted
        version, generation = row
        if version == self._version:
            return
        seen = self._version or 0
        if generation != self._generation or self._version is None:
            self._index = EpisodeIndex()
            self._vectors = EpisodeVectors(self._vectors.dimension)
            seen = 0
        rows = self._db.execute(
            "SELECT features FROM himga_episodes WHERE namespace = %s AND seq > %s ORDER BY seq",
            (self._id, seen),
        )
        for (text,) in rows:
            self._index.add(features_of(json.loads(text)))
        if self._embedder is not None:
            self._read_vectors(seen, self._embedder.model_id)
        self._version, self._generation = version, generation

    def _read_vectors(self, seen: int, model: str) -> None:
        """The vectors of this model of the episodes written past `seq` `seen`; those without
        one (recorded with another model, or none) are embedded and written now."""
        found = self._db.execute(
            "SELECT e.id, v.vector, CASE WHEN v.vector IS NULL THEN e.document END "
            "FROM himga_episodes AS e LEFT JOIN himga_episode_vectors AS v "
            "ON v.namespace = e.namespace AND v.id = e.id AND v.model = %s "
            "AND octet_length(v.vector) = %s "  # a model's name served at another size: again
            "WHERE e.namespace = %s AND e.seq > %s ORDER BY e.seq",
            (model, 4 * self._vectors.dimension, self._id, seen),
        ).fetchall()
        stored = [(episode_id, bytes(blob)) for episode_id, blob, _ in found if blob is not None]
        if stored:
            self._vectors.add(
                [episode_id for episode_id, _ in stored],
                np.frombuffer(b"".join(blob for _, blob in stored), dtype=np.float32).reshape(
                    len(stored), self._vectors.dimension
                ),
            )
        missing = [json.loads(document) for _, blob, document in found if blob is None]
        embedded = self._embedded(missing)
        self._insert_vectors(embedded)
        if embedded:
            self._vectors.add(list(embedded), np.stack(list(embedded.values())))

    def _insert_vectors(self, vectors: dict[str, Vector]) -> None:
        if not vectors:
            return
        assert self._embedder is not None
        with self._db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO himga_episode_vectors VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (namespace, id) DO UPDATE SET model = excluded.model, "
                "vector = excluded.vector",
                [
                    (self._id, episode_id, self._embedder.model_id, vector.tobytes())
                    for episode_id, vector in sorted(vectors.items())
                ],
            )

    def receipt(self, request_id: str) -> Receipt | None:
        """The receipt of the write made with `request_id` within the receipt window, if any."""
        with self._database.transaction() as connection:
            return read_postgres(connection, self._id, EPISODES, request_id)

    def _keep_receipt(self, receipt: Receipt) -> None:
        keep_postgres(self._db, self._id, EPISODES, receipt)

    def _raise(self, *, generation: bool) -> None:
        """Raise the namespace's episode counters (a delete: its generation too), and what this
        process read (its own write, placed in the index by the caller)."""
        assert self._version is not None and self._generation is not None
        self._version += 1
        self._generation += 1 if generation else 0
        self._db.execute(
            "UPDATE himga_namespaces SET episode_version = %s, episode_generation = %s "
            "WHERE id = %s",
            (self._version, self._generation, self._id),
        )

    def _write(
        self, rows: list[tuple[Row, Features]], recorded: int, vectors: dict[str, Vector]
    ) -> None:
        self._raise(generation=False)
        ids = [row["id"] for row, _ in rows]
        with self._db.cursor() as cursor:
            cursor.execute(
                "DELETE FROM himga_episode_files WHERE namespace = %s AND id = ANY(%s)",
                (self._id, ids),
            )
            cursor.execute(
                "DELETE FROM himga_episode_vectors WHERE namespace = %s AND id = ANY(%s)",
                (self._id, ids),
            )
            cursor.executemany(
                _UPSERT,
                [(self._id, self._version, *row_values(row, found)) for row, found in rows],
            )
            files = {(path, row["id"]) for row, _ in rows for path in listed_files(row)}
            cursor.executemany(
                "INSERT INTO himga_episode_files VALUES (%s, %s, %s)",
                [(self._id, path, episode_id) for path, episode_id in sorted(files)],
            )
        self._insert_vectors(vectors)
        commit.before_commit(self._keep_receipt, recorded)

    def _read(self, ids: list[str]) -> dict[str, Row]:
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM himga_episodes WHERE namespace = %s AND id = ANY(%s)",
            (self._id, ids),
        )
        return {row[0]: row_of(*row[1:]) for row in rows}

    def _erase(self, episode_id: str) -> bool:
        erased = self._db.execute(
            "DELETE FROM himga_episodes WHERE namespace = %s AND id = %s",
            (self._id, episode_id),
        ).rowcount
        if erased:
            self._raise(generation=True)
        commit.before_commit(self._keep_receipt, erased > 0)
        return erased > 0

    def _touch(self, ids: list[str], when: datetime) -> None:
        # In a savepoint: a count the database cannot write (a full disk) rolls back alone,
        # and the read it is part of answers.
        with self._db.transaction(), self._db.cursor() as cursor:
            cursor.executemany(
                "UPDATE himga_episodes SET access_count = access_count + 1, last_accessed = %s "
                "WHERE namespace = %s AND id = %s",
                [(to_utc_isoformat(when), self._id, episode_id) for episode_id in sorted(ids)],
            )

    def _listed(self, filters: EpisodeFilter, start: Position | None, count: int) -> list[Row]:
        files = f"SELECT id FROM himga_episode_files WHERE namespace = {self._id} AND"
        condition, values = where_of(filters, start, "%s", files)
        condition = f"{condition} AND namespace = %s" if condition else "WHERE namespace = %s"
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM himga_episodes {condition} "
            "ORDER BY micros DESC, id DESC LIMIT %s",
            (*values, self._id, count),
        )
        return [row_of(*row[1:]) for row in rows]
