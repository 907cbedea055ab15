"""Windows: where each stored turn sits in its session, which the shared ranking needs beyond the
postings of the query's terms (see himga.memory.ranking).

Turns are numbered from 0 in the order they were ingested. For each, Windows keeps its session,
its place there, its speaker's key and its window length (the number of terms in it and in the
NEAR_TURNS turns each side of it). A new turn appends to these arrays and adds its length to the
windows of the turns just before it; nothing else changes. About 30 bytes a turn.

Both keyword memories hold one: KeywordMemory as its index, SQLiteKeywordMemory rebuilt from
its database (which stores only each turn's session, speaker and own length) when it opens.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Hashable, Mapping, Sequence

from himga.memory.ranking import NEAR_TURNS, is_named, rank


def _numbers() -> array[int]:
    return array("i")


class Windows:
    """The turns stored so far, in ingest order: their sessions, places, speakers and windows."""

    def __init__(self) -> None:
        self._sessions: list[array[int]] = []  # session number -> its turns' numbers, in order
        self._numbers: dict[Hashable, int] = {}  # session key -> session number
        self._session_of = _numbers()  # turn number -> its session number
        self._places = _numbers()  # turn number -> its place in its session
        self._lengths = _numbers()  # turn number -> its own number of terms
        self._windows = _numbers()  # turn number -> its window length
        self._speakers: list[str] = []  # turn number -> its speaker's key
        self._distinct_speakers: set[str] = set()
        self.total_length = 0  # the sum of all window lengths

    def __len__(self) -> int:
        return len(self._lengths)

    def add(
        self, sessions: Sequence[Hashable], lengths: Sequence[int], speakers: Sequence[str]
    ) -> None:
        """Append turns, in order: each one's session key, own length and speaker's key."""
        if not len(sessions) == len(lengths) == len(speakers):
            raise ValueError("Windows.add takes a session, a length and a speaker for each turn")
        windows, own = self._windows, self._lengths
        for session_key, length in zip(sessions, lengths, strict=True):
            session_number = self._numbers.setdefault(session_key, len(self._sessions))
            if session_number == len(self._sessions):
                self._sessions.append(_numbers())
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

    def window(self, number: int) -> array[int]:
        """The turns within NEAR_TURNS of turn `number` in its session, itself included."""
        place = self._places[number]
        session = self._sessions[self._session_of[number]]
        return session[max(0, place - NEAR_TURNS) : place + NEAR_TURNS + 1]

    def best(
        self, postings: Sequence[Mapping[int, int]], asked: Collection[str], limit: int
    ) -> list[tuple[int, float]]:
        """The best `limit` turns as (turn number, score) for a query with terms `asked`, whose
        terms' postings ({turn number: count in the turn}) are `postings`."""
        if not postings or limit <= 0:
            return []
        windows = {number: self.window(number) for number in set().union(*postings)}
        named = {key for key in self._distinct_speakers if is_named(key, asked)}
        boosted: set[int] = set()
        if named:
            speakers = self._speakers
            near = set().union(*windows.values())
            boosted = {number for number in near if speakers[number] in named}
        turns = len(self._lengths)
        return rank(postings, windows, self._windows, turns, self.total_length, boosted, limit)
