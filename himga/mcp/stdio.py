"""The stdio transport: stdin's lines to the server as messages, its messages to stdout as lines.

It stands in for the SDK's `stdio_server`, to read two kinds of line the SDK's reading got wrong
(`read_line`):

- a line that begins with a byte order mark is read without it (RFC 8259 §8.1 lets a JSON parser
  ignore one, and some Windows tools write one), where the SDK answered a parse error;
- a request whose id is neither a string nor an integer (null, true, 1.5, a list: MCP wants a
  string or an integer) is a refused line (himga.mcp.unreadable answers it as an invalid
  request), where the SDK's models read it as a notification, answered nothing, and left the
  client waiting.

The rest is the SDK's transport as it was: one message a line each way, each written as the SDK
writes it, and stdin's end closing the read stream.
"""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from himga.mcp.unreadable import BadRequestId

BOM = "\ufeff"


def read_line(line: str) -> SessionMessage | Exception:
    """The message of one line of stdin, or what is wrong with it (an exception, which the
    server's read stream hands on as the SDK's transport did, for himga.mcp.unreadable)."""
    line = line.removeprefix(BOM)
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as error:  # the SDK's own models' refusal: unreadable.refusal reads it
        return error
    if isinstance(message, types.JSONRPCNotification):
        # Its models ignore a member they do not know: a request whose id is not one reads as a
        # notification (rare and small, so read again only then).
        given = json.loads(line)
        if "id" in given:
            return BadRequestId(given["id"])
    return SessionMessage(message)


@asynccontextmanager
async def stdio(
    stdin: Any, stdout: Any
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """The server's read and write streams over `stdin` and `stdout` (text streams, read and
    written line by line)."""
    lines_in = anyio.wrap_file(stdin)
    lines_out = anyio.wrap_file(stdout)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reading() -> None:
        try:
            async with read_writer:
                async for line in lines_in:
                    await read_writer.send(read_line(line))
        except anyio.ClosedResourceError:  # the server stopped reading first
            await anyio.lowlevel.checkpoint()

    async def writing() -> None:
        try:
            async with write_reader:
                async for sent in write_reader:
                    text = sent.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await lines_out.write(text + "\n")
                    await lines_out.flush()
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reading)
        tasks.start_soon(writing)
        yield read_stream, write_stream
