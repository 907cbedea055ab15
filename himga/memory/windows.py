"""Windows: where each stored turn sits in its session, which the shared ranking needs beyond the
postings of the query's terms (see himga.memory.ranking).

Turns are numbered from 0 in the order their ids were first stored; a number is never given to
another turn while the memory lives (a deleted turn leaves a hole, a replaced one keeps its
number). For each turn, Windows keeps its session, its place there (sessions list their turns
in number order), its speaker's key and its window length (the number of terms in it and in the
NEAR_TURNS turns each side of it). A new turn appends to these arrays and adds its length to
the windows of the turns just before it; a delete or a replacement recomputes the places and
windows of the sessions it touches, nothing else. About 30 bytes a turn.

Both keyword memories hold one: KeywordMemory as its index, SQLiteKeywordMemory rebuilt from
its database (which stores only each turn's session, speaker and own length) when it opens.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from itertools import pairwise

from himga.memory.ranking import NEAR_TURNS, is_named, rank

NO_SESSION = -1
"""The session number of a number that holds no turn (deleted, or never used)."""


def _numbers() -> array[int]:
    return array("i")


class Windows:
    """The turns stored, by number: their sessions, places, speakers and windows."""

    def __init__(self) -> None:
        self._sessions: list[array[int]] = []  # session number -> its turns' numbers, in order
        self._numbers: dict[Hashable, int] = {}  # session key -> session number
        self._session_of = _numbers()  # turn number -> its session number, or NO_SESSION
        self._places = _numbers()  # turn number -> its place in its session
        self._lengths = _numbers()  # turn number -> its own number of terms
        self._windows = _numbers()  # turn number -> its window length
        self._speakers: list[str] = []  # turn number -> its speaker's key
        self._distinct_speakers: set[str] = set()
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
                self._skip_to(numbers[start])
                self._append(sessions[start:index], lengths[start:index], speakers[start:index])
                start = index

    def _append(
        self, sessions: Sequence[Hashable], lengths: Sequence[int], speakers: Sequence[str]
    ) -> None:
        """Append turns numbered on from `end`."""
        windows, own, numbers = self._windows, self._lengths, self._numbers
        for session_key, length in zip(sessions, lengths, strict=True):
            session_number = numbers.get(session_key)
            if session_number is None:
                session_number = self._session_number(session_key)
            session = self._sessions[session_number]
            window = length
            for earlier in session[-NEAR_TURNS:]:
                window += own[earlier]
                windows[earlier] += length
                self.total_length += length
            self.total_length += window
            self._session_of.append(session_number)
            self._places.append(len(session))
            session.append(len(own))
            own.append(length)
            windows.append(window)
        self._speakers.extend(speakers)
        self._distinct_speakers.update(speakers)
        self.count += len(sessions)

    def _skip_to(self, number: int) -> None:
        """Holes up to `number`: numbers that hold no turn."""
        missing = number - len(self._lengths)
        self._session_of.extend([NO_SESSION] * missing)
        for column in (self._places, self._lengths, self._windows):
            column.extend([0] * missing)
        self._speakers.extend([""] * missing)

    def _session_number(self, key: Hashable) -> int:
        number = self._numbers.setdefault(key, len(self._sessions))
        if number == len(self._sessions):
            self._sessions.append(_numbers())
        return number

    def remove(self, numbers: Iterable[int]) -> int:
        """Forget the turns of `numbers` that are stored; return how many there were."""
        gone = {n for n in numbers if self.holds(n)}
        if not gone:
            return 0
        touched = {self._session_of[n] for n in gone}
        before = self._sum_windows(touched)
        for session_number in touched:
            kept = [n for n in self._sessions[session_number] if n not in gone]
            self._sessions[session_number] = array("i", kept)
        for n in gone:
            self._session_of[n] = NO_SESSION
            self._lengths[n] = self._windows[n] = self._places[n] = 0
            self._speakers[n] = ""
        self._replace_windows(touched, before)
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
        new_sessions = [self._session_number(key) for key in sessions]
        touched = {self._session_of[n] for n in numbers} | set(new_sessions)
        before = self._sum_windows(touched)
        for n, session_number, length, speaker in zip(
            numbers, new_sessions, lengths, speakers, strict=True
        ):
            old = self._session_of[n]
            if old != session_number:
                self._sessions[old].pop(bisect.bisect_left(self._sessions[old], n))
                bisect.insort(self._sessions[session_number], n)
                self._session_of[n] = session_number
            self._lengths[n] = length
            self._speakers[n] = speaker
        self._distinct_speakers.update(speakers)
        self._replace_windows(touched, before)

    def _sum_windows(self, session_numbers: Iterable[int]) -> int:
        windows = self._windows
        return sum(windows[n] for s in session_numbers for n in self._sessions[s])

    def _replace_windows(self, session_numbers: Iterable[int], before: int) -> None:
        """Recompute the places and windows of the turns of these sessions, whose windows
        summed to `before`."""
        own, windows, places = self._lengths, self._windows, self._places
        after = 0
        for session_number in session_numbers:
            session = self._sessions[session_number]
            lengths = [own[n] for n in session]
            for place, n in enumerate(session):
                window = sum(lengths[max(0, place - NEAR_TURNS) : place + NEAR_TURNS + 1])
                windows[n] = window
                places[n] = place
                after += window
        self.total_length += after - before

    def window(self, number: int) -> array[int]:
        """The turns within NEAR_TURNS of turn `number` in its session, itself included."""
        place = self._places[number]
        session = self._sessions[self._session_of[number]]
        return session[max(0, place - NEAR_TURNS) : place + NEAR_TURNS + 1]

    def session_numbers(self, keys: Iterable[Hashable]) -> set[int]:
        """The session numbers of the sessions with these keys (unknown keys have none)."""
        return {self._numbers[key] for key in keys if key in self._numbers}

    def session_of(self) -> Sequence[int]:
        """Each turn number's session number (NO_SESSION for a number holding no turn)."""
        return self._session_of

    def turns_of(self, session_numbers: Iterable[int]) -> set[int]:
        """Every stored turn of these sessions."""
        return {n for s in session_numbers for n in self._sessions[s]}

    def stored(self, start: int = 0) -> Iterator[int]:
        """The numbers of the stored turns from `start` on, rising."""
        session_of = self._session_of
        for number in range(max(start, 0), len(session_of)):
            if session_of[number] != NO_SESSION:
                yield number

    def best(
        self,
        postings: Sequence[Mapping[int, int]],
        asked: Collection[str],
        limit: int,
        allowed: Callable[[int], bool] | None = None,
    ) -> list[tuple[int, float]]:
        """The best `limit` turns as (turn number, score) for a query with terms `asked`, whose
        terms' postings ({turn number: count in the turn}) are `postings`; only turns for which
        `allowed` holds, when it is given, while the statistics stay those of every turn."""
        if not postings or limit <= 0:
            return []
        windows = {number: self.window(number) for number in set().union(*postings)}
        named = {key for key in self._distinct_speakers if is_named(key, asked)}
        boosted: set[int] = set()
        if named:
            speakers = self._speakers
            near = set().union(*windows.values())
            boosted = {number for number in near if speakers[number] in named}
        return rank(
            postings,
            windows,
            self._windows,
            self.count,
            self.total_length,
            boosted,
            limit,
            allowed,
        )
