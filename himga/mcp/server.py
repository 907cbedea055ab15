"""The MCP server: the tools of himga.mcp.tools on the SDK's low-level Server, served over
stdio (what desktop agents launch) or streamable HTTP. Tool calls run in worker threads, since
the stores block; a call the tool's schema refuses, or the stores refuse, is a tool error (the
model reads it and may try again), naming each field that is wrong."""

import logging
import socket
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

import himga
from himga.errors import HimgaError
from himga.mcp.stores import Stores
from himga.mcp.tools import TOOLS

_log = logging.getLogger("himga.mcp")

INSTRUCTIONS = (
    "Long-term memory. Call remember with what is said that may matter later, recall before "
    "answering about the past, forget what the user asks to drop; record_episode after a task "
    "and find_episodes before one, to learn from earlier attempts."
)


def create(stores: Stores) -> Server[Any]:
    """An MCP server whose tools read and write `stores`."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.input_schema())
                for t in TOOLS.values()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            return _error(f"no tool {params.name!r}; tools: {', '.join(TOOLS)}")
        arguments = dict(params.arguments or {})
        problems = tool.problems(arguments)
        if problems:
            return _error("\n".join(problems))
        try:
            text, structured = await anyio.to_thread.run_sync(tool.run, stores, arguments)
        except (HimgaError, ValueError) as error:
            return _error(str(error))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=structured
        )

    return Server(
        "himga",
        version=himga.__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server[Any], host: str, port: int) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp (port 0: a free one), logging
    'listening on http://HOST:PORT/mcp' once it accepts calls."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    listener = socket.create_server((host, port))
    bound = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning")
    runner = uvicorn.Server(config)
    _log.info("listening on http://%s:%d/mcp", host, bound)
    await runner.serve(sockets=[listener])
