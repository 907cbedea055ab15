"""Windows: where each stored turn sits in its session, which the shared ranking needs beyond the
postings of the query's terms (see himga.memory.ranking).

Turns are numbered from 0 in the order they were ingested. For each, Windows keeps the turns
just before and after it in its session, its speaker and its window length (the number of terms
in it and in the near_turns turns each side of it). A new turn appends to these arrays, links
itself after the last turn of its session and adds its length to the windows of the turns just
before it; nothing else changes. About 25 bytes a turn.

Both keyword memories hold one: KeywordMemory as its index, SQLiteKeywordMemory rebuilt from
its database (which stores only each turn's session, speaker and own length) when it opens.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Hashable, Sequence

from himga.memory.ranking import DEFAULT_METHOD, Method, is_named, rank


def _numbers() -> array[int]:
    return array("i")


class Windows:
    """The turns stored so far, in ingest order: their sessions, places, speakers and windows
    (of `method.near_turns` turns each side), ranked by `method`."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        self.method = method
        self._sessions: list[array[int]] = []  # session number -> its turns' numbers, in order
        self._numbers: dict[Hashable, int] = {}  # session key -> session number
        self._lengths = _numbers()  # turn number -> its own number of terms
        self._windows = _numbers()  # turn number -> its window length
        # turn number -> the turn before / after it in its session, -1 for none
        self._before = _numbers()
        self._after = _numbers()
        self._speakers = _numbers()  # turn number -> its speaker's number
        self._speaker_numbers: dict[str, int] = {}  # speaker's key -> its number
        # a speaker key's first term -> the keys starting with it: a query names only these
        self._keys_by_term: dict[str, list[str]] = {}
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
        near = self.method.near_turns
        for session_key, length in zip(sessions, lengths, strict=True):
            session_number = self._numbers.setdefault(session_key, len(self._sessions))
            if session_number == len(self._sessions):
                self._sessions.append(_numbers())
            session = self._sessions[session_number]
            self._before.append(session[-1] if session else -1)
            self._after.append(-1)
            if session:
                self._after[session[-1]] = len(own)
            window = length
            for earlier in session[max(0, len(session) - near) :] if near else ():
                window += own[earlier]
                windows[earlier] += length
                self.total_length += length
            self.total_length += window
            session.append(len(own))
            own.append(length)
            windows.append(window)
        numbers = self._speaker_numbers
        for key in speakers:
            number = numbers.get(key)
            if number is None:
                number = numbers[key] = len(numbers)
                self._keys_by_term.setdefault(key.split(" ")[0], []).append(key)
            self._speakers.append(number)

    def best(
        self, postings: Sequence[array[int]], asked: Collection[str], limit: int
    ) -> list[tuple[int, float]]:
        """The best `limit` turns as (turn number, score) for a query with terms `asked`, whose
        terms' postings (the number of each turn holding the term, once per occurrence) are
        `postings`."""
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
            len(self._lengths),
            self.total_length,
            limit,
            self.method,
        )
