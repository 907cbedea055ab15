"""The MCP server: the tools of himga.mcp.tools on the SDK's low-level Server, served over
stdio (what desktop agents launch) or streamable HTTP. Tool calls run in worker threads, since
the stores block; a write whose call the client cancels is rolled back (the check each write
makes just before COMMIT, as over gRPC, asks whether the call is still wanted); a call the
tool's schema refuses, or the stores refuse, is a tool error (the model reads it and may try
again), naming each field that is wrong."""

import logging
import socket
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext

import himga
from himga.errors import HimgaError
from himga.mcp import handshake
from himga.mcp.inflight import Draining, InFlight, Sent
from himga.mcp.stdio import stdio
from himga.mcp.stores import Door, Stores
from himga.mcp.unreadable import Answering

if TYPE_CHECKING:
    from himga.mcp.tools import Tool

_log = logging.getLogger("himga.mcp")


def instructions(stores: Stores) -> str:
    """What a host is told on `initialize`: how to use the tools, and, when nothing is kept,
    that it is not (a log line is not enough: desktop hosts hide the server's stderr)."""
    return handshake.instructions(stores.kept)


def listing(tool: "Tool") -> types.Tool:
    """A tool as tools/list gives it."""
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema(),
        output_schema=tool.output_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=tool.hints.read_only,
            destructive_hint=tool.hints.destructive,
            idempotent_hint=tool.hints.idempotent,
            open_world_hint=False,
        ),
    )


def create(stores: Stores, namespace: str, memory: str = "") -> Server[Any]:
    """An MCP server whose tools read and write `namespace` (with `memory`, "" for the default)
    through `stores`."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        from himga.mcp.tools import tools  # the schemas and validators: not before a call

        return types.ListToolsResult(tools=[listing(tool) for tool in tools().values()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        from himga.mcp.tools import tools

        tool = tools().get(params.name)
        if tool is None:
            return _error(f"no tool {params.name!r}; tools: {', '.join(tools())}")
        problems, arguments = tool.check(dict(params.arguments or {}))
        if problems:
            return _error("\n".join(problems))
        gone = threading.Event()
        door = Door(stores, namespace, memory, alive=lambda: not gone.is_set())
        try:  # the core (or the server) checks each write just before COMMIT: still alive?
            text, structured = await anyio.to_thread.run_sync(
                tool.run, door, arguments, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            gone.set()  # the write, still running in its thread, rolls back
            raise
        except (HimgaError, ValueError) as error:
            return _error(str(error))
        except Exception:  # a fault of the server's: its detail to the log, as the other doors
            _log.exception("tool %s failed", params.name)
            return _error("internal error (logged by the server)")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=structured
        )

    return Server(
        "himga",
        version=himga.__version__,
        instructions=instructions(stores),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def serve_stdio(server: Server[Any], stdin: Any, stdout: Any) -> None:
    """Serve over the `stdin` and `stdout` streams given (text, line by line: himga.mcp.handshake's,
    after it answered `initialize`; himga.mcp.stdio reads and writes them). A line that is not a
    JSON-RPC message is answered with JSON-RPC's error for it (himga.mcp.unreadable), and the
    calls in flight when stdin closes are answered before the server stops
    (himga.mcp.inflight)."""
    async with stdio(stdin, stdout) as (read_stream, write_stream):
        answering = Answering(read_stream, write_stream)  # a line that is no message: answered
        flight = InFlight()  # and the calls still running when stdin closes, before the end
        reading, writing = Draining(answering, flight), Sent(write_stream, flight)
        await server.run(reading, writing, server.create_initialization_options())


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
