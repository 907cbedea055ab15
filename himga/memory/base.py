"""BaseMemory: the one interface every himga memory implements, in-process or remote, and the
records it answers with (Hit, StoredMessage, Page)."""

import builtins
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import NamedTuple, Self

from himga.data.conversation import Message, Session
from himga.errors import Unsupported
from himga.memory.budget import check_budget, fit_lines
from himga.memory.filters import MessageFilter

DEFAULT_LIMIT = 10
DEFAULT_PAGE_SIZE = 100


def _no_metadata() -> dict[str, str]:
    return {}


@dataclass(frozen=True, slots=True)
class Hit:
    """One stored message that matched a query, with where it came from; best hits score highest.

    `turn_id` is the message's id; `time` its time (its own, else its session's; None if it has
    none); `metadata` its labels."""

    turn_id: str
    session_id: str
    role: str
    content: str
    date_str: str
    score: float
    time: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=_no_metadata)


class StoredMessage(NamedTuple):
    """A message as a memory holds it: its id, what was said, its session as given, and its
    time (`time`: its own `timestamp`, else the session's, else read from `date_str`). A named
    tuple: a listing makes one a message, and a tuple is made faster than a frozen dataclass."""

    id: str
    session_id: str
    role: str
    content: str
    date_str: str = ""
    time: datetime | None = None
    timestamp: datetime | None = None
    session_timestamp: datetime | None = None
    metadata: Mapping[str, str] = MappingProxyType({})

    def message(self) -> Message:
        """The Message as it was stored, its turn_id set to its id."""
        fields: dict[str, object] = {"role": self.role, "content": self.content, "turn_id": self.id}
        if self.timestamp is not None:
            fields["timestamp"] = self.timestamp
        if self.metadata:
            fields["metadata"] = dict(self.metadata)
        return Message.model_validate(fields)

    def session(self) -> Session:
        """The Session the message was stored with, without its messages."""
        fields: dict[str, object] = {"session_id": self.session_id}
        if self.date_str:
            fields["date_str"] = self.date_str
        if self.session_timestamp is not None:
            fields["timestamp"] = self.session_timestamp
        return Session.model_validate(fields)


def hit_of(stored: StoredMessage, score: float) -> Hit:
    """The hit of a stored message, with its score."""
    return Hit(
        stored.id,
        stored.session_id,
        stored.role,
        stored.content,
        stored.date_str,
        score,
        stored.time,
        stored.metadata,
    )


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing: its messages, in the memory's order, and the token of the next
    page ("" when this one is the last)."""

    messages: list[StoredMessage]
    next_page_token: str = ""


def new_id() -> str:
    """An id for a message stored without a turn_id: 32 hex digits, unique in practice."""
    return uuid.uuid4().hex


def message_id(message: Message) -> str:
    """The id a message is stored under: its turn_id, or a new one when it has none (an empty
    turn_id counts as none)."""
    turn_id = message.turn_id
    return turn_id if isinstance(turn_id, str) and turn_id else new_id()


class BaseMemory(ABC):
    """A memory system: write messages in (`ingest`), get prompt context out (`retrieve`).

    Contracts every implementation keeps (tests/memory/test_contract.py checks them all):
    `retrieve("")` returns a string and does not raise; after `reset()` nothing ingested before
    is retrieved; `reset()` leaves the memory usable; instances share no mutable state;
    `retrieve` always returns a `str`, `""` when nothing is relevant.

    Beyond the seed's three methods, a memory stores messages under ids (`store`), deletes
    (`delete`), filters (`search`, `recall`) and lists (`list`). The defaults here refuse what
    they cannot do (Unsupported) rather than ignore part of a call; the built-in memories keep
    every promise.
    """

    @abstractmethod
    def ingest(self, message: Message, session: Session) -> None:
        """Store one message, said in `session` (which gives its date and id)."""

    @abstractmethod
    def retrieve(self, query: str) -> str:
        """Text about `query` ready to put into a prompt; `""` when nothing is relevant."""

    @abstractmethod
    def reset(self) -> None:
        """Forget everything stored; the memory stays usable."""

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        """Store many messages and return how many. Memories that can store them all or none
        (one transaction) override this; the default ingests them one by one."""
        count = 0
        for message, session in items:
            self.ingest(message, session)
            count += 1
        return count

    def store(self, items: Iterable[tuple[Message, Session]]) -> builtins.list[str]:
        """Store the messages as `ingest_many` does and return the id of each, in order: its
        turn_id, or one made for it. A message whose id is stored already replaces it.

        The default gives each message without a turn_id a new one and calls `ingest_many`."""
        given = builtins.list(items)
        ids = [message_id(message) for message, _ in given]
        named = [
            (message if message.turn_id == id_ else message.model_copy(update={"turn_id": id_}))
            for (message, _), id_ in zip(given, ids, strict=True)
        ]
        self.ingest_many(zip(named, (session for _, session in given), strict=True))
        return ids

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        """The stored messages behind `retrieve(query)`, best first, at most `limit`, each
        matching `filter` when one is given.

        A memory that keeps no individual messages (NullMemory, a summary memory) has none."""
        return []

    def recall(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        *,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> tuple[str, builtins.list[Hit]]:
        """`retrieve(query)` and `search(query, limit)` together, as the memory service answers:
        with `filter`, only matching messages are hits or in the context; with
        `max_context_tokens`, the context holds at most that many tokens (himga.memory.budget).

        Memories whose context is built from their hits override this to search only once. This
        default refuses a filter (it cannot know what the context was built from) and fits the
        context to the budget by whole lines, first lines first."""
        if filter:
            raise Unsupported(f"{type(self).__name__} cannot filter what it recalls")
        budget = check_budget(max_context_tokens)
        context = self.retrieve(query)
        if budget:
            context = "\n".join(fit_lines(context.split("\n"), budget))  # not at U+2028
        return context, self.search(query, limit)

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        """Forget the stored messages whose id is among `ids` (when given) and that match
        `filter` (when given), and return how many there were. Naming what is not stored is
        not an error; naming nothing is InvalidArgument (it never deletes everything)."""
        raise Unsupported(f"{type(self).__name__} cannot delete single messages")

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        """One page of the stored messages, in a stable order (that in which their ids were first
        stored), matching `filter`; `page_token` is the previous page's `next_page_token`
        ("" for the first page). A message stored before the first page is listed once across
        the pages, whatever is stored or deleted in between, unless it is deleted."""
        raise Unsupported(f"{type(self).__name__} cannot list what it holds")

    @property
    def thread_safe(self) -> bool:
        """Whether threads may call it at once: a server then lets one namespace's reads
        (Retrieve, ListMessages) run side by side, and runs its writes one at a time. The
        default is no: each call of a server then runs alone."""
        return False

    @property
    def durable(self) -> bool:
        """Whether what it stored outlives `close`: the memory made again for its namespace
        holds it (a server may then close it while idle and open it again when called)."""
        return False

    def close(self) -> None:
        """Release what the memory holds open (a database, a connection); it is not used after.

        What a durable memory stored stays stored. Memories holding nothing open need not
        override this. `with memory:` closes it at the end of the block."""
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
