"""IndexedMemory: what every keyword memory shares, written once over a store's rows
(himga.memory.rows), as himga.episodes.indexed is for episode stores.

The skeleton holds the lock (himga.memory.readwrite: searches and listings share it, anything
that changes the index holds it alone), opens a transaction of the store, reads in what others
committed since it last looked (`_refresh`), numbers a batch's turns, has the store write them,
raise its counters and, just before COMMIT, asks himga.storage.commit whether the write is
still wanted (and writes its receipt); once committed, it places the write in the index it derives
(himga.memory.derived: postings, windows, facets). A search ranks in that index and reads only
its hits from the store; a filter costs no query. A write committed but not placed (an error in
between) leaves the index to be read anew on the next call, as does a failed read-in; any
other failure only makes the next call look at the counters again.

A read (`_read`) ranks in the index under the shared side of the lock, then opens a read
transaction and reads its hits there only if the store's counters are still those the index was
read at: the hits and the rows then come from the same state of the store, whatever others
committed meanwhile. When they moved (another connection or server wrote), the read is done
again under the exclusive side, which reads their commits in first.

A store engine subclasses it with `_transaction`, which yields its Rows: SQLite and PostgreSQL
in their SQL, the in-process memory in dictionaries. Hits, scores and listings are the same
whatever the engine: the same index ranks them.
"""

import builtins
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

from himga.data.conversation import Message, Session
from himga.memory.base import DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, Hit, Page, hit_of
from himga.memory.context import ContextFromHits
from himga.memory.derived import DerivedIndex, page_of
from himga.memory.filters import MessageFilter, deletion
from himga.memory.method import DEFAULT_METHOD, Method
from himga.memory.paging import check_page_size, decode
from himga.memory.ranking import Turns
from himga.memory.readwrite import ReadWriteLock
from himga.memory.rows import Change, Rows, Version
from himga.memory.text import query_terms
from himga.storage import commit

T = TypeVar("T")
R = TypeVar("R")


class IndexedMemory(ContextFromHits):
    """A keyword memory over a store's rows, ranked by `method`. Thread-safe: one lock guards
    the index and the store's use, searches and listings holding it side by side."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        self._lock = ReadWriteLock()
        self._method = method
        self._index = self._derived()
        self._version: int | None = None
        self._generation: int | None = None

    @abstractmethod
    def _transaction(self, *, write: bool) -> AbstractContextManager[Rows]:
        """One transaction of the store (`write`: one that may write), yielding its Rows;
        committed when the block ends without an error, rolled back otherwise."""

    def _derived(self) -> DerivedIndex:
        """A new, empty index of what this memory derives from its rows (a memory that derives
        more, himga.memory.hybrid, makes a subclass's)."""
        return DerivedIndex(self._method)

    def _turns_of(self, items: Iterable[tuple[Message, Session]]) -> Turns:
        """A batch as this memory writes it, made before its lock is taken (a memory that
        writes more of each turn, himga.memory.hybrid, makes it here)."""
        return Turns.of(items)

    @property
    def method(self) -> Method:
        """The ranking's parameters."""
        return self._method

    # --- the skeleton ----------------------------------------------------------------------

    @property
    def thread_safe(self) -> bool:
        return True

    @contextmanager
    def _using(self, *, write: bool) -> Iterator[tuple[Rows, Version]]:
        """A transaction with what others committed read in first: its rows and the counters
        it began with. Called under the exclusive side of the lock."""
        try:
            with self._transaction(write=write) as rows:
                yield rows, self._refresh(rows, write=write)
        except BaseException:
            self._version = None
            raise

    def _refresh(self, rows: Rows, *, write: bool) -> Version:
        """Read in what changed since this memory last looked; the counters now."""
        now = rows.counters(lock=write)
        if now.version == self._version:
            return now
        try:
            if now.generation != self._generation and not self._apply_changes(rows, now):
                self._read_anew()
            self._generation = now.generation
            first = self._index.end
            postings = rows.postings(first)
            if postings is not None:
                for term, numbers in postings:
                    self._index.postings.extend(term, numbers)
            for batch in rows.loaded(first, terms=postings is None):
                self._index.load(
                    batch.numbers,
                    batch.sessions,
                    batch.lengths,
                    batch.speakers,
                    batch.roles,
                    batch.times,
                    batch.metadata,
                    batch.terms,
                )
            if now.end is not None:  # past the newest turns deleted
                self._index.skip_to(now.end)
        except BaseException:  # half read in: read it all again next time
            self._version = self._generation = None
            raise
        self._version = now.version
        return now

    def _read_anew(self) -> None:
        """Forget what is held: the store's rows are all read in again (the first look, a reset,
        a change no log describes)."""
        self._index.clear()

    def _apply_changes(self, rows: Rows, now: Version) -> bool:
        """Apply in place the replacements and deletes others made since this memory last
        looked, as their writers did, from the store's change log: whether it described them
        all. Rows numbered from the index's end on are read in afterwards, as they are now."""
        if self._version is None or self._generation is None:
            return False
        changes = rows.changes(self._version, self._generation, now)
        if changes is None:
            return False
        held: dict[int, builtins.list[str]] = {}  # each turn's terms before its first change
        end, holds = self._index.end, self._index.windows.holds
        for change in changes:
            for number, terms in zip(change.numbers, change.old_terms, strict=True):
                if number < end and number not in held and holds(number):
                    held[number] = builtins.list(terms)
        if not held:
            return True
        found = rows.loaded_of(sorted(held))
        gone = sorted(held.keys() - set(found.numbers))
        if gone:
            self._index.drop(gone, [held[number] for number in gone])
        if found.numbers:
            assert found.terms is not None
            self._index.replace(
                found.numbers,
                found.sessions,
                found.lengths,
                found.speakers,
                found.roles,
                found.times,
                found.metadata,
                [held[number] for number in found.numbers],
                found.terms,
            )
        return True

    def full_match(self, wanted: Sequence[str]) -> float:
        """What a turn holding each of the terms `wanted` once would score here
        (himga.memory.derived.full_match), the index read in first when it is not current."""
        with self._lock.reading():
            if self._version is not None:
                return self._index.full_match(wanted)
        with self._lock.writing(), self._using(write=False):
            return self._index.full_match(wanted)

    def _read(self, pick: Callable[[], T], read: Callable[[Rows, T], R]) -> R:
        """`read(rows, picked)` of what `pick` picked in the index, in a read transaction of
        the state of the store the index holds: under the shared side of the lock when the
        index is current, else under the exclusive side, after reading in what others
        committed."""
        with self._lock.reading():
            version = self._version
            if version is not None:
                picked = pick()
                with self._transaction(write=False) as rows:
                    if rows.counters(lock=False).version == version:
                        return read(rows, picked)
        with self._lock.writing(), self._using(write=False) as (rows, _):
            return read(rows, pick())

    def _placed(self, after: Version, change: Callable[[], T]) -> T:
        """After a commit: `change` made to the index, and the counters the commit left."""
        try:
            result = change()
        except BaseException:  # committed but not placed: read it all again next time
            self._version = self._generation = None
            raise
        self._version, self._generation = after.version, after.generation
        return result

    def _forget(self) -> None:
        """Drop the index (it is read anew on the next call). Called under the exclusive side
        of the lock."""
        self._index = self._derived()
        self._version = self._generation = None

    # --- the interface ---------------------------------------------------------------------

    def ingest(self, message: Message, session: Session) -> None:
        self.store([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        return len(self.store(items))

    def store(self, items: Iterable[tuple[Message, Session]]) -> builtins.list[str]:
        """Store every item in one transaction: all of them when this returns, or (on any
        error) none. A message whose id is stored replaces it, in its place."""
        turns = self._turns_of(items)
        if not turns:
            return turns.item_ids
        with self._lock.writing():
            with self._using(write=True) as (rows, seen):
                placing = self._index.placing(turns, rows.numbers(turns.turn_ids))
                replaced = placing.replaced_numbers
                old_terms = rows.terms(replaced)
                rows.write(turns, placing, old_terms)
                end = placing.first + len(placing.new)
                after = rows.bump(seen, Change(replaced, old_terms), end)
                commit.before_commit(rows.keep_receipt, turns.item_ids)
            self._placed(after, lambda: self._index.place(turns, placing, old_terms))
        return turns.item_ids

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []

        def hits(rows: Rows, best: builtins.list[tuple[int, float]]) -> builtins.list[Hit]:
            if not best:
                return []
            stored = rows.stored([number for number, _ in best])
            return [hit_of(stored[number], score) for number, score in best]

        return self._read(lambda: self._index.best(wanted, limit, filter), hits)

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        wanted, chosen = deletion(ids, filter)
        with self._lock.writing():
            with self._using(write=True) as (rows, seen):
                known = sorted(rows.numbers(sorted(wanted)).values()) if wanted else None
                numbers = self._index.deletable(known, chosen)
                old_terms: builtins.list[builtins.list[str]] = []
                after = seen
                if numbers:
                    old_terms = rows.terms(numbers)
                    rows.delete(numbers, old_terms)
                    after = rows.bump(seen, Change(numbers, old_terms), None)
                # Even when nothing matched: a retry of this delete then answers 0 again.
                commit.before_commit(rows.keep_receipt, len(numbers))
            if not numbers:
                return 0
            return self._placed(after, lambda: self._index.drop(numbers, old_terms))

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        size = check_page_size(page_size)
        return self._read(
            lambda: self._index.listed(filter, decode(page_token), size),
            lambda rows, numbers: page_of(numbers, size, rows.stored),
        )

    def reset(self) -> None:
        with self._lock.writing():
            with self._using(write=True) as (rows, seen):
                rows.reset()
                after = rows.bump(seen, None, 0)
            self._placed(after, self._index.clear)
