"""A BaseMemory over an AsyncRemoteMemory, so the contract suite runs over the asyncio client
unchanged: each method runs the client's coroutine on one event loop of its own, in a thread,
and waits for it (from any thread: the suite's concurrent ingests included)."""

import asyncio
import builtins
import threading
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from himga.data.conversation import Message, Session
from himga.memory.base import DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, BaseMemory, Hit, Page
from himga.memory.filters import MessageFilter
from himga.service import AsyncRemoteMemory

T = TypeVar("T")


class SyncOverAsync(BaseMemory):
    def __init__(self, target: str, namespace: str, *, memory: str = "") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

        async def make() -> AsyncRemoteMemory:
            return AsyncRemoteMemory(target, namespace, memory=memory)

        self.inner = self._run(make())

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def ingest(self, message: Message, session: Session) -> None:
        self._run(self.inner.ingest(message, session))

    def ingest_many(self, items: Iterable[tuple[Message, Session]]) -> int:
        return self._run(self.inner.ingest_many(builtins.list(items)))

    def store(self, items: Iterable[tuple[Message, Session]]) -> builtins.list[str]:
        return self._run(self.inner.store(builtins.list(items)))

    def retrieve(self, query: str) -> str:
        return self._run(self.inner.retrieve(query))

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        return self._run(self.inner.search(query, limit, filter=filter))

    def recall(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        *,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> tuple[str, builtins.list[Hit]]:
        return self._run(
            self.inner.recall(query, limit, filter=filter, max_context_tokens=max_context_tokens)
        )

    def reset(self) -> None:
        self._run(self.inner.reset())

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        return self._run(self.inner.delete(ids, filter=filter))

    def list(
        self,
        *,
        filter: MessageFilter | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str = "",
    ) -> Page:
        return self._run(self.inner.list(filter=filter, page_size=page_size, page_token=page_token))

    def close(self) -> None:
        self._run(self.inner.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
