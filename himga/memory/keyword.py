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
from himga.memory.ranking import NEAR_TURNS, Turn, is_named, rank, window_lengths
from himga.memory.text import query_terms


def _numbers() -> array[int]:
    return array("i")


@dataclass(slots=True)
class _Index:
    turns: list[Turn] = field(default_factory=list)
    # term -> the number of each turn holding it, once per occurrence
    postings: defaultdict[str, array[int]] = field(default_factory=lambda: defaultdict(_numbers))
    # turn number -> its own length, its window length, its session's number, its place there
    lengths: array[int] = field(default_factory=_numbers)
    windows: array[int] = field(default_factory=_numbers)
    session_of: array[int] = field(default_factory=_numbers)
    position: array[int] = field(default_factory=_numbers)
    # session number -> its turns' numbers in order; session_id -> session number
    sessions: list[array[int]] = field(default_factory=list)
    session_numbers: dict[str, int] = field(default_factory=dict)
    total_length: int = 0
    speakers: set[str] = field(default_factory=set)

    def window(self, number: int) -> array[int]:
        """The turns within NEAR_TURNS of turn `number` in its session, itself included."""
        place = self.position[number]
        return self.sessions[self.session_of[number]][
            max(0, place - NEAR_TURNS) : place + NEAR_TURNS + 1
        ]


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
        prepared = Turn.of(items)
        with self._lock:
            for turn in prepared:
                self._add(turn)
        return len(prepared)

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        asked = set(wanted)
        with self._lock:
            index = self._index
            postings = [Counter(index.postings[term]) for term in wanted if term in index.postings]
            windows = {number: index.window(number) for number in set().union(*postings)}
            named = {key for key in index.speakers if is_named(key, asked)}
            boosted = {
                number
                for near in (windows.values() if named else ())
                for number in near
                if index.turns[number].speaker in named
            }
            turns, total = len(index.turns), index.total_length
            best = rank(postings, windows, index.windows, turns, total, boosted, limit)
            return [index.turns[number].hit(score) for number, score in best]

    def reset(self) -> None:
        with self._lock:
            self._index = _Index()

    def _add(self, turn: Turn) -> None:
        index = self._index
        number = len(index.turns)
        session_number = index.session_numbers.setdefault(turn.session_id, len(index.sessions))
        if session_number == len(index.sessions):
            index.sessions.append(_numbers())
        session = index.sessions[session_number]
        before = session[-NEAR_TURNS:]
        gains, (window,) = window_lengths([index.lengths[n] for n in before], [len(turn.terms)])
        for earlier, gain in zip(before, gains, strict=True):
            index.windows[earlier] += gain
        index.turns.append(turn)
        index.speakers.add(turn.speaker)
        index.lengths.append(len(turn.terms))
        index.windows.append(window)
        index.session_of.append(session_number)
        index.position.append(len(session))
        session.append(number)
        index.total_length += window + sum(gains)
        for term in turn.terms:
            index.postings[term].append(number)
        turn.terms = []  # read only while indexing: not kept for the life of the memory
