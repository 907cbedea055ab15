"""BaseMemory: the one interface every himga memory implements, in-process or remote."""

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

from himga.data.conversation import Message, Session

DEFAULT_LIMIT = 10


@dataclass(frozen=True, slots=True)
class Hit:
    """One stored message that matched a query, with where it came from; best hits score highest."""

    turn_id: str
    session_id: str
    role: str
    content: str
    date_str: str
    score: float


class BaseMemory(ABC):
    """A memory system: write messages in (`ingest`), get prompt context out (`retrieve`).

    Contracts every implementation keeps (tests/memory/test_contract.py checks them all):
    `retrieve("")` returns a string and does not raise; after `reset()` nothing ingested before
    is retrieved; `reset()` leaves the memory usable; instances share no mutable state;
    `retrieve` always returns a `str`, `""` when nothing is relevant.
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

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        """The stored messages behind `retrieve(query)`, best first, at most `limit`.

        A memory that keeps no individual messages (NullMemory, a summary memory) has none."""
        return []

    def recall(self, query: str, limit: int = DEFAULT_LIMIT) -> tuple[str, list[Hit]]:
        """`retrieve(query)` and `search(query, limit)` together, as the memory service answers.

        Memories whose context is built from their hits override this to search only once."""
        return self.retrieve(query), self.search(query, limit)

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
