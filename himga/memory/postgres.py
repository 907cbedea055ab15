"""PostgresKeywordMemory: the shared keyword method (himga.memory.ranking) over PostgreSQL, so
that several servers over one database are one service.

Every namespace lives in one database (himga.storage.postgres_schema: `himga_messages` keyed
by the namespace's id, one `himga_namespaces` row each). As the SQLite memory, it keeps what
it derives in process (himga.memory.derived: the postings, each turn's place in its session,
what filters read of it): loaded once when a server first opens the namespace, then kept
current incrementally. Before each call it reads the namespace's row (one primary-key lookup):
an unchanged `version` means nothing to read; otherwise the rows numbered past what it holds
are read in (appended by another server). When `generation` moved (a delete, a replacement, a
reset), the change log (`himga_changes`, written by each delete and correction in its
transaction) says which turns changed and what terms they held: deleted ones are taken out and
replaced ones read again by primary key, in place, as their writer did; after a reset, or when
the log no longer reaches back to what this server holds, everything is read again. A search
then ranks in process and reads only its hits, by primary key: the database sees no scan and
no text search.

A write takes the namespace's row FOR UPDATE (writers to one namespace serialise across
servers; readers never wait: they read a snapshot), reads in what others committed, numbers
its turns, writes them, raises the counters, asks `himga.memory.commit.before_commit` whether
it is still wanted and writes its receipt, in the same transaction, then commits. A write that
returned is committed (with a synchronous standby, on both servers); one whose COMMIT was lost
with the connection raises DatabaseUnavailable, and its retry with the same request id is
answered from its receipt on whichever server it reaches.
"""

import builtins
import functools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg

from himga.data.conversation import Message, Session
from himga.errors import InvalidArgument
from himga.memory import commit
from himga.memory.base import DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, Hit, Page, StoredMessage, hit_of
from himga.memory.context import ContextFromHits
from himga.memory.derived import DerivedIndex, said_columns, stored_of
from himga.memory.filters import MessageFilter, deletion
from himga.memory.ranking import METHOD, Turns, speaker_key
from himga.memory.registry import place_problem
from himga.memory.text import query_terms, terms_of
from himga.storage.place import Place
from himga.storage.postgres import Database, namespace_id
from himga.storage.receipts import keep_postgres as keep_receipt
from himga.storage.receipts import read_postgres as read_receipt

T = TypeVar("T")
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


class PostgresKeywordMemory(ContextFromHits):
    """BM25 over each turn and its neighbours, the messages of namespace `namespace` in the
    PostgreSQL `database` (whose pool the server owns); see the module's text."""

    def __init__(self, database: Database, namespace: str) -> None:
        self._lock = threading.Lock()
        self._database = database
        self.namespace = namespace
        self._index = DerivedIndex()
        self._version: int | None = None
        self._generation: int | None = None
        with database.transaction() as connection:
            self._id = namespace_id(connection, namespace)
        self._check_method()

    @classmethod
    def for_namespace(cls, namespace: str, place: Place) -> "PostgresKeywordMemory":
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
        with self._lock:
            self._index = DerivedIndex()
            self._version = self._generation = None

    @contextmanager
    def _using(self, *, write: bool) -> Iterator[tuple[psycopg.Connection[Any], int, int]]:
        """A transaction (a writer's holding the namespace's row), with what others committed
        read in first; the connection and the namespace's version and generation. Called under
        the lock. Whatever fails, the version is read again next time."""
        try:
            with self._database.transaction(snapshot=not write) as connection:
                version, generation = self._refresh(connection, lock=write)
                yield connection, version, generation
        except BaseException:
            self._version = None
            raise

    def _refresh(self, connection: psycopg.Connection[Any], *, lock: bool) -> tuple[int, int]:
        """Read in what changed since this process last looked; the version and generation."""
        row = connection.execute(
            "SELECT version, generation, next_number FROM himga_namespaces WHERE id = %s"
            + (" FOR UPDATE" if lock else ""),
            (self._id,),
        ).fetchone()
        assert row is not None  # namespaces' rows are never deleted
        version, generation, next_number = row
        if version == self._version:
            return version, generation
        if generation != self._generation and not self._apply_changes(connection, generation):
            self._read_anew()
        self._generation = generation
        with connection.cursor(name="himga_places") as cursor:
            cursor.itersize = _LOAD_ROWS
            cursor.execute(_PLACES, (self._id, self._index.end))
            while rows := cursor.fetchmany(_LOAD_ROWS):
                numbers, sessions, lengths, speakers, roles, times, metadata, terms = zip(
                    *rows, strict=True
                )
                self._index.load(
                    numbers,
                    sessions,
                    lengths,
                    speakers,
                    roles,
                    times,
                    [json.loads(m) if m else {} for m in metadata],
                    [text.split() for text in terms],
                )
        # Past the newest turns deleted: new turns are numbered alike on every server.
        self._index.skip_to(next_number)
        self._version = version
        return version, generation

    def _read_anew(self) -> None:
        """Forget what is held: the namespace's rows are all read in again (a reset, a change
        the log no longer holds, or the first look)."""
        self._index.clear()

    def _apply_changes(self, connection: psycopg.Connection[Any], generation: int) -> bool:
        """Apply in place the deletes and corrections others made since this process's version,
        as their writers did, from the change log: whether it held them all (one row for each
        step of the generation; a reset writes none). Rows numbered from `end` on are read in
        after, as they are now, by the caller."""
        if self._version is None or self._generation is None:
            return False
        rows = connection.execute(
            "SELECT numbers, old_terms FROM himga_changes "
            "WHERE namespace = %s AND version > %s ORDER BY version",
            (self._id, self._version),
        ).fetchall()
        if len(rows) != generation - self._generation:
            return False
        held: dict[int, builtins.list[str]] = {}  # each turn's terms before its first change
        end, holds = self._index.end, self._index.windows.holds
        for numbers, old_terms in rows:
            for number, terms in zip(numbers, old_terms, strict=True):
                if number < end and number not in held and holds(number):
                    held[number] = terms.split()
        if not held:
            return True
        found = connection.execute(
            f"{_PLACES_OF} AND number = ANY(%s) ORDER BY number",
            (self._id, sorted(held)),
        ).fetchall()
        gone = sorted(held.keys() - {row[0] for row in found})
        if gone:
            self._index.drop(gone, [held[number] for number in gone])
        if found:
            numbers, sessions, lengths, speakers, roles, times, metadata, terms = zip(
                *found, strict=True
            )
            self._index.replace(
                numbers,
                sessions,
                lengths,
                speakers,
                roles,
                times,
                [json.loads(m) if m else {} for m in metadata],
                [held[number] for number in numbers],
                [text.split() for text in terms],
            )
        return True

    def _log_change(
        self,
        connection: psycopg.Connection[Any],
        version: int,
        numbers: Sequence[int],
        old_terms: Sequence[Sequence[str]],
    ) -> None:
        """Record, in the write's transaction, the turns a write setting `version` deleted or
        replaced and their own terms before it; forget the rows past the newest CHANGES_KEPT."""
        connection.execute(
            "DELETE FROM himga_changes WHERE namespace = %s AND version <= %s",
            (self._id, version - CHANGES_KEPT),
        )
        connection.execute(
            "INSERT INTO himga_changes VALUES (%s, %s, %s, %s)",
            (self._id, version, builtins.list(numbers), [" ".join(own) for own in old_terms]),
        )

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

    def ingest(self, message: Message, session: Session) -> None:
        self.store([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        return len(self.store(items))

    def store(self, items: Iterable[tuple[Message, Session]]) -> builtins.list[str]:
        """Store every item in one transaction: all of them are committed when this returns,
        or (on any error) none. A message whose id is stored replaces it, in its place."""
        turns = Turns.of(items)
        if not turns:
            return turns.item_ids
        with self._lock:
            with self._using(write=True) as (connection, version, generation):
                known = dict(
                    connection.execute(
                        "SELECT turn_id, number FROM himga_messages "
                        "WHERE namespace = %s AND turn_id = ANY(%s)",
                        (self._id, turns.turn_ids),
                    ).fetchall()
                )
                placing = self._index.placing(turns, known)
                old_terms = self._terms(connection, placing.replaced_numbers)
                self._write(connection, turns, placing.numbers, set(placing.replaced_numbers))
                if placing.replaced:
                    generation += 1
                    self._log_change(connection, version + 1, placing.replaced_numbers, old_terms)
                self._raise(connection, generation, placing.first + len(placing.new))
                commit.before_commit(self._keeper(connection), turns.item_ids)
            self._placed(
                version + 1, generation, lambda: self._index.place(turns, placing, old_terms)
            )
        return turns.item_ids

    def _placed(self, version: int, generation: int, change: Callable[[], T]) -> T:
        """After a commit: the counters it left, and `change` made to what is held."""
        try:
            result = change()
        except BaseException:  # committed but not placed: read it all again next time
            self._version = self._generation = None
            raise
        self._version, self._generation = version, generation
        return result

    def _raise(
        self, connection: psycopg.Connection[Any], generation: int, next_number: int | None = None
    ) -> None:
        """Raise the namespace's version, set its generation and (given) its next number."""
        connection.execute(
            "UPDATE himga_namespaces SET version = version + 1, generation = %s, "
            "next_number = coalesce(%s, next_number) WHERE id = %s",
            (generation, next_number, self._id),
        )

    def _terms(
        self, connection: psycopg.Connection[Any], numbers: Sequence[int]
    ) -> builtins.list[builtins.list[str]]:
        """The own terms of stored turns, one list for each of `numbers`."""
        if not numbers:
            return []
        rows = connection.execute(
            "SELECT number, terms FROM himga_messages WHERE namespace = %s AND number = ANY(%s)",
            (self._id, builtins.list(numbers)),
        ).fetchall()
        by_number = {number: text.split() for number, text in rows}
        return [by_number.get(number, []) for number in numbers]

    def _write(
        self,
        connection: psycopg.Connection[Any],
        turns: Turns,
        numbers: Sequence[int],
        replaced: set[int],
    ) -> None:
        """Write the rows of `turns` under their numbers: an update for those in `replaced`,
        the others copied in."""
        rows = zip(
            numbers,
            turns.session_ids,
            turns.speakers,
            map(len, turns.terms),
            *said_columns(turns),
            [" ".join(own) for own in turns.terms],
            strict=True,
        )
        updates = []
        with connection.cursor() as cursor:
            with cursor.copy(f"COPY himga_messages ({_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    if row[0] in replaced:
                        updates.append((*row[1:], self._id, row[0]))
                    else:
                        copy.write_row((self._id, *row))
            if updates:
                cursor.executemany(_UPDATE, updates)

    def _keeper(self, connection: psycopg.Connection[Any]) -> Callable[[commit.Receipt], None]:
        """What writes a receipt in the transaction of `connection`."""
        return lambda receipt: keep_receipt(connection, self._id, MESSAGES, receipt)

    def receipt(self, request_id: str) -> commit.Receipt | None:
        """The receipt of the write made with `request_id` within the receipt window, if any."""
        with self._database.transaction(snapshot=True) as connection:
            return read_receipt(connection, self._id, MESSAGES, request_id)

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        with self._lock, self._using(write=False) as (connection, _, _):
            best = self._index.best(wanted, limit, filter)
            if not best:
                return []
            stored = self._stored(connection, [number for number, _ in best])
        return [hit_of(stored[number], score) for number, score in best]

    def _stored(
        self, connection: psycopg.Connection[Any], numbers: Sequence[int]
    ) -> dict[int, StoredMessage]:
        """The stored messages of these turn numbers (read by primary key), by number."""
        rows = connection.execute(HITS, (self._id, builtins.list(numbers)))
        return {row[0]: stored_of(row) for row in rows}

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        wanted, chosen = deletion(ids, filter)
        with self._lock:
            with self._using(write=True) as (connection, version, generation):
                known = None
                if wanted:
                    found = connection.execute(
                        "SELECT number FROM himga_messages "
                        "WHERE namespace = %s AND turn_id = ANY(%s) ORDER BY number",
                        (self._id, sorted(wanted)),
                    ).fetchall()
                    known = [number for (number,) in found]
                numbers = self._index.deletable(known, chosen)
                old_terms = self._terms(connection, numbers)
                if numbers:
                    connection.execute(
                        "DELETE FROM himga_messages WHERE namespace = %s AND number = ANY(%s)",
                        (self._id, numbers),
                    )
                    generation += 1
                    self._raise(connection, generation)
                    self._log_change(connection, version + 1, numbers, old_terms)
                # Even when nothing matched: a retry of this delete then answers 0 again.
                commit.before_commit(self._keeper(connection), len(numbers))
            if not numbers:
                return 0
            return self._placed(
                version + 1, generation, lambda: self._index.drop(numbers, old_terms)
            )

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        with self._lock, self._using(write=False) as (connection, _, _):
            return self._index.page(
                filter,
                page_size,
                page_token,
                lambda after, count: connection.execute(
                    f"{_STORED} WHERE namespace = %s AND number > %s ORDER BY number LIMIT %s",
                    (self._id, after, count),
                ).fetchall(),
                functools.partial(self._stored, connection),
            )

    def reset(self) -> None:
        with self._lock:
            with self._using(write=True) as (connection, version, generation):
                connection.execute("DELETE FROM himga_messages WHERE namespace = %s", (self._id,))
                self._raise(connection, generation + 1, 0)
            self._placed(version + 1, generation + 1, self._index.clear)
