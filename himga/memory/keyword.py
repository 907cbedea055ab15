"""KeywordMemory: the shared keyword method (himga.memory.ranking) over rows kept in process
memory, in dictionaries.

Nothing touches the disk. It is the skeleton every keyword memory shares (himga.memory.indexed)
over a store of dictionaries: a turn's row by its number, a number by its id. A transaction's
writes are kept aside and applied when it ends, so a write that fails, or that its caller no
longer wants when it would commit (himga.storage.commit), changes nothing. The counters never
move (no one else writes), so a call reads nothing in; the index is read from the rows only
when a write was stored but could not be placed in it. One lock guards every method (searches
and listings share it), so threads may share an instance.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from types import MappingProxyType

from himga.memory.base import StoredMessage
from himga.memory.derived import Placing
from himga.memory.indexed import IndexedMemory
from himga.memory.method import DEFAULT_METHOD, Method
from himga.memory.ranking import Turns, speaker_key
from himga.memory.rows import Change, Loaded, Rows, Version
from himga.memory.text import terms_of
from himga.memory.times import from_micros
from himga.storage.place import Place
from himga.storage.receipts import Receipt

_Row = tuple[
    str,  # turn_id
    str,  # session_id
    str,  # role
    str,  # content
    str,  # date_str
    int | None,  # time, in microseconds
    datetime | None,  # timestamp
    datetime | None,  # session_timestamp
    Mapping[str, str],  # metadata
]
_STILL = Version(0, 0)
"""The counters of a store no one else writes."""
_NO_METADATA: Mapping[str, str] = MappingProxyType({})


class _Dictionaries:
    """The rows of one memory, and the Rows of its transactions (one writing at a time, or
    many reading: the memory's lock)."""

    def __init__(self) -> None:
        self.rows: dict[int, _Row] = {}  # number -> row, numbers rising
        self.by_id: dict[str, int] = {}  # id -> number
        self._metadata: dict[frozenset[tuple[str, str]], Mapping[str, str]] = {}
        self._pending: builtins.list[Callable[[], None]] = []

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[_Dictionaries]:
        if not write:  # searches share it side by side: they only read
            yield self
            return
        self._pending = []
        yield self
        for change in self._pending:
            change()
        self._pending = []

    def counters(self, *, lock: bool) -> Version:
        return _STILL

    def postings(self, first: int) -> None:
        return None

    def loaded(self, first: int, *, terms: bool) -> Iterator[Loaded]:
        numbers = sorted(number for number in self.rows if number >= first)
        if numbers:
            yield self.loaded_of(numbers)

    def loaded_of(self, numbers: Sequence[int]) -> Loaded:
        rows = [(number, self.rows[number]) for number in numbers if number in self.rows]
        own = terms_of([row[3] for _, row in rows])
        return Loaded(
            [number for number, _ in rows],
            [row[1] for _, row in rows],
            [len(terms) for terms in own],
            [speaker_key(row[2]) for _, row in rows],
            [row[2] for _, row in rows],
            [row[5] for _, row in rows],
            [row[8] for _, row in rows],
            own,
        )

    def changes(self, version: int, generation: int, now: Version) -> None:
        return None

    def numbers(self, ids: Sequence[str]) -> dict[str, int]:
        known = self.by_id
        return {id_: known[id_] for id_ in ids if id_ in known}

    def terms(self, numbers: Sequence[int]) -> builtins.list[builtins.list[str]]:
        return terms_of([self.rows[number][3] for number in numbers])

    def write(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        said = zip(
            turns.turn_ids,
            turns.session_ids,
            turns.roles,
            turns.contents,
            turns.date_strs,
            turns.times,
            turns.timestamps,
            turns.session_timestamps,
            map(self._kept, turns.metadata),
            strict=True,
        )
        rows = builtins.list(zip(placing.numbers, said, strict=True))

        def apply() -> None:
            for number, row in rows:
                self.rows[number] = row
                self.by_id[row[0]] = number

        self._pending.append(apply)

    def _kept(self, pairs: Mapping[str, str]) -> Mapping[str, str]:
        """Metadata as the memory keeps it: a copy, one for equal pairs."""
        if not pairs:
            return _NO_METADATA
        key = frozenset(pairs.items())
        kept = self._metadata.get(key)
        if kept is None:
            kept = self._metadata[key] = dict(pairs)
        return kept

    def delete(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> None:
        def apply() -> None:
            for number in numbers:
                del self.by_id[self.rows.pop(number)[0]]

        self._pending.append(apply)

    def reset(self) -> None:
        def apply() -> None:
            self.rows.clear()
            self.by_id.clear()
            self._metadata.clear()

        self._pending.append(apply)

    def bump(self, seen: Version, change: Change | None, end: int | None) -> Version:
        return seen

    def stored(self, numbers: Sequence[int]) -> dict[int, StoredMessage]:
        found = {}
        for number in numbers:
            turn_id, session_id, role, content, date_str, time, stamp, session_stamp, pairs = (
                self.rows[number]
            )
            found[number] = StoredMessage(
                turn_id,
                session_id,
                role,
                content,
                date_str,
                None if time is None else from_micros(time),
                stamp,
                session_stamp,
                pairs,
            )
        return found

    def keep_receipt(self, receipt: Receipt) -> None:
        """Nothing: a server keeps an in-process memory's receipts itself."""


class KeywordMemory(IndexedMemory):
    """In-process BM25 over each turn and its neighbours; see himga.memory.ranking. `method`
    sets its parameters (the default is the one every memory uses)."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        super().__init__(method)
        self._store = _Dictionaries()

    @classmethod
    def for_namespace(cls, namespace: str, place: Place, options: Method) -> KeywordMemory:
        """The registry's factory: in-process, so every namespace starts empty and none is kept;
        `options` are the ranking's parameters."""
        return cls(options)

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Rows]:
        with self._store.transaction(write=write) as rows:
            yield rows
