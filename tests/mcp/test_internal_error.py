"""A fault inside the server during a tool call (a bug, not the caller's input) is a tool error
that says so and no more; its detail goes to the log, and the MCP server goes on."""

import asyncio
from typing import Any

import pytest
from mcp import Client

from himga.mcp import server, stores


class Faulty:
    """Stores whose every call fails as a bug in them would, its text naming internals."""

    kept = False

    def call(self, method: str, request: Any, alive: Any) -> Any:
        raise KeyError("/srv/himga/data/secret-table")

    def close(self) -> None:
        pass


def test_an_internal_fault_is_a_tool_error_without_its_detail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    held = stores.Opening(lambda: Faulty(), kept=True)  # type: ignore[arg-type, return-value]

    async def main() -> None:
        async with Client(server.create(held, "ns")) as client:
            for _ in range(2):  # the MCP server goes on
                result = await client.call_tool("recall", {"query": "anything"})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert text == "internal error (logged by the server)"

    try:
        asyncio.run(main())
    finally:
        held.close()
    assert "secret-table" in caplog.text and "tool recall failed" in caplog.text
