"""KeywordMemory: the shared keyword method (himga.memory.ranking) over an in-process index.

Nothing touches the disk. Ingest is incremental: a new turn appends its number to the postings
of its own terms (himga.memory.postings: 4 bytes an occurrence, where a dict entry costs about
100) and its place to the Windows (himga.memory.windows); nothing else is re-indexed. One lock
guards every method, so threads may share an instance.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from himga.data.conversation import Message, Session
from himga.memory.base import DEFAULT_LIMIT, Hit
from himga.memory.context import ContextFromHits
from himga.memory.postings import Postings
from himga.memory.ranking import DEFAULT_METHOD, Method, Turns
from himga.memory.text import query_terms
from himga.memory.windows import Windows


class _Index:
    def __init__(self, method: Method) -> None:
        self.windows = Windows(method)
        self.postings = Postings()
        # turn number -> (turn_id, session_id, role, content, date_str): what its hit reports
        self.said: list[tuple[str, str, str, str, str]] = []

    def add(self, turns: Turns) -> None:
        number = len(self.said)
        lengths = list(map(len, turns.terms))
        self.windows.add(turns.session_ids, lengths, turns.speakers)
        columns = (turns.turn_ids, turns.session_ids, turns.roles, turns.contents, turns.date_strs)
        self.said.extend(zip(*columns, strict=True))
        self.postings.add(number, turns.terms)


class KeywordMemory(ContextFromHits):
    """In-process BM25 over each turn and its neighbours; see himga.memory.ranking. `method`
    sets its parameters (the default is the one every memory uses)."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        self._lock = threading.Lock()
        self._method = method
        self._index = _Index(method)

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
        with self._lock:
            index = self._index
            best = index.windows.best(index.postings.of(wanted), set(wanted), limit)
            return [Hit(*index.said[number], score) for number, score in best]

    def reset(self) -> None:
        with self._lock:
            self._index = _Index(self._method)
