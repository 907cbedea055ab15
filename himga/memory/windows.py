"""Windows: where each stored turn sits in its session, which the shared ranking needs beyond the
postings of the query's terms (see himga.memory.ranking).

Turns are numbered from 0 in the order their ids were first stored; a number is never given to
another turn while the memory lives (a deleted turn leaves a hole, a replaced one keeps its
number). For each turn, Windows keeps its session's number, the turns just before and after it
in its session (sessions link their turns in number order), its speaker and its window length
(the number of terms in it and in the near_turns turns each side of it). A new turn appends to
these arrays, links itself after the last turn of its session and adds its length to the
windows of the turns just before it; nothing else changes. A delete or a replacement relinks
the turns it touches and recomputes the windows of the turns within near_turns of them, nothing
else. Each turn's cell (its neighbours, window length and speaker packed in 4 bytes, which the
ranking core reads in a large store: himga.memory._ranking) is rewritten with what changes it.
About 28 bytes a turn.

Every keyword memory holds one in the index it derives (himga.memory.derived), rebuilt from its
store (which keeps only each turn's session, speaker and own length) when it opens.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Hashable, Iterable, Iterator, Sequence
from itertools import pairwise

from himga.memory._ranking import CELL_MOST_NEAR, cells
from himga.memory.ranking import DEFAULT_METHOD, Method, Selection, is_named, rank

NO_SESSION = -1
"""The session number of a number that holds no turn (deleted, or never used)."""


def _numbers() -> array[int]:
    return array("i")


class Windows:
    """The turns stored, by number: their sessions, neighbours, speakers and window lengths (of
    `method.near_turns` turns each side), ranked by `method`."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        self.method = method
        self._session_numbers: dict[Hashable, int] = {}  # session key -> session number
        self._last = _numbers()  # session number -> the number of its last turn, -1 for none
        self._session_of = _numbers()  # turn number -> its session number, or NO_SESSION
        self._lengths = _numbers()  # turn number -> its own number of terms
        self._windows = _numbers()  # turn number -> its window length
        # turn number -> the turn before / after it in its session, -1 for none
        self._before = _numbers()
        self._after = _numbers()
        self._speakers = _numbers()  # turn number -> its speaker's number (-1: no turn)
        # turn number -> its cell, of the columns above; none for windows cells cannot hold
        self._cells: array[int] | None = array("I") if method.near_turns <= CELL_MOST_NEAR else None
        self._speaker_numbers: dict[str, int] = {}  # speaker's key -> its number
        # a speaker key's first term -> the keys starting with it: a query names only these
        self._keys_by_term: dict[str, list[str]] = {}
        self.total_length = 0  # the sum of all window lengths
        self.count = 0  # how many turns are stored

    def __len__(self) -> int:
        """How many turns are stored."""
        return self.count

    @property
    def end(self) -> int:
        """The number the next new turn gets: one past the highest ever given."""
        return len(self._lengths)

    def holds(self, number: int) -> bool:
        """Whether turn `number` is stored."""
        return 0 <= number < len(self._session_of) and self._session_of[number] != NO_SESSION

    def add(
        self,
        sessions: Sequence[Hashable],
        lengths: Sequence[int],
        speakers: Sequence[str],
        numbers: Sequence[int] | None = None,
    ) -> None:
        """Append new turns, in order: each one's session key, own length and speaker's key.
        Their numbers follow on from `end`, or are `numbers` (rising, from `end` on: numbers
        skipped are holes, as a store's deleted rows are)."""
        if not len(sessions) == len(lengths) == len(speakers):
            raise ValueError("Windows.add takes a session, a length and a speaker for each turn")
        if numbers is None:
            self._append(sessions, lengths, speakers)
            return
        if len(numbers) != len(sessions) or any(b <= a for a, b in pairwise(numbers)):
            raise ValueError("Windows.add takes rising numbers, one for each turn")
        if numbers and numbers[0] < self.end:
            raise ValueError(f"turn {numbers[0]} is not new")
        start = 0
        for index in range(1, len(numbers) + 1):  # each run of consecutive numbers at once
            if index == len(numbers) or numbers[index] != numbers[index - 1] + 1:
                self.skip_to(numbers[start])
                self._append(sessions[start:index], lengths[start:index], speakers[start:index])
                start = index

    def _append(
        self, sessions: Sequence[Hashable], lengths: Sequence[int], speakers: Sequence[str]
    ) -> None:
        """Append turns numbered on from `end`."""
        # Called for every stored turn when a SQLite memory opens: locals, not attributes.
        windows, own, before, after, last_of, session_of, session_numbers = (
            self._windows,
            self._lengths,
            self._before,
            self._after,
            self._last,
            self._session_of,
            self._session_numbers,
        )
        near, total, number = self.method.near_turns, self.total_length, len(own)
        first, older = number, []  # older: turns before these whose windows take them in
        for session_key, length in zip(sessions, lengths, strict=True):
            session = session_numbers.get(session_key)
            if session is None:
                session = self._session_number(session_key)
            last = last_of[session]
            before.append(last)
            after.append(-1)
            window = length
            if last >= 0:
                after[last] = number
                earlier = last
                for _ in range(near):  # the turns before it take it into their windows
                    window += own[earlier]
                    windows[earlier] += length
                    total += length
                    if earlier < first:
                        older.append(earlier)
                    earlier = before[earlier]
                    if earlier < 0:
                        break
            total += window
            last_of[session] = number
            session_of.append(session)
            own.append(length)
            windows.append(window)
            number += 1
        self.total_length = total
        self._speakers.extend(map(self._speaker_number, speakers))
        self.count += len(sessions)
        older.extend(range(first, number))
        self._rewrite_cells(older)

    def _speaker_number(self, key: str) -> int:
        speaker = self._speaker_numbers.get(key)
        if speaker is None:
            speaker = self._speaker_numbers[key] = len(self._speaker_numbers)
            self._keys_by_term.setdefault(key.split(" ")[0], []).append(key)
        return speaker

    def skip_to(self, number: int) -> None:
        """Holes up to `number`: numbers that hold no turn (none when `number` <= `end`)."""
        start = len(self._lengths)
        missing = number - start
        self._session_of.extend([NO_SESSION] * missing)
        for column in (self._lengths, self._windows):
            column.extend([0] * missing)
        for column in (self._before, self._after, self._speakers):
            column.extend([-1] * missing)
        self._rewrite_cells(range(start, number))

    def _rewrite_cells(self, numbers: Iterable[int]) -> None:
        """Rewrite the cells of these turn numbers from the columns, once every column covers
        them (a cell for each number up to `end`)."""
        if self._cells is None:
            return
        missing = len(self._lengths) - len(self._cells)
        if missing > 0:
            self._cells.frombytes(bytes(4 * missing))
        wanted = array("i", numbers)
        if wanted:
            cells(
                self._cells,
                wanted,
                self._before,
                self._after,
                self._windows,
                self._speakers,
                self.method.near_turns,
            )

    def _session_number(self, key: Hashable) -> int:
        number = self._session_numbers.setdefault(key, len(self._last))
        if number == len(self._last):
            self._last.append(-1)
        return number

    def _near(self, numbers: Iterable[int]) -> set[int]:
        """The turns within near_turns of each of `numbers` in their sessions, themselves
        included: those whose windows hold them."""
        near, before, after = self.method.near_turns, self._before, self._after
        found: set[int] = set()
        for number in numbers:
            found.add(number)
            for links in (before, after):
                other = number
                for _ in range(near):
                    other = links[other]
                    if other < 0:
                        break
                    found.add(other)
        return found

    def _window_of(self, number: int) -> int:
        near, own = self.method.near_turns, self._lengths
        window = own[number]
        for links in (self._before, self._after):
            other = number
            for _ in range(near):
                other = links[other]
                if other < 0:
                    break
                window += own[other]
        return window

    def _recompute(self, numbers: Iterable[int]) -> None:
        """Recompute the windows of these stored turns, keeping total_length their sum."""
        windows = self._windows
        for number in numbers:
            if self._session_of[number] == NO_SESSION:
                continue
            window = self._window_of(number)
            self.total_length += window - windows[number]
            windows[number] = window

    def _unlink(self, number: int) -> None:
        before, after = self._before[number], self._after[number]
        if before >= 0:
            self._after[before] = after
        if after >= 0:
            self._before[after] = before
        else:
            self._last[self._session_of[number]] = before
        self._before[number] = self._after[number] = -1

    def _link(self, number: int, session: int) -> None:
        """Link a turn into `session` at its number's place."""
        after, before = -1, self._last[session]
        while before > number:
            after, before = before, self._before[before]
        self._before[number], self._after[number] = before, after
        if before >= 0:
            self._after[before] = number
        if after >= 0:
            self._before[after] = number
        else:
            self._last[session] = number
        self._session_of[number] = session

    def remove(self, numbers: Iterable[int]) -> int:
        """Forget the turns of `numbers` that are stored; return how many there were."""
        gone = {n for n in numbers if self.holds(n)}
        if not gone:
            return 0
        touched = self._near(gone) - gone
        for n in gone:
            self._unlink(n)
            self.total_length -= self._windows[n]
            self._session_of[n] = NO_SESSION
            self._lengths[n] = self._windows[n] = 0
            self._speakers[n] = -1
        self._recompute(touched)
        self._rewrite_cells(touched | gone)
        self.count -= len(gone)
        return len(gone)

    def replace(
        self,
        numbers: Sequence[int],
        sessions: Sequence[Hashable],
        lengths: Sequence[int],
        speakers: Sequence[str],
    ) -> None:
        """Give stored turns a new session, own length and speaker, keeping their numbers: a
        turn that changes session moves to its number's place in the new one."""
        if not len(numbers) == len(sessions) == len(lengths) == len(speakers):
            raise ValueError("Windows.replace takes a session, length and speaker for each turn")
        if not all(map(self.holds, numbers)):
            raise ValueError("Windows.replace takes stored turns only")
        touched = self._near(numbers)
        for n, key, length, speaker in zip(numbers, sessions, lengths, speakers, strict=True):
            session = self._session_number(key)
            if session != self._session_of[n]:
                self._unlink(n)
                self._link(n, session)
            self._lengths[n] = length
            self._speakers[n] = self._speaker_number(speaker)
        touched |= self._near(numbers)
        self._recompute(touched)
        self._rewrite_cells(touched)

    def session_numbers(self, keys: Iterable[Hashable]) -> set[int]:
        """The session numbers of the sessions with these keys (unknown keys have none)."""
        return {self._session_numbers[key] for key in keys if key in self._session_numbers}

    @property
    def sessions(self) -> int:
        """How many session numbers have been given."""
        return len(self._last)

    def session_of(self) -> array[int]:
        """Each turn number's session number (NO_SESSION for a number holding no turn)."""
        return self._session_of

    def turns_of(self, session_numbers: Iterable[int]) -> set[int]:
        """Every stored turn of these sessions."""
        found: set[int] = set()
        before = self._before
        for session in session_numbers:
            number = self._last[session]
            while number >= 0:
                found.add(number)
                number = before[number]
        return found

    def stored(self, start: int = 0) -> Iterator[int]:
        """The numbers of the stored turns from `start` on, rising."""
        session_of = self._session_of
        for number in range(max(start, 0), len(session_of)):
            if session_of[number] != NO_SESSION:
                yield number

    def named(self, asked: Collection[str]) -> list[str]:
        """The keys of the stored speakers a query with terms `asked` names (is_named)."""
        return [
            key
            for term in asked
            for key in self._keys_by_term.get(term, ())
            if is_named(key, asked)
        ]

    def beside(self, number: int) -> tuple[int, int]:
        """The turns just before and just after stored turn `number` in its session (-1 for
        none)."""
        return self._before[number], self._after[number]

    def links(self) -> tuple[array[int], array[int], array[int]]:
        """Each turn number's session number (NO_SESSION: no turn) and the turns just before and
        after it in its session (-1: none), as `holds` and `beside` tell: for the hybrid fusion in C
        (himga.memory.fusion.Links), which reads them while the caller holds the index."""
        return self._session_of, self._before, self._after

    def best(
        self,
        postings: Sequence[array[int]],
        asked: Collection[str],
        limit: int,
        allowed: Selection | None = None,
    ) -> list[tuple[int, float]]:
        """The best `limit` turns as (turn number, score) for a query with terms `asked`, whose
        terms' postings (the number of each turn holding the term, once per occurrence) are
        `postings`; only turns `allowed` selects, when it is given, while the statistics stay
        those of every turn."""
        if not postings or limit <= 0:
            return []
        named = bytearray(len(self._speaker_numbers))
        for term in asked:
            for key in self._keys_by_term.get(term, ()):
                if is_named(key, asked):
                    named[self._speaker_numbers[key]] = 1
        return rank(
            postings,
            self._before,
            self._after,
            self._windows,
            self._speakers,
            bytes(named),
            self.count,
            self.total_length,
            limit,
            self.method,
            allowed,
            self._cells,
        )
