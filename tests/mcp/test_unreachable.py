"""`himga mcp --target` in front of a server that is not there: each tool call is a tool error
naming the server and what gRPC said, and the MCP server goes on answering."""

import asyncio
import socket

from mcp import Client

from himga.mcp import server, stores


def test_a_server_not_reached_is_a_tool_error_naming_it() -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        target = f"127.0.0.1:{sock.getsockname()[1]}"
    held = stores.Opening(lambda: stores.remote(target, None), kept=True)

    async def main() -> None:
        async with Client(server.create(held, "nobody")) as client:
            for _ in range(2):  # the first call's failure leaves the next one answered alike
                result = await client.call_tool("recall", {"query": "anything"})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert f"the himga server at {target} did not answer: UNAVAILABLE" in text

    try:
        asyncio.run(main())
    finally:
        held.close()
