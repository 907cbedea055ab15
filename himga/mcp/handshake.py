"""`himga mcp`'s answer to `initialize` over stdio before the SDK is imported.

Importing the MCP SDK costs more than a second of CPU (its models, anyio, pydantic), and a
desktop host waits for the `initialize` answer before it shows the server as ready. So the
stdio server reads the first message itself: when it is a well-formed `initialize` request, it
answers it here, as the SDK would (the same result: the protocol version negotiated by the
SDK's own rule and list, the server's capabilities, info and instructions), then imports the
SDK and hands it the same `initialize` first, so the SDK's session is in the state the client
believes, and drops the SDK's answer to it (the client has had it). Anything else (another
method first, params the SDK would refuse) goes to the SDK untouched, which answers it. If
the SDK's answer ever differs from the one sent, the log says how (tests hold them equal).

Nothing here imports the SDK: its version list is read from `mcp_types/version.py`, a module
of constants, loaded on its own."""

import importlib.util
import json
import logging
from collections.abc import Mapping
from types import ModuleType
from typing import Any

_log = logging.getLogger("himga.mcp")

INSTRUCTIONS = (
    "Long-term memory. Call remember with what is said that may matter later, recall before "
    "answering about the past, forget what the user asks to drop; record_episode after a task "
    "and find_episodes before one, to learn from earlier attempts."
)
NOWHERE = (
    " Nowhere to keep memories: this server was started without --data-dir or --target, so "
    "what is remembered is held in memory only and lost when it stops. To keep it, start "
    "`himga mcp --data-dir DIR` (or `--target HOST:PORT` for a running himga server)."
)


def instructions(kept: bool) -> str:
    """What a host is told on `initialize`: how to use the tools, and, when nothing is kept,
    that it is not (a log line is not enough: desktop hosts hide the server's stderr)."""
    return INSTRUCTIONS + ("" if kept else NOWHERE)


CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}
"""What the server offers, as the SDK's low-level server with a tools handler announces it."""


def _versions() -> ModuleType:
    """The SDK's protocol-version constants (mcp_types.version), without its package."""
    package = importlib.util.find_spec("mcp_types")
    if package is None or not package.submodule_search_locations:
        raise ImportError("the mcp SDK (mcp_types) is not installed")
    location = f"{next(iter(package.submodule_search_locations))}/version.py"
    spec = importlib.util.spec_from_file_location("himga_mcp_types_version", location)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def negotiated(requested: str) -> str:
    """The protocol version answered to a client asking for `requested`: the SDK's rule, the
    one asked for when it is among the handshake versions, else the latest of them."""
    versions = _versions()
    if requested in versions.HANDSHAKE_PROTOCOL_VERSIONS:
        return requested
    latest: str = versions.LATEST_HANDSHAKE_VERSION
    return latest


def initialize_request(line: bytes) -> Mapping[str, Any] | None:
    """The `initialize` request `line` holds when it is one this module may answer (a JSON-RPC
    2.0 request with an id, and params the SDK takes: a protocolVersion string, capabilities,
    clientInfo with a name and a version); None for anything else, the SDK's to answer."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if message.get("method") != "initialize" or not isinstance(message.get("id"), (int, str)):
        return None
    if isinstance(message["id"], bool):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return None
    client = params.get("clientInfo")
    if not isinstance(params.get("capabilities"), dict) or not isinstance(client, dict):
        return None
    if not all(isinstance(client.get(key), str) for key in ("name", "version")):
        return None
    return message


def answer(request: Mapping[str, Any], name: str, version: str, instructions: str) -> bytes:
    """The answer line to an `initialize` request, as the SDK writes it."""
    result = {
        "capabilities": CAPABILITIES,
        "instructions": instructions,
        "protocolVersion": negotiated(request["params"]["protocolVersion"]),
        "serverInfo": {"name": name, "version": version},
    }
    line = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class Replay:
    """The server's stdin as the SDK reads it: `first` (the line already read), then the rest
    of `stream` (a text stream), line by line."""

    def __init__(self, first: str, stream: Any) -> None:
        self._first: str | None = first
        self._stream = stream

    def readline(self) -> str:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        line: str = self._stream.readline()
        return line

    def __iter__(self) -> "Replay":
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


class DropAnswer:
    """The server's stdout as the SDK writes it, but for its answer to the request of `id`
    (already answered as `sent`): that one is compared with what was sent, and dropped."""

    def __init__(self, stream: Any, id: int | str, sent: bytes) -> None:
        self._stream = stream
        self._id: int | str | None = id
        self._sent = json.loads(sent)
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            if self._id is not None and self._is_answer(line):
                continue
            self._stream.write(line + "\n")
        return len(text)

    def _is_answer(self, line: str) -> bool:
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("id") != self._id or "method" in message:
            return False
        self._id = None
        if message != self._sent:
            _log.warning(
                "the SDK answers initialize otherwise than himga did: %s, not %s",
                json.dumps(message.get("result", message)),
                json.dumps(self._sent.get("result")),
            )
        return True

    def flush(self) -> None:
        self._stream.flush()
