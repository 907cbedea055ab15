"""NullMemory: stores nothing, recalls nothing. The pipeline check and the "LLM only" baseline."""

import builtins
from collections.abc import Iterable

from himga.data.conversation import Message, Session
from himga.kinds import NoOptions
from himga.memory.base import DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, BaseMemory, Hit, Page
from himga.memory.budget import check_budget
from himga.memory.filters import MessageFilter, deletion
from himga.memory.paging import check_page_size, decode
from himga.storage.place import Place


class NullMemory(BaseMemory):
    """Discards every message; `retrieve` always returns `""`; `reset` does nothing. It keeps
    the rest of the API as a memory holding nothing: a delete deletes nothing, a listing lists
    nothing, and the calls check their arguments as every memory does."""

    @classmethod
    def for_namespace(cls, namespace: str, place: Place, options: NoOptions) -> "NullMemory":
        """The registry's factory: a NullMemory needs neither name nor directory."""
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        pass

    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None:
        pass

    def recall(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        *,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> tuple[str, builtins.list[Hit]]:
        check_budget(max_context_tokens)
        return "", []

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        deletion(ids, filter)
        return 0

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        check_page_size(page_size)
        decode(page_token)
        return Page([])
