"""Windows: where each stored turn sits in its session, which the shared ranking needs beyond the
postings of the query's terms (see himga.memory.ranking).

Turns are numbered from 0 in the order they were ingested. For each, Windows keeps the turns
just before and after it in its session, its speaker and its window length (the number of terms
in it and in the near_turns turns each side of it). A new turn appends to these arrays, links
itself after the last turn of its session and adds its length to the windows of the turns just
before it; nothing else changes. About 20 bytes a turn.

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
    """The turns stored so far, in ingest order: their neighbours in their sessions, speakers
    and window lengths (of `method.near_turns` turns each side), ranked by `method`."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        self.method = method
        self._last: dict[Hashable, int] = {}  # session key -> the number of its last turn
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
        # Called for every stored turn when a SQLite memory opens: locals, not attributes.
        windows, own, before, after, last_of = (
            self._windows,
            self._lengths,
            self._before,
            self._after,
            self._last,
        )
        near, total, number = self.method.near_turns, self.total_length, len(own)
        for session_key, length in zip(sessions, lengths, strict=True):
            last = last_of.get(session_key, -1)
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
                    earlier = before[earlier]
                    if earlier < 0:
                        break
            total += window
            last_of[session_key] = number
            own.append(length)
            windows.append(window)
            number += 1
        self.total_length = total
        numbers = self._speaker_numbers
        for key in speakers:
            speaker = numbers.get(key)
            if speaker is None:
                speaker = numbers[key] = len(numbers)
                self._keys_by_term.setdefault(key.split(" ")[0], []).append(key)
            self._speakers.append(speaker)

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
