"""SimpleKeywordMemory: the seed API's example keyword memory, kept as the baseline to beat.

Faithful to the seed (section 5.2 of the memory API): each message is stored as the line
`[<date or unknown>] <role>: <content>`; `retrieve` keeps the lines that contain any
whitespace-separated query word as a substring (case-insensitive) and returns the last ten.
`search` exposes the same lines as hits, most recent first, so the evaluation can score it.

Beyond the seed it keeps the whole memory API with the same scan: a message stored under an id
that is stored already replaces it in its place; a filter keeps only the lines of matching
messages (himga.memory.filters), in hits and context alike; a budget keeps the context's last
(most recent) lines that fit; delete and list work on the stored lines.
"""

import builtins
import threading
from collections.abc import Iterable

from himga.data.conversation import Message, Session, optional_text
from himga.kinds import NoOptions
from himga.memory.base import (
    DEFAULT_LIMIT,
    DEFAULT_PAGE_SIZE,
    BaseMemory,
    Hit,
    Page,
    StoredMessage,
    hit_of,
    message_id,
)
from himga.memory.budget import check_budget, fit_lines
from himga.memory.filters import MessageFilter, deletion
from himga.memory.paging import check_page_size, decode, encode
from himga.memory.times import message_time, micros, stated
from himga.storage.place import Place

RETRIEVE_LINES = 10


def _time(stored: StoredMessage) -> int | None:
    return None if stored.time is None else micros(stored.time)


class SimpleKeywordMemory(BaseMemory):
    """Substring match over a linear store of lines; a full scan per query."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # By number (the order ids were first stored): the line and the message behind it, or
        # None once deleted.
        self._store: list[tuple[str, StoredMessage] | None] = []
        self._numbers: dict[str, int] = {}  # id -> number

    @classmethod
    def for_namespace(
        cls, namespace: str, place: Place, options: NoOptions
    ) -> "SimpleKeywordMemory":
        """The registry's factory: in-process, nothing kept on disk."""
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        self.store([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        return len(self.store(items))

    def store(self, items: Iterable[tuple[Message, Session]]) -> builtins.list[str]:
        entries = [_entry(message, session) for message, session in items]
        with self._lock:
            for entry in entries:
                number = self._numbers.setdefault(entry[1].id, len(self._store))
                if number == len(self._store):
                    self._store.append(entry)
                else:
                    self._store[number] = entry
        return [stored.id for _, stored in entries]

    def retrieve(self, query: str) -> str:
        return "\n".join(line for line, _ in self._matches(query, None)[-RETRIEVE_LINES:])

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        if limit <= 0:
            return []
        matches = self._matches(query, filter)
        return [hit_of(stored, 1.0) for _, stored in reversed(matches[-limit:])]

    def recall(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        *,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> tuple[str, builtins.list[Hit]]:
        budget = check_budget(max_context_tokens)
        if limit < 1:
            return "", []
        # The context holds the hits answered (so `limit` bounds both; the default limit is the
        # seed's RETRIEVE_LINES): the last lines, oldest first, and a budget keeps the most
        # recent lines that fit (its "best", as `search` ranks them).
        shown = list(reversed(self._matches(query, filter)[-limit:]))
        context = "\n".join(reversed(fit_lines([line for line, _ in shown], budget)))
        return context, [hit_of(stored, 1.0) for _, stored in shown]

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        wanted, chosen = deletion(ids, filter)
        with self._lock:
            numbers = [
                number
                for number, entry in enumerate(self._store)
                if entry is not None
                and (not wanted or entry[1].id in wanted)
                and (not chosen or _matches(chosen, entry[1]))
            ]
            for number in numbers:
                entry = self._store[number]
                assert entry is not None
                del self._numbers[entry[1].id]
                self._store[number] = None
        return len(numbers)

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        size = check_page_size(page_size)
        start = decode(page_token) + 1
        found: builtins.list[tuple[int, StoredMessage]] = []
        with self._lock:
            for number in range(start, len(self._store)):
                entry = self._store[number]
                if entry is not None and (not filter or _matches(filter, entry[1])):
                    found.append((number, entry[1]))
                    if len(found) > size:
                        break
        page = [stored for _, stored in found[:size]]
        return Page(page, encode(found[size - 1][0]) if len(found) > size else "")

    def reset(self) -> None:
        with self._lock:
            self._store.clear()
            self._numbers.clear()

    def _matches(
        self, query: str, chosen: MessageFilter | None
    ) -> builtins.list[tuple[str, StoredMessage]]:
        """The stored lines holding any query word (the seed's scan), oldest first, of the
        messages `chosen` selects."""
        keywords = set(query.lower().split())
        with self._lock:
            return [
                entry
                for entry in self._store
                if entry is not None
                and any(kw in entry[0].lower() for kw in keywords)
                and (not chosen or _matches(chosen, entry[1]))
            ]


def _matches(chosen: MessageFilter, stored: StoredMessage) -> bool:
    return chosen.matches(stored.session_id, stored.role, _time(stored), stored.metadata)


def _entry(message: Message, session: Session) -> tuple[str, StoredMessage]:
    """The seed's line for a message, and the message as stored."""
    date = optional_text(session.date_str)
    line = f"[{date or 'unknown'}] {message.role}: {message.content}"
    stored = StoredMessage(
        message_id(message),
        session.session_id,
        message.role,
        message.content,
        date,
        message_time(message, session),
        stated(message.timestamp),
        stated(session.timestamp),
        dict(message.metadata),
    )
    return line, stored
