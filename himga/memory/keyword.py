"""KeywordMemory: the shared keyword method (himga.memory.ranking) over an in-process index.

Nothing touches the disk. Ingest is incremental: a new turn appends its number to the postings
of its own terms and its length to the window lengths of the (up to NEAR_TURNS) turns before
it in its session; nothing else changes. Postings are arrays of turn numbers, one entry per
occurrence (4 bytes, where a dict entry costs about 100). One lock guards every method, so
threads may share an instance.
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from himga.data.schema import Message, Session
from himga.memory.base import DEFAULT_LIMIT, Hit
from himga.memory.context import ContextFromHits
from himga.memory.ranking import NEAR_TURNS, Turns, is_named, rank, window_lengths
from himga.memory.text import query_terms


def _numbers() -> array[int]:
    return array("i")


@dataclass(slots=True)
class _Index:
    # turn number -> (turn_id, session_id, role, content, date_str): what its hit reports
    said: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    # turn number -> its speaker's key, own length, window length, session number, place there
    speakers: list[str] = field(default_factory=list)
    lengths: array[int] = field(default_factory=_numbers)
    windows: array[int] = field(default_factory=_numbers)
    session_of: array[int] = field(default_factory=_numbers)
    places: array[int] = field(default_factory=_numbers)
    # session number -> its turns' numbers in order; session_id -> session number
    sessions: list[array[int]] = field(default_factory=list)
    numbers: dict[str, int] = field(default_factory=dict)
    # term -> the number of each turn holding it, once per occurrence
    postings: defaultdict[str, array[int]] = field(default_factory=lambda: defaultdict(_numbers))
    total_length: int = 0
    distinct_speakers: set[str] = field(default_factory=set)

    def add(self, turns: Turns) -> None:
        columns = (turns.turn_ids, turns.session_ids, turns.roles, turns.contents, turns.date_strs)
        self.said.extend(zip(*columns, strict=True))
        self.speakers.extend(turns.speakers)
        self.distinct_speakers.update(turns.speakers)
        for own in turns.terms:
            number = len(self.lengths)
            session_id = self.said[number][1]
            session_number = self.numbers.setdefault(session_id, len(self.sessions))
            if session_number == len(self.sessions):
                self.sessions.append(_numbers())
            session = self.sessions[session_number]
            before = session[-NEAR_TURNS:]
            gains, (window,) = window_lengths([self.lengths[n] for n in before], [len(own)])
            for earlier, gain in zip(before, gains, strict=True):
                self.windows[earlier] += gain
            self.lengths.append(len(own))
            self.windows.append(window)
            self.session_of.append(session_number)
            self.places.append(len(session))
            session.append(number)
            self.total_length += window + sum(gains)
            for term in own:
                self.postings[term].append(number)

    def window(self, number: int) -> array[int]:
        """The turns within NEAR_TURNS of turn `number` in its session, itself included."""
        place = self.places[number]
        session = self.sessions[self.session_of[number]]
        return session[max(0, place - NEAR_TURNS) : place + NEAR_TURNS + 1]


class KeywordMemory(ContextFromHits):
    """In-process BM25 over each turn and its neighbours; see himga.memory.ranking."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index = _Index()

    @classmethod
    def for_namespace(cls, namespace: str, data_dir: Path | None) -> KeywordMemory:
        """The registry's factory: in-process, so every namespace starts empty and none is kept."""
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        self.ingest_many([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        """Index every item; the items are read (and checked) before the index changes."""
        turns = Turns.of(items)
        with self._lock:
            self._index.add(turns)
        return len(turns)

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        asked = set(wanted)
        with self._lock:
            index = self._index
            postings = [Counter(index.postings[term]) for term in wanted if term in index.postings]
            windows = {number: index.window(number) for number in set().union(*postings)}
            near = set().union(*windows.values())
            lengths = {number: index.windows[number] for number in near}
            named = {key for key in index.distinct_speakers if is_named(key, asked)}
            boosted = {number for number in near if index.speakers[number] in named}
            turns, total = len(index.lengths), index.total_length
            best = rank(postings, windows, lengths, turns, total, boosted, limit)
            return [Hit(*index.said[number], score) for number, score in best]

    def reset(self) -> None:
        with self._lock:
            self._index = _Index()
