"""A write whose MCP call the client cancels (here: its read timeout passes) is rolled back by
the check the memory makes just before COMMIT, as a gRPC call past its deadline is: the client
was told the call failed, and nothing of it is stored."""

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from himga.mcp import server
from himga.mcp.stores import Embedded, embedded
from himga.memory import commit
from himga.memory.base import BaseMemory
from himga.memory.registry import DEFAULT_MEMORY


class Stalling:
    """A memory whose `store` waits until its call is no longer wanted (at most a minute),
    then stores for real: the memory's own check before COMMIT has the last word."""

    def __init__(self, memory: BaseMemory) -> None:
        self.memory = memory
        self.outcome: list[BaseException | Sequence[str]] = []
        self.done = threading.Event()

    def store(self, items: Any) -> list[str]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                commit.still_wanted()
            except commit.CallerGone:
                break
            time.sleep(0.01)
        try:
            ids = self.memory.store(items)
            self.outcome.append(ids)
            return ids
        except BaseException as error:
            self.outcome.append(error)
            raise
        finally:
            self.done.set()


class StallingStores(Embedded):
    stalling: Stalling | None = None

    @contextmanager
    def memory(self, *, create: bool) -> Iterator[Any]:
        with super().memory(create=create) as memory:
            if memory is None or not create:
                yield memory
                return
            self.stalling = Stalling(memory)
            yield self.stalling


def test_a_cancelled_remember_stores_nothing(tmp_path: Path) -> None:
    made = embedded("cancelled", tmp_path, DEFAULT_MEMORY, "sqlite")
    stores = StallingStores(made.namespaces, made.episode_stores, made.namespace)

    async def main() -> None:
        async with Client(server.create(stores)) as client:
            # first calls load the validators (seconds on a loaded machine): not under the timeout
            assert (await client.call_tool("remember", {"text": ""})).is_error
            assert not (await client.call_tool("recall", {"query": "anything"})).is_error
            with pytest.raises(MCPError):
                await client.call_tool("remember", {"text": "never kept"}, read_timeout_seconds=1)

    try:
        asyncio.run(main())
        assert stores.stalling is not None and stores.stalling.done.wait(60)
        (outcome,) = stores.stalling.outcome
        assert isinstance(outcome, commit.CallerGone)
        with stores.memory(create=False) as memory:
            assert memory is not None
            assert memory.recall("never kept")[1] == []
            assert memory.list().messages == []
    finally:
        stores.close()
