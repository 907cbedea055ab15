"""PostgresKeywordMemory: the shared keyword method (himga.memory.ranking) over PostgreSQL, so
that several servers over one database are one service.

The skeleton every keyword memory shares (himga.memory.indexed) over PostgreSQL: this module
fills in its rows' SQL (himga.memory.rows). Every namespace lives in one database
(himga.storage.postgres_schema: `himga_messages` keyed by the namespace's id, one
`himga_namespaces` row each). The index the skeleton derives is loaded once when a server first
opens the namespace, then kept current incrementally. Before each call it reads the namespace's
row (one primary-key lookup): an unchanged `version` means nothing to read; otherwise the rows
numbered past what it holds are read in (appended by another server). When `generation` moved
(a delete, a replacement, a reset), the change log (`himga_changes`, written by each delete and
correction in its transaction) says which turns changed and what terms they held: deleted ones
are taken out and replaced ones read again by primary key, in place, as their writer did; after
a reset, or when the log no longer reaches back to what this server holds, everything is read
again. A search then ranks in process and reads only its hits, by primary key: the database
sees no scan and no text search.

A write takes the namespace's row FOR UPDATE (writers to one namespace serialise across
servers; readers never wait: they read a snapshot), reads in what others committed, numbers
its turns, writes them, raises the counters, asks `himga.storage.commit.before_commit` whether
it is still wanted and writes its receipt, in the same transaction, then commits. A write that
returned is committed (with a synchronous standby, on both servers); one whose COMMIT was lost
with the connection raises DatabaseUnavailable, and its retry with the same request id is
answered from its receipt on whichever server it reaches.
"""

import builtins
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from himga.errors import InvalidArgument
from himga.kinds import NoOptions
from himga.memory.base import StoredMessage
from himga.memory.derived import Placing, said_columns, stored_of
from himga.memory.indexed import IndexedMemory
from himga.memory.ranking import METHOD, Turns, speaker_key
from himga.memory.registry import place_problem
from himga.memory.rows import Change, Loaded, Rows, Version
from himga.memory.text import terms_of
from himga.storage.place import Place
from himga.storage.postgres import Database, namespace_id
from himga.storage.receipts import Receipt
from himga.storage.receipts import keep_postgres as keep_receipt
from himga.storage.receipts import read_postgres as read_receipt

_LOAD_ROWS = 10_000
_PLACES_OF = """
    SELECT number, session_id, length, speaker, role, time, metadata, terms
    FROM himga_messages WHERE namespace = %s"""
_PLACES = f"{_PLACES_OF} AND number >= %s ORDER BY number"
CHANGES_KEPT = 1_000
"""How many of a namespace's newest versions the change log keeps rows of: a server that last
looked further back reads the namespace anew."""
_STORED = """
    SELECT number, turn_id, session_id, role, content, date_str, time, timestamp,
        session_timestamp, metadata
    FROM himga_messages"""
HITS = f"{_STORED} WHERE namespace = %s AND number = ANY(%s)"
"""What a search reads of the database (after its namespace's counters): its hits, by primary
key (tests/postgres/test_plans.py holds it to that)."""
_COLUMNS = (
    "namespace, number, session_id, speaker, length, turn_id, role, content, date_str, "
    "timestamp, session_timestamp, time, metadata, terms"
)
_UPDATE = """
    UPDATE himga_messages SET session_id = %s, speaker = %s, length = %s, turn_id = %s,
        role = %s, content = %s, date_str = %s, timestamp = %s, session_timestamp = %s,
        time = %s, metadata = %s, terms = %s
    WHERE namespace = %s AND number = %s"""
MESSAGES = "messages"
"""The receipts' kind of MemoryService's writes (EpisodeService's have their own)."""


class PostgresKeywordMemory(IndexedMemory):
    """BM25 over each turn and its neighbours, the messages of namespace `namespace` in the
    PostgreSQL `database` (whose pool the server owns); see the module's text."""

    def __init__(self, database: Database, namespace: str) -> None:
        super().__init__()
        self._database = database
        self.namespace = namespace
        with database.transaction() as connection:
            self._id = namespace_id(connection, namespace)
        self._check_method()

    @classmethod
    def for_namespace(
        cls, namespace: str, place: Place, options: NoOptions
    ) -> "PostgresKeywordMemory":
        """The registry's factory: the namespace in the server's database."""
        problem = place_problem("postgres", place)
        if problem is not None or not isinstance(place, Database):
            raise InvalidArgument("memory", problem or "")
        return cls(place, namespace)

    @property
    def durable(self) -> bool:
        return True

    @property
    def namespace_id(self) -> int:
        """The id of the namespace's row, which keys its rows in every table."""
        return self._id

    def close(self) -> None:
        """Forget what is held in process (the database's pool is the server's)."""
        with self._lock.writing():
            self._forget()

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Rows]:
        with self._database.transaction(snapshot=not write) as connection:
            yield _PostgresRows(connection, self._id)

    def _check_method(self) -> None:
        """Index the namespace again if its terms were made by another text method."""
        with self._database.transaction() as connection:
            row = connection.execute(
                "SELECT method FROM himga_namespaces WHERE id = %s FOR UPDATE", (self._id,)
            ).fetchone()
            if row is not None and row[0] == METHOD:
                return
            rows = connection.execute(
                "SELECT number, role, content FROM himga_messages WHERE namespace = %s",
                (self._id,),
            ).fetchall()
            if rows:
                numbers, roles, contents = zip(*rows, strict=True)
                own = terms_of(contents)
                connection.cursor().executemany(
                    "UPDATE himga_messages SET speaker = %s, length = %s, terms = %s "
                    "WHERE namespace = %s AND number = %s",
                    [
                        (speaker_key(role), len(terms), " ".join(terms), self._id, number)
                        for number, role, terms in zip(numbers, roles, own, strict=True)
                    ],
                )
            connection.execute(
                "UPDATE himga_namespaces SET method = %s, version = version + 1, "
                "generation = generation + 1 WHERE id = %s",
                (METHOD, self._id),
            )

    def receipt(self, request_id: str) -> Receipt | None:
        """The receipt of the write made with `request_id` within the receipt window, if any."""
        with self._database.transaction(snapshot=True) as connection:
            return read_receipt(connection, self._id, MESSAGES, request_id)


class _PostgresRows:
    """The rows of one namespace, in a transaction of `connection`."""

    def __init__(self, connection: psycopg.Connection[Any], namespace: int) -> None:
        self._connection = connection
        self._id = namespace

    def counters(self, *, lock: bool) -> Version:
        row = self._connection.execute(
            "SELECT version, generation, next_number FROM himga_namespaces WHERE id = %s"
            + (" FOR UPDATE" if lock else ""),
            (self._id,),
        ).fetchone()
        assert row is not None  # namespaces' rows are never deleted
        return Version(*row)

    def postings(self, first: int) -> None:
        return None  # each row carries its terms

    def loaded(self, first: int, *, terms: bool) -> Iterator[Loaded]:
        with self._connection.cursor(name="himga_places") as cursor:
            cursor.itersize = _LOAD_ROWS
            cursor.execute(_PLACES, (self._id, first))
            while rows := cursor.fetchmany(_LOAD_ROWS):
                yield _loaded(rows)

    def loaded_of(self, numbers: Sequence[int]) -> Loaded:
        rows = self._connection.execute(
            f"{_PLACES_OF} AND number = ANY(%s) ORDER BY number",
            (self._id, builtins.list(numbers)),
        ).fetchall()
        return _loaded(rows)

    def changes(self, version: int, generation: int, now: Version) -> list[Change] | None:
        rows = self._connection.execute(
            "SELECT numbers, old_terms FROM himga_changes "
            "WHERE namespace = %s AND version > %s ORDER BY version",
            (self._id, version),
        ).fetchall()
        if len(rows) != now.generation - generation:  # one row a step; a reset writes none
            return None
        return [Change(numbers, [text.split() for text in old]) for numbers, old in rows]

    def numbers(self, ids: Sequence[str]) -> dict[str, int]:
        return dict(
            self._connection.execute(
                "SELECT turn_id, number FROM himga_messages "
                "WHERE namespace = %s AND turn_id = ANY(%s)",
                (self._id, builtins.list(ids)),
            ).fetchall()
        )

    def terms(self, numbers: Sequence[int]) -> builtins.list[builtins.list[str]]:
        if not numbers:
            return []
        rows = self._connection.execute(
            "SELECT number, terms FROM himga_messages WHERE namespace = %s AND number = ANY(%s)",
            (self._id, builtins.list(numbers)),
        ).fetchall()
        by_number = {number: text.split() for number, text in rows}
        return [by_number.get(number, []) for number in numbers]

    def write(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        replaced = set(placing.replaced_numbers)
        rows = zip(
            placing.numbers,
            turns.session_ids,
            turns.speakers,
            map(len, turns.terms),
            *said_columns(turns),
            [" ".join(own) for own in turns.terms],
            strict=True,
        )
        updates = []
        with self._connection.cursor() as cursor:
            with cursor.copy(f"COPY himga_messages ({_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    if row[0] in replaced:
                        updates.append((*row[1:], self._id, row[0]))
                    else:
                        copy.write_row((self._id, *row))
            if updates:
                cursor.executemany(_UPDATE, updates)

    def delete(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> None:
        self._connection.execute(
            "DELETE FROM himga_messages WHERE namespace = %s AND number = ANY(%s)",
            (self._id, builtins.list(numbers)),
        )

    def reset(self) -> None:
        self._connection.execute("DELETE FROM himga_messages WHERE namespace = %s", (self._id,))

    def bump(self, seen: Version, change: Change | None, end: int | None) -> Version:
        version, generation = seen.version + 1, seen.generation
        if change is None:  # a reset: no change log row, so every other server reads anew
            generation, end = generation + 1, 0
        elif change.numbers:
            generation += 1
            self._log_change(version, change)
        self._connection.execute(
            "UPDATE himga_namespaces SET version = version + 1, generation = %s, "
            "next_number = coalesce(%s, next_number) WHERE id = %s",
            (generation, end, self._id),
        )
        return Version(version, generation, seen.end if end is None else end)

    def _log_change(self, version: int, change: Change) -> None:
        """Record the turns a write setting `version` deleted or replaced and their own terms
        before it; forget the rows past the newest CHANGES_KEPT."""
        self._connection.execute(
            "DELETE FROM himga_changes WHERE namespace = %s AND version <= %s",
            (self._id, version - CHANGES_KEPT),
        )
        self._connection.execute(
            "INSERT INTO himga_changes VALUES (%s, %s, %s, %s)",
            (
                self._id,
                version,
                builtins.list(change.numbers),
                [" ".join(own) for own in change.old_terms],
            ),
        )

    def stored(self, numbers: Sequence[int]) -> dict[int, StoredMessage]:
        rows = self._connection.execute(HITS, (self._id, builtins.list(numbers)))
        return {row[0]: stored_of(row) for row in rows}

    def keep_receipt(self, receipt: Receipt) -> None:
        keep_receipt(self._connection, self._id, MESSAGES, receipt)


def _loaded(rows: Sequence[Sequence[Any]]) -> Loaded:
    """Rows of `_PLACES_OF` as the skeleton reads them in."""
    if not rows:
        return Loaded([], [], [], [], [], [], [], [])
    numbers, sessions, lengths, speakers, roles, times, metadata, terms = zip(*rows, strict=True)
    return Loaded(
        numbers,
        sessions,
        lengths,
        speakers,
        roles,
        times,
        [json.loads(m) if m else {} for m in metadata],
        [text.split() for text in terms],
    )
