"""Rows: what the keyword memory's skeleton (himga.memory.indexed) asks of the store under it,
one transaction at a time. A store engine implements this protocol and nothing else of the
skeleton: SQLite and PostgreSQL in their SQL, the in-process memory in dictionaries.

Turns are numbered as himga.memory.windows numbers them (from 0, in the order their ids were
first stored; a replaced turn keeps its number, a deleted one leaves a hole). A store's counters
(`Version`) tell the skeleton what changed since it last looked: nothing (the same `version`),
rows appended only (the same `generation`), or more, which a store with a change log describes
(`changes`) and any other store answers by being read anew.
"""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from himga.memory.base import StoredMessage
from himga.memory.derived import Placing
from himga.memory.ranking import Turns
from himga.storage.receipts import Receipt


@dataclass(frozen=True, slots=True)
class Version:
    """A store's counters as one transaction reads them. `version` moves whenever someone else
    may have committed (SQLite: the connection's data_version; PostgreSQL: the namespace's
    version, raised by every write); `generation` whenever rows changed other than by being
    appended (a replacement, a delete, a reset); `end`, when the store keeps one, at least the
    number the next new turn gets (past the newest deleted turns, so that every server and
    connection numbers alike: PostgreSQL keeps the number itself, SQLite the one past the
    newest turn deleted, the rows telling the rest)."""

    version: int
    generation: int
    end: int | None = None


@dataclass(frozen=True, slots=True)
class Loaded:
    """Stored rows as the skeleton reads them in, column by column, numbers rising: each one's
    session, own length, speaker's key, role, time (microseconds, or None), metadata and own
    terms (None when the store handed the postings over apart, `Rows.postings`)."""

    numbers: Sequence[int]
    sessions: Sequence[str]
    lengths: Sequence[int]
    speakers: Sequence[str]
    roles: Sequence[str]
    times: Sequence[int | None]
    metadata: Sequence[Mapping[str, str]]
    terms: Sequence[Sequence[str]] | None


@dataclass(frozen=True, slots=True)
class Change:
    """Turns one write replaced or deleted, and the own terms each had before it."""

    numbers: Sequence[int]
    old_terms: Sequence[Sequence[str]]


class Rows(Protocol):
    """One transaction of a store. A write transaction holds the store's write lock from its
    first call (`counters(lock=True)`) to its end; what it writes is committed when the
    transaction ends without an error, and nothing of it otherwise."""

    def counters(self, *, lock: bool) -> Version:
        """The store's counters now; `lock`: taking the write lock."""
        ...

    def postings(self, first: int) -> Iterable[tuple[str, str]] | None:
        """The postings of the rows numbered from `first` on, term by term (the turn numbers as
        decimals apart by spaces, rising), when the store keeps them apart and reads them
        faster so; None when `loaded` is to carry each row's terms."""
        ...

    def loaded(self, first: int, *, terms: bool) -> Iterator[Loaded]:
        """The rows numbered from `first` on, a batch at a time, with their terms if `terms`
        (read rows after a number)."""
        ...

    def loaded_of(self, numbers: Sequence[int]) -> Loaded:
        """Those of the rows of `numbers` (rising) that are stored, with their terms."""
        ...

    def changes(self, version: int, generation: int, now: Version) -> list[Change] | None:
        """What changed since `version` and `generation` other than appended rows, oldest
        first, from the store's change log; None when the store keeps none or it no longer
        reaches back there (the skeleton then reads everything anew)."""
        ...

    def numbers(self, ids: Sequence[str]) -> dict[str, int]:
        """The turn numbers of those of `ids` that are stored (number lookup)."""
        ...

    def terms(self, numbers: Sequence[int]) -> list[list[str]]:
        """The own terms of stored turns, one list for each of `numbers` (the terms a row had)."""
        ...

    def write(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        """Write the rows of `turns` under `placing.numbers`: the replaced ones (whose terms were
        `old_terms`) in place, the new ones added (write rows)."""
        ...

    def delete(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> None:
        """Delete the rows of stored turns `numbers`, whose terms are `old_terms`."""
        ...

    def reset(self) -> None:
        """Delete every row."""
        ...

    def bump(self, seen: Version, change: Change | None, end: int | None) -> Version:
        """Raise the counters for this transaction's write (after `seen`): `change` is what it
        replaced or deleted (no numbers: it only appended; None: a reset), `end` the number the
        next new turn gets after it (None: unchanged). The counters the commit leaves."""
        ...

    def stored(self, numbers: Sequence[int]) -> dict[int, StoredMessage]:
        """The stored messages of these turn numbers, by number (read rows)."""
        ...

    def keep_receipt(self, receipt: Receipt) -> None:
        """Record a write's receipt in this transaction (himga.storage.commit)."""
        ...
