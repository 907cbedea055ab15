"""Answers to the lines of stdio that are not JSON-RPC messages.

The stdio transport (himga.mcp.stdio, as the SDK's) hands such a line to the session as an
exception, which the SDK's session drops without a word: a host that sent one waits for an answer
that never comes. JSON-RPC 2.0 answers it: a line that is not JSON gets a parse error (-32700, id
null), and JSON that is no request, notification or response an invalid request (-32600, under
the request's id when it has one), each naming what is wrong; so does a request whose id is not
a string or an integer (id null, naming the id). A blank line is passed over, and a malformed
response of the client's is logged, not answered (JSON-RPC never answers a response).
`Answering` stands between the transport's read stream and the server: it writes those answers
and passes every message on.
"""

import json
import logging
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from himga.mcp.streams import ReadWrapper

_log = logging.getLogger("himga.mcp")
_SHOWN = 200
"""Characters of a refused line the log shows at most."""


class BadRequestId(ValueError):
    """A request whose id (`id`, as JSON gave it) is neither a string nor an integer."""

    def __init__(self, id: Any) -> None:
        super().__init__(f"a request's id is {json.dumps(id)[:_SHOWN]}")
        self.id = id


def refusal(error: Exception) -> types.JSONRPCError | None:
    """The answer to a line the transport could not read, as it reported it (`error`); None
    for a line that gets none: a blank one, or a response of the client's (JSON-RPC answers no
    response, and the client would read an error under its id as its own request's answer)."""
    if isinstance(error, BadRequestId):  # its id cannot be echoed: JSON-RPC then answers null
        return _error(
            None,
            types.INVALID_REQUEST,
            f"invalid request: id is {_kind_of(error.id)}; a request's id must be a string or an "
            "integer (a message without id is a notification, which gets no answer)",
        )
    problems = error.errors() if isinstance(error, ValidationError) else []
    if problems and isinstance(problems[0]["input"], str) and not problems[0]["input"].strip():
        return None
    if not problems or problems[0]["type"] == "json_invalid":
        detail = problems[0]["msg"] if problems else "the line is not JSON"
        return _error(
            None, types.PARSE_ERROR, f"parse error: {detail}; send one JSON object a line"
        )
    # The message itself is the input of a problem with it as a whole (a member of the union
    # of messages, and a key it lacks), not with a field's value.
    given = next(
        (p["input"] for p in problems if len(p["loc"]) <= 2 and isinstance(p["input"], dict)), {}
    )
    if "method" not in given and ("result" in given or "error" in given):
        return None
    request_id = given.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return _error(
        request_id,
        types.INVALID_REQUEST,
        'invalid request: not a JSON-RPC 2.0 message (want {"jsonrpc": "2.0", "method": ..., '
        '"id": ...} for a request, without "id" for a notification)',
    )


def _kind_of(value: Any) -> str:
    """What JSON value `value` is, as an error names it."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float):
        return f"the number {json.dumps(value)}, not an integer"
    return "an array" if isinstance(value, list) else "an object"


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


class Answering(ReadWrapper):
    """The transport's read stream `inner` without its unreadable lines, each answered on
    `write` (the transport's write stream) instead."""

    def __init__(self, inner: Any, write: Any) -> None:
        super().__init__(inner)
        self._write = write

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            answer = refusal(item)
            shown = str(item).replace("\n", " ")[:_SHOWN]
            if answer is not None:
                _log.warning("refused a line on stdin (%s): %s", answer.error.code, shown)
                await self._write.send(SessionMessage(answer))
            elif shown.strip():
                _log.warning("dropped a response on stdin that is not JSON-RPC's: %s", shown)
