"""SimpleKeywordMemory: the seed API's example keyword memory, kept as the baseline to beat.

Faithful to the seed (section 5.2 of the memory API): each message is stored as the line
`[<date or unknown>] <role>: <content>`; `retrieve` keeps the lines that contain any
whitespace-separated query word as a substring (case-insensitive) and returns the last ten.
`search` exposes the same lines as hits, most recent first, so the evaluation can score it.
"""

import threading
from pathlib import Path

from himga.data.conversation import Message, Session
from himga.memory.base import DEFAULT_LIMIT, BaseMemory, Hit

RETRIEVE_LINES = 10


class SimpleKeywordMemory(BaseMemory):
    """Substring match over a linear store of lines; a full scan per query."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store: list[str] = []
        self._hits: list[Hit] = []  # the message behind each line, for `search`

    @classmethod
    def for_namespace(cls, namespace: str, data_dir: Path | None) -> "SimpleKeywordMemory":
        """The registry's factory: in-process, nothing kept on disk."""
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        date = session.date_str if isinstance(session.date_str, str) else ""
        timestamp = date or "unknown"
        line = f"[{timestamp}] {message.role}: {message.content}"
        turn_id = message.turn_id if isinstance(message.turn_id, str) else ""
        hit = Hit(turn_id, session.session_id, message.role, message.content, date, 1.0)
        with self._lock:
            self._store.append(line)
            self._hits.append(hit)

    def retrieve(self, query: str) -> str:
        return "\n".join(self._store[i] for i in self._matches(query)[-RETRIEVE_LINES:])

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        if limit <= 0:
            return []
        matches = self._matches(query)
        return [self._hits[i] for i in reversed(matches[-limit:])]

    def reset(self) -> None:
        with self._lock:
            self._store.clear()
            self._hits.clear()

    def _matches(self, query: str) -> list[int]:
        """Positions of the stored lines holding any query word, oldest first (the seed's scan)."""
        keywords = set(query.lower().split())
        with self._lock:
            return [
                i
                for i, line in enumerate(self._store)
                if any(kw in line.lower() for kw in keywords)
            ]
