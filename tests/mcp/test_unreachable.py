"""`himga mcp --target` in front of a server that is not there: each tool call is a tool error
saying the server did not answer (the log says where it was), and the MCP server goes on."""

import asyncio

import pytest
from mcp import Client

from himga.mcp import server, stores
from tests.ports import free_port


def test_a_server_not_reached_is_a_tool_error_and_the_log_names_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = f"127.0.0.1:{free_port()}"
    held = stores.Opening(lambda: stores.remote(target, None), kept=True)

    async def main() -> None:
        async with Client(server.create(held, "nobody")) as client:
            for _ in range(2):  # the first call's failure leaves the next one answered alike
                result = await client.call_tool("recall", {"query": "anything"})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert "himga server behind this MCP server did not answer (UNAVAILABLE)" in text
                assert target not in text

    try:
        asyncio.run(main())
    finally:
        held.close()
    assert target in caplog.text
