"""A host that pipes its calls closes stdin right after the last one: `himga mcp` answers the
calls still in flight before it stops (himga.mcp.inflight), where the SDK alone answered
"Connection closed" and rolled a `remember` back."""

import json
import logging
import subprocess
import threading
from pathlib import Path

import anyio
import pytest

from himga.mcp.inflight import InFlight
from tests.mcp.test_handshake import HANG_SECONDS, MCP, exchange, initialize

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(request_id: int, tool: str, **arguments: object) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def test_a_remember_sent_just_before_stdin_closes_is_answered_and_kept(tmp_path: Path) -> None:
    command = [*MCP, "--data-dir", str(tmp_path)]
    lines = [initialize("2025-06-18"), INITIALIZED, _call(2, "remember", text="the blue umbrella")]
    # stdin closes as soon as the lines are written (communicate), not after their answers
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    guard = threading.Timer(HANG_SECONDS, process.kill)
    guard.start()
    try:
        out, log = process.communicate("".join(json.dumps(line) + "\n" for line in lines))
    finally:
        guard.cancel()
    assert process.returncode == 0, log
    answers = {answer["id"]: answer for answer in map(json.loads, out.splitlines())}
    assert answers[2]["result"]["isError"] is False, answers[2]
    # Kept: another session over the same data directory recalls it.
    recalled = [initialize("2025-06-18"), INITIALIZED, _call(3, "recall", query="umbrella")]
    found, _ = exchange([json.dumps(line) for line in recalled], 2, command)
    assert "the blue umbrella" in found[1]["result"]["structuredContent"]["context"]


def test_a_call_never_answered_delays_the_end_no_longer_than_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    flight = InFlight()
    flight.begun(7)
    flight.begun("a")
    flight.ended("a")

    async def drain() -> float:
        start = anyio.current_time()
        await flight.drained(0.2)
        return anyio.current_time() - start

    with caplog.at_level(logging.WARNING, logger="himga.mcp"):
        waited = anyio.run(drain)
    assert waited >= 0.2
    assert "1 call(s) unanswered after 0.2 s: 7" in caplog.text
    flight.ended(7)
    assert anyio.run(drain) < 0.2  # nothing in flight: back at once
