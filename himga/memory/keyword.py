"""KeywordMemory: the shared keyword method (himga.memory.ranking) over an in-process index.

Nothing touches the disk. Ingest is incremental: a new turn appends its number to the postings
of its own terms (himga.memory.postings: 4 bytes an occurrence, where a dict entry costs about
100) and its place to the Windows (himga.memory.windows); nothing else is re-indexed. A
replaced or deleted turn's number is taken out of the postings of its old terms and relinked
or unlinked in the Windows, and a replaced turn's number goes into the postings of its new
terms at its place. A filter is applied by the C ranking core to each turn it scores. One lock
guards every method, so threads may share an instance.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime

from himga.data.conversation import Message, Session
from himga.memory.base import (
    DEFAULT_LIMIT,
    DEFAULT_PAGE_SIZE,
    Hit,
    Page,
    StoredMessage,
    hit_of,
)
from himga.memory.context import ContextFromHits
from himga.memory.derived import deletable
from himga.memory.facets import Facets
from himga.memory.filters import MessageFilter, deletion
from himga.memory.paging import check_page_size, decode, encode
from himga.memory.postings import Postings
from himga.memory.ranking import DEFAULT_METHOD, Method, Turns
from himga.memory.text import query_terms, terms_of
from himga.memory.times import from_micros
from himga.memory.windows import Windows
from himga.storage.place import Place

# What a turn's hit and listing report besides its facets: turn_id, session_id, role, content,
# date_str, its own timestamp and its session's.
_Said = tuple[str, str, str, str, str, datetime | None, datetime | None]


class _Index:
    def __init__(self, method: Method) -> None:
        self.windows = Windows(method)
        self.facets = Facets()
        self.postings = Postings()
        # turn number -> what it said (None: no turn has that number any more)
        self.said: list[_Said | None] = []
        self.numbers: dict[str, int] = {}  # id -> turn number

    def put(self, turns: Turns) -> None:
        """Store `turns`: new ids at the end, known ids in place of what they replace."""
        numbers = [self.numbers.get(id_, -1) for id_ in turns.turn_ids]
        replaced = [i for i, n in enumerate(numbers) if n >= 0]
        if replaced:
            self._drop_postings([numbers[i] for i in replaced])
            self.windows.replace(
                [numbers[i] for i in replaced],
                [turns.session_ids[i] for i in replaced],
                [len(turns.terms[i]) for i in replaced],
                [turns.speakers[i] for i in replaced],
            )
        new = [i for i, n in enumerate(numbers) if n < 0]
        first = self.windows.end
        for offset, i in enumerate(new):
            numbers[i] = first + offset
            self.numbers[turns.turn_ids[i]] = first + offset
        if new:
            self.windows.add(
                [turns.session_ids[i] for i in new],
                [len(turns.terms[i]) for i in new],
                [turns.speakers[i] for i in new],
            )
            self.said.extend([None] * len(new))
        said = zip(
            turns.turn_ids,
            turns.session_ids,
            turns.roles,
            turns.contents,
            turns.date_strs,
            turns.timestamps,
            turns.session_timestamps,
            strict=True,
        )
        for number, entry in zip(numbers, said, strict=True):
            self.said[number] = entry
        self.facets.add(numbers, turns.roles, turns.times, turns.metadata)
        postings = self.postings
        for i in replaced:  # before the newest turns: each entry at its place
            postings.insert(numbers[i], turns.terms[i])
        if new:  # after every turn held: appended
            postings.add(first, [turns.terms[i] for i in new])

    def remove(self, numbers: Sequence[int]) -> int:
        self._drop_postings(numbers)
        for number in numbers:
            said = self.said[number]
            assert said is not None
            del self.numbers[said[0]]
            self.said[number] = None
        return self.windows.remove(numbers)

    def _drop_postings(self, numbers: Sequence[int]) -> None:
        """Take turns out of the postings of the terms they hold now."""
        contents = []
        for number in numbers:
            said = self.said[number]
            assert said is not None
            contents.append(said[3])
        self.postings.drop(numbers, terms_of(contents))

    def stored(self, number: int) -> StoredMessage:
        said = self.said[number]
        assert said is not None
        turn_id, session_id, role, content, date_str, timestamp, session_timestamp = said
        time = self.facets.time(number)
        return StoredMessage(
            turn_id,
            session_id,
            role,
            content,
            date_str,
            None if time is None else from_micros(time),
            timestamp,
            session_timestamp,
            self.facets.metadata(number),
        )


class KeywordMemory(ContextFromHits):
    """In-process BM25 over each turn and its neighbours; see himga.memory.ranking. `method`
    sets its parameters (the default is the one every memory uses)."""

    def __init__(self, method: Method = DEFAULT_METHOD) -> None:
        self._lock = threading.Lock()
        self._method = method
        self._index = _Index(method)

    @property
    def method(self) -> Method:
        """The ranking's parameters it was made with."""
        return self._method

    @classmethod
    def for_namespace(cls, namespace: str, place: Place, options: Method) -> KeywordMemory:
        """The registry's factory: in-process, so every namespace starts empty and none is kept;
        `options` are the ranking's parameters."""
        return cls(options)

    def ingest(self, message: Message, session: Session) -> None:
        self.store([(message, session)])

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        return len(self.store(items))

    def store(self, items: Iterable[tuple[Message, Session]]) -> builtins.list[str]:
        """Index every item; the items are read (and checked) before the index changes."""
        turns = Turns.of(items)
        with self._lock:
            self._index.put(turns)
        return turns.item_ids

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        wanted = query_terms(query)
        if limit <= 0 or not wanted:
            return []
        with self._lock:
            index = self._index
            allowed = index.facets.selection(filter, index.windows) if filter else None
            postings = index.postings.of(wanted)
            best = index.windows.best(postings, set(wanted), limit, allowed)
            return [hit_of(index.stored(number), score) for number, score in best]

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        wanted, chosen = deletion(ids, filter)
        with self._lock:
            index = self._index
            known = [index.numbers[i] for i in wanted if i in index.numbers] if wanted else None
            return index.remove(deletable(index.windows, index.facets, known, chosen))

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        size = check_page_size(page_size)
        start = decode(page_token) + 1
        with self._lock:
            index = self._index
            allowed = index.facets.selector(filter, index.windows) if filter else None
            numbers: builtins.list[int] = []
            for number in index.windows.stored(start):
                if allowed is None or allowed(number):
                    numbers.append(number)
                    if len(numbers) == size + 1:
                        break
            page = [index.stored(number) for number in numbers[:size]]
        more = len(numbers) > size
        return Page(page, encode(numbers[size - 1]) if more else "")

    def reset(self) -> None:
        with self._lock:
            self._index = _Index(self._method)
