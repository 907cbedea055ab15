"""KeywordMemory: the shared keyword method (himga.memory.ranking) over an in-process index.

Nothing touches the disk. Ingest is incremental: a new turn adds its own postings, and its
terms to the neighbour field of the (up to NEAR_TURNS) earlier turns of its session; nothing
else is re-indexed. One lock guards every method, so threads may share an instance.
"""

import heapq
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from himga.data.schema import Message, Session
from himga.memory.base import DEFAULT_LIMIT, Hit
from himga.memory.context import ContextFromHits
from himga.memory.ranking import (
    NEAR_TURNS,
    NEAR_WEIGHT,
    OWN_WEIGHT,
    SPEAKER_BOOST,
    Turn,
    idf,
    is_named,
    near_terms,
    term_score,
)
from himga.memory.text import query_terms


@dataclass(slots=True)
class _Turn(Turn):
    # terms in both fields, plus the one speaker token, as the SQLite store counts a row's size
    length: int = 0


@dataclass(slots=True)
class _Index:
    turns: list[_Turn] = field(default_factory=list)
    # term -> {turn number: weighted frequency over both fields}
    postings: defaultdict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))
    # session_id -> the turn numbers of that session, in the order they came
    sessions: defaultdict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    total_length: int = 0
    # One float object per distinct frequency (there are few: multiples of NEAR_WEIGHT), shared
    # by all postings instead of one per posting: at 100k turns, 225 MB resident instead of 381.
    frequencies: dict[float, float] = field(default_factory=dict)
    speakers: set[str] = field(default_factory=set)


class KeywordMemory(ContextFromHits):
    """In-process BM25 over each turn and its neighbours; see himga.memory.ranking."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index = _Index()

    @classmethod
    def for_namespace(cls, namespace: str, data_dir: Path | None) -> "KeywordMemory":
        """The registry's factory: in-process, so every namespace starts empty and none is kept."""
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        self.ingest_many([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        """Index every item; the items are read (and checked) before the index changes."""
        prepared = [_Turn.of(message, session) for message, session in items]
        with self._lock:
            for turn in prepared:
                self._add(turn)
        return len(prepared)

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        with self._lock:
            index = self._index
            rows = len(index.turns)
            if rows == 0:
                return []
            average_length = index.total_length / rows or 1.0
            scores: dict[int, float] = defaultdict(float)
            for term in wanted:
                posting = index.postings.get(term)
                if not posting:
                    continue
                term_idf = idf(rows, len(posting))
                for number, frequency in posting.items():
                    length = index.turns[number].length
                    scores[number] += term_score(term_idf, frequency, length, average_length)
            asked = set(wanted)
            named = {key: is_named(key, asked) for key in index.speakers}
            if any(named.values()):
                for number in scores:
                    if named[index.turns[number].speaker]:
                        scores[number] *= 1 + SPEAKER_BOOST
            best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))
            return [index.turns[number].hit(score) for number, score in best]

    def reset(self) -> None:
        with self._lock:
            self._index = _Index()

    def _add(self, turn: _Turn) -> None:
        index = self._index
        postings = index.postings
        number = len(index.turns)
        session = index.sessions[turn.session_id]
        before = session[-NEAR_TURNS:]
        window = [index.turns[n].terms for n in before] + [turn.terms]
        near = near_terms(window, len(window) - 1)
        turn.length = len(turn.terms) + len(near) + 1
        index.turns.append(turn)
        index.speakers.add(turn.speaker)
        session.append(number)
        own: dict[str, float] = {}
        for term in turn.terms:
            own[term] = own.get(term, 0.0) + 1.0
        fields = {term: count * OWN_WEIGHT for term, count in own.items()}
        for term in near:
            fields[term] = fields.get(term, 0.0) + NEAR_WEIGHT
        shared = index.frequencies
        for term, frequency in fields.items():
            postings[term][number] = shared.setdefault(frequency, frequency)
        # The new turn is a later neighbour of the turns just before it.
        for earlier in before:
            for term, count in own.items():
                posting = postings[term]
                frequency = posting.get(earlier, 0.0) + count * NEAR_WEIGHT
                posting[earlier] = shared.setdefault(frequency, frequency)
            index.turns[earlier].length += len(turn.terms)
        index.total_length += turn.length + len(turn.terms) * len(before)
        if len(session) > NEAR_TURNS:  # only the last NEAR_TURNS turns' terms are read again
            index.turns[session[-NEAR_TURNS - 1]].terms = []
