"""`himga mcp` answers `initialize` on stdio before it imports the SDK (himga.mcp.handshake):
its answer is the SDK's own, for every protocol version a client may ask for; the SDK's
session then serves as if it had answered (the real SDK client's tests, test_mcp.py, go
through it); and anything the handshake does not take as a plain `initialize` is the SDK's
to answer."""

import json
import subprocess
import sys
import threading
from typing import Any

import mcp_types.version
import pytest

from himga.mcp import handshake

MCP = [sys.executable, "-m", "himga", "mcp"]
HANG_SECONDS = 120  # a guard against a hang, not a limit on speed


def initialize(protocol: str, request_id: int | str = 1, **params: Any) -> dict[str, Any]:
    sent = {
        "protocolVersion": protocol,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": sent | params}


def exchange(
    lines: list[str], count: int, command: list[str] = MCP
) -> tuple[list[dict[str, Any]], str]:
    """The first `count` lines `command` (`himga mcp`) writes on stdout to `lines` (each sent
    as a line), and its log: stdin is closed once they came, as a client ends a session."""
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    guard = threading.Timer(HANG_SECONDS, process.kill)
    guard.start()
    try:
        process.stdin.write("".join(line + "\n" for line in lines))
        process.stdin.flush()
        found = [json.loads(line) for _, line in zip(range(count), process.stdout, strict=False)]
        process.stdin.close()
        assert process.stderr is not None
        log = process.stderr.read()  # to its end: the process has ended
        process.wait()
    finally:
        guard.cancel()
    assert process.returncode == 0, log
    return found, log


def answers(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    """What `himga mcp` writes on stdout to `messages`: an answer to each request (a message
    with an id)."""
    wanted = sum("id" in message for message in messages)
    found, log = exchange([json.dumps(message) for message in messages], wanted)
    assert "otherwise than himga did" not in log, log
    return found


PING = {"jsonrpc": "2.0", "id": "first", "method": "ping"}
ASKED = [*mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01", "2026-07-28"]


@pytest.mark.parametrize("protocol", ASKED)
def test_the_answer_before_the_sdk_is_the_sdks(protocol: str) -> None:
    (fast,) = answers(initialize(protocol))
    # A ping first: the handshake leaves everything to the SDK, which answers initialize itself.
    ping, by_the_sdk = answers(PING, initialize(protocol))
    assert ping == {"jsonrpc": "2.0", "id": "first", "result": {}}
    assert fast == by_the_sdk
    request = initialize(protocol)
    assert (
        json.loads(
            handshake.answer(
                request,
                "himga",
                fast["result"]["serverInfo"]["version"],
                handshake.instructions(False),
            )
        )
        == by_the_sdk
    )


def test_the_session_goes_on_as_the_sdk_would_have_it() -> None:
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listed = {"jsonrpc": "2.0", "id": "tools", "method": "tools/list"}
    first, tools = answers(initialize("2025-06-18", "init-1"), initialized, listed)
    assert first["id"] == "init-1" and first["result"]["protocolVersion"] == "2025-06-18"
    assert tools["id"] == "tools"
    assert "remember" in {tool["name"] for tool in tools["result"]["tools"]}


@pytest.mark.parametrize(
    "odd",
    [
        {"clientInfo": {"name": "t"}},  # no version: the SDK refuses it
        {"capabilities": None},
    ],
)
def test_an_initialize_the_sdk_would_refuse_is_the_sdks_to_answer(odd: dict[str, Any]) -> None:
    assert (
        handshake.initialize_request(json.dumps(initialize("2025-06-18", **odd)).encode()) is None
    )
    (answer,) = answers(initialize("2025-06-18", **odd))
    assert "error" in answer, answer


def test_the_version_rule_is_the_sdks() -> None:
    for asked in ASKED:
        want = (
            asked
            if asked in mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS
            else (mcp_types.version.LATEST_HANDSHAKE_VERSION)
        )
        assert handshake.negotiated(asked) == want
