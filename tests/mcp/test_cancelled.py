"""A write whose MCP call the client cancels (here: its read timeout passes) is rolled back by
the check the memory makes just before COMMIT, as a gRPC call past its deadline is: the client
was told the call failed, and nothing of it is stored. Over embedded stores the cancellation
reaches the core's CallContext; in front of a server, the gRPC call is cancelled and the
server's check sees it."""

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from himga.mcp import server, stores
from himga.service import RemoteMemory
from himga.storage import commit

NAMESPACE = "mcp.cancelled"


def stall_until_unwanted(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Make every write wait, just before its COMMIT check, until it is no longer wanted (at
    most a minute), then run the real check; what that check did is recorded."""
    real: Callable[..., None] = commit.before_commit
    outcomes: list[object] = []

    def stalling(record: Any, answer: Any) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                commit.still_wanted()
            except Exception:
                break
            time.sleep(0.01)
        try:
            real(record, answer)
        except BaseException as error:
            outcomes.append(error)
            raise
        outcomes.append("committed")

    monkeypatch.setattr(commit, "before_commit", stalling)
    return outcomes


def cancel_a_remember(held: stores.Stores) -> None:
    async def main() -> None:
        async with Client(server.create(held, NAMESPACE)) as client:
            # first calls load the validators (seconds on a loaded machine): not under the timeout
            assert (await client.call_tool("remember", {"text": ""})).is_error
            assert not (await client.call_tool("recall", {"query": "anything"})).is_error
            with pytest.raises(MCPError):
                await client.call_tool("remember", {"text": "never kept"}, read_timeout_seconds=1)

    asyncio.run(main())


def wait_for(outcomes: list[object]) -> object:
    deadline = time.monotonic() + 90
    while not outcomes and time.monotonic() < deadline:
        time.sleep(0.05)
    (outcome,) = outcomes
    return outcome


def test_over_embedded_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = stall_until_unwanted(monkeypatch)
    held = stores.embedded(tmp_path)
    try:
        cancel_a_remember(held)
        assert isinstance(wait_for(outcomes), commit.CallerGone)
        with held.namespaces.using(NAMESPACE, "", create=False) as opened:
            # the namespace's only write failed, so it is unmade once that call has let it go
            # (himga.storage.namespaces): not opened, or still open and empty, holding nothing
            assert opened is None or opened.memory.list().messages == []
    finally:
        held.close()


def test_in_front_of_a_server(memory_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = stall_until_unwanted(monkeypatch)  # the test server runs in this process
    held = stores.remote(memory_server, None)
    try:
        cancel_a_remember(held)
        assert isinstance(wait_for(outcomes), commit.CallerGone)
    finally:
        held.close()
    memory = RemoteMemory(memory_server, NAMESPACE)
    try:
        assert memory.list().messages == []
    finally:
        memory.close()
