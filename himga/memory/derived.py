"""DerivedIndex: what a keyword memory derives from its store's rows and keeps in process
memory, and its upkeep; every keyword memory holds one (himga.memory.indexed).

It holds the postings of each term (himga.memory.postings), where each turn sits in its session
(himga.memory.windows) and what filters read of it (himga.memory.facets). A memory loads them
from its store when it opens, reads appended rows in as other connections add them, and keeps
them current after its own writes: `placing` numbers a batch's turns (known ids keep theirs,
new ones follow on), `place` puts the committed batch in, `drop` takes deleted turns out;
`replace` puts in the rows another writer replaced (read back from the store). A search ranks
here and reads nothing from the store but its hits; a listing or delete picks its turns here.
Not thread-safe: the memory's lock guards it (reads may share it: they change nothing here).
"""

import builtins
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from himga.memory.base import Page, StoredMessage
from himga.memory.facets import Facets
from himga.memory.filters import MessageFilter
from himga.memory.method import DEFAULT_METHOD, Method
from himga.memory.paging import encode
from himga.memory.postings import Postings
from himga.memory.ranking import Turns, idf
from himga.memory.times import from_micros, micros
from himga.memory.windows import Windows


@dataclass(frozen=True, slots=True)
class Placing:
    """Where a batch's turns go: each one's turn number, which of them replace a stored turn
    (their indexes in the batch) and which are new, the new ones numbered from `first`."""

    numbers: list[int]
    replaced: list[int]
    new: list[int]
    first: int

    @property
    def replaced_numbers(self) -> list[int]:
        return [self.numbers[i] for i in self.replaced]


class DerivedIndex:
    """The postings, Windows and Facets of one namespace's stored turns, ranked by `method`."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        self.method = method
        self.changes = 0
        """How many times the turns held changed (each clear, skip, load, place, replace and
        drop): what a search ranked here stays true while this stays the same
        (himga.memory.hybrid ranks its keyword side before it lets the lock go)."""
        self.clear()

    def clear(self) -> None:
        """Forget every turn (before reading the store again from the start)."""
        self.changes += 1
        self.windows = Windows(self.method)
        self.facets = Facets()
        self.postings = Postings()

    @property
    def end(self) -> int:
        """The number the next new turn gets: rows numbered from it on are not read in yet."""
        return self.windows.end

    def skip_to(self, end: int) -> None:
        """Make `end` the number the next new turn gets (numbers skipped hold no turn), when it
        is past the present end: a store's high-water mark, kept past deleted turns."""
        self.changes += 1
        self.windows.skip_to(end)

    def load(
        self,
        numbers: Sequence[int],
        sessions: Sequence[str],
        lengths: Sequence[int],
        speakers: Sequence[str],
        roles: Sequence[str],
        times: Sequence[int | None],
        metadata: Sequence[Mapping[str, str]],
        terms: Iterable[Sequence[str]] | None = None,
    ) -> None:
        """Read in stored rows numbered from `end` on (rising; gaps are deleted rows): each
        one's session, own length, speaker, role, time and metadata, and its own terms unless
        the memory reads postings apart (None)."""
        self.changes += 1
        self.windows.add(sessions, lengths, speakers, numbers)
        self.facets.add(numbers, roles, times, metadata)
        if terms is not None:
            self.postings.add_at(numbers, terms)

    def placing(self, turns: Turns, known: Mapping[str, int]) -> Placing:
        """Where `turns` go, given the numbers of those of their ids that are stored."""
        numbers = [known.get(id_, -1) for id_ in turns.turn_ids]
        replaced = [i for i, n in enumerate(numbers) if n >= 0]
        new = [i for i, n in enumerate(numbers) if n < 0]
        first = self.end
        for offset, i in enumerate(new):
            numbers[i] = first + offset
        return Placing(numbers, replaced, new, first)

    def place(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        """Put a committed batch in: replaced turns out of the postings of their `old_terms`
        (one list each) and in at their place, new turns appended."""
        self.changes += 1
        numbers = placing.numbers
        if placing.replaced:
            self._replace(
                *_columns(turns, placing.replaced, numbers),
                old_terms,
                [turns.terms[i] for i in placing.replaced],
            )
        if placing.new:
            self.postings.add(placing.first, [turns.terms[i] for i in placing.new])
            _, sessions, lengths, speakers = _columns(turns, placing.new, numbers)
            self.windows.add(sessions, lengths, speakers)
        self.facets.add(numbers, turns.roles, turns.times, turns.metadata)

    def replace(
        self,
        numbers: Sequence[int],
        sessions: Sequence[str],
        lengths: Sequence[int],
        speakers: Sequence[str],
        roles: Sequence[str],
        times: Sequence[int | None],
        metadata: Sequence[Mapping[str, str]],
        old_terms: Sequence[Sequence[str]],
        terms: Sequence[Sequence[str]],
    ) -> None:
        """Put stored turns' new rows in, as `load` reads rows, in place of the turns held (their
        own terms: `old_terms`, one list each), keeping their numbers."""
        self.changes += 1
        self._replace(numbers, sessions, lengths, speakers, old_terms, terms)
        self.facets.add(numbers, roles, times, metadata)

    def _replace(
        self,
        numbers: Sequence[int],
        sessions: Sequence[str],
        lengths: Sequence[int],
        speakers: Sequence[str],
        old_terms: Sequence[Sequence[str]],
        terms: Sequence[Sequence[str]],
    ) -> None:
        """Replaced turns out of the postings of their `old_terms`, in at their place with
        their new `terms`, and their windows made anew."""
        self.postings.drop(numbers, old_terms)
        for number, own in zip(numbers, terms, strict=True):
            self.postings.insert(number, own)
        self.windows.replace(numbers, sessions, lengths, speakers)

    def drop(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> int:
        """Take deleted turns out (their terms: `old_terms`); how many were stored."""
        self.changes += 1
        self.postings.drop(numbers, old_terms)
        return self.windows.remove(numbers)

    def best(
        self, wanted: Sequence[str], limit: int, chosen: MessageFilter | None
    ) -> builtins.list[tuple[int, float]]:
        """The best `limit` turns for a query of terms `wanted`, among those `chosen` selects."""
        allowed = self.facets.selection(chosen, self.windows) if chosen else None
        return self.windows.best(self.postings.of(wanted), set(wanted), limit, allowed)

    def full_match(self, wanted: Sequence[str]) -> float:
        """What a turn holding each of the terms `wanted` once would score (himga.memory.fusion,
        the keyword scale): see `full_match`."""
        return full_match(self.postings, self.windows.count, wanted)

    def deletable(
        self, numbers: Sequence[int] | None, chosen: MessageFilter | None
    ) -> builtins.list[int]:
        """The stored turns a delete takes: see `deletable`."""
        return deletable(self.windows, self.facets, numbers, chosen)

    def listed(self, chosen: MessageFilter | None, after: int, size: int) -> builtins.list[int]:
        """Up to `size` + 1 stored turns `chosen` selects (all, if None), numbered after
        `after`, rising (one more than a page, to tell whether another follows)."""
        allowed = self.facets.selector(chosen, self.windows) if chosen else None
        numbers: builtins.list[int] = []
        for number in self.windows.stored(after + 1):
            if allowed is None or allowed(number):
                numbers.append(number)
                if len(numbers) > size:
                    break
        return numbers


def full_match(postings: Postings, turns: int, wanted: Sequence[str]) -> float:
    """The keyword score of a turn of average window length holding each term of `wanted`
    once: with f = 1 and dl = avgdl a term's BM25 part is its idf, so this is the sum of their
    idf (himga.memory.ranking.idf) over the `turns` stored. A term's document frequency is
    taken as its number of occurrences in the turns' own text (the postings' length, capped
    at `turns`): the ranking counts the windows holding it instead, which are more, so this
    idf is a little higher; it is deterministic and costs nothing per stored turn. A term no
    turn holds counts with n = 0."""
    return sum(idf(turns, min(postings.occurrences(term), turns)) for term in wanted)


def page_of(
    numbers: Sequence[int],
    size: int,
    stored: Callable[[Sequence[int]], Mapping[int, StoredMessage]],
) -> Page:
    """A page of a listing of `size` turns from what `DerivedIndex.listed` found (`numbers`),
    their messages read by number with `stored`."""
    found = stored(numbers[:size])
    messages = [found[number] for number in numbers[:size]]
    return Page(messages, encode(numbers[size - 1]) if len(numbers) > size else "")


def _columns(
    turns: Turns, chosen: Sequence[int], numbers: Sequence[int]
) -> tuple[builtins.list[int], builtins.list[str], builtins.list[int], builtins.list[str]]:
    """The numbers, session keys, own lengths and speakers of the turns at `chosen`."""
    return (
        [numbers[i] for i in chosen],
        [turns.session_ids[i] for i in chosen],
        [len(turns.terms[i]) for i in chosen],
        [turns.speakers[i] for i in chosen],
    )


def deletable(
    windows: Windows,
    facets: Facets,
    numbers: Iterable[int] | None,
    chosen: MessageFilter | None,
) -> builtins.list[int]:
    """The stored turns a delete takes, of those `windows` and `facets` describe: `numbers`
    (those of its ids; None for a delete by filter alone), those `chosen` selects among them."""
    if numbers is None:
        assert chosen is not None  # himga.memory.filters.deletion saw to it
        if chosen.session_ids:
            numbers = sorted(windows.turns_of(windows.session_numbers(chosen.session_ids)))
        else:
            numbers = windows.stored()
    if chosen:
        allowed = facets.selector(chosen, windows)
        return [number for number in numbers if allowed(number)]
    return builtins.list(numbers)


def said_columns(turns: Turns) -> tuple[Sequence[Any], ...]:
    """What the SQL stores keep of each turn besides its number, session, speaker and length,
    column by column, in their tables' order: turn_id, role, content, date_str,
    timestamp, session_timestamp and time (microseconds, or None), metadata (JSON or None)."""
    return (
        turns.turn_ids,
        turns.roles,
        turns.contents,
        turns.date_strs,
        [None if t is None else micros(t) for t in turns.timestamps],
        [None if t is None else micros(t) for t in turns.session_timestamps],
        turns.times,
        [metadata_json(pairs) for pairs in turns.metadata],
    )


def metadata_json(pairs: Mapping[str, str]) -> str | None:
    """How a message's metadata is stored: a JSON object with sorted keys, or NULL for none."""
    return json.dumps(dict(pairs), ensure_ascii=False, sort_keys=True) if pairs else None


def stored_of(row: Sequence[Any]) -> StoredMessage:
    """The StoredMessage of a stored row: (number, turn_id, session_id, role, content,
    date_str, time, timestamp, session_timestamp, metadata), times in microseconds, metadata
    as JSON text or NULL (how the SQL stores select them)."""
    _, turn_id, session_id, role, content, date_str, time, timestamp, session_time, pairs = row
    return StoredMessage(
        turn_id,
        session_id,
        role,
        content,
        date_str,
        None if time is None else from_micros(time),
        None if timestamp is None else from_micros(timestamp),
        None if session_time is None else from_micros(session_time),
        json.loads(pairs) if pairs else {},
    )
