"""`himga mcp` start-up: the time from starting the process to its answer to `initialize`, as a
desktop host sees it when it launches the server over stdio, beside two baselines measured in
the same run, interleaved:

- `python -c pass`: the interpreter alone (start to exit);
- the SDK's bare low-level server (`mcp.server.Server` with no tools, over stdio): what any
  server on the official SDK pays before it can answer.

`himga mcp` is timed with no data directory and with one, and (in runs of their own) to its
first `tools/list` answer, which loads the tool schemas and validators. Prints seconds as
min / median / max over the runs, and himga's initialize time over the bare server's, per run;
and the CPU seconds each server process used in all (it exits as soon as it has answered),
which a loaded machine inflates far less than the wall-clock time.

    make bench-mcp      # or: python -m benchmarks.bench_mcp_start --runs 5
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

PROTOCOL_VERSION = "2025-06-18"
"""The protocol version the benchmark's client asks for (what desktop hosts send today)."""

BARE_SERVER = """
import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server

async def main():
    server = Server("bare")
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""


def _send(process: "subprocess.Popen[bytes]", message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def _answer(process: "subprocess.Popen[bytes]", request_id: int) -> dict[str, object]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its output before answering")
        message: dict[str, object] = json.loads(line)
        if message.get("id") == request_id:
            if "result" not in message:
                raise RuntimeError(f"the server refused: {message}")
            return message


def time_server(command: Sequence[str], list_tools: bool) -> tuple[float, float | None, float]:
    """Seconds from start to the `initialize` answer, and to the first `tools/list` answer; and
    the CPU seconds the process used, start to exit."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        _send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "bench-mcp", "version": "0"},
                },
            },
        )
        _answer(process, 1)
        initialized = time.perf_counter() - start
        listed = None
        if list_tools:
            _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            _answer(process, 2)
            listed = time.perf_counter() - start
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, status, usage = os.wait4(process.pid, 0)  # the server exits at the end of its input
        process.returncode = os.waitstatus_to_exitcode(status)
    return initialized, listed, usage.ru_utime + usage.ru_stime


def time_pass() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def spread(values: Sequence[float]) -> str:
    return f"{min(values):6.3f} / {statistics.median(values):6.3f} / {max(values):6.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    himga = [sys.executable, "-m", "himga", "mcp"]
    with tempfile.TemporaryDirectory() as data_dir:
        kinds: dict[str, tuple[list[str] | None, bool]] = {  # command, and list tools?
            "python -c pass": (None, False),
            "SDK bare server": ([sys.executable, "-c", BARE_SERVER], False),
            "himga mcp": (himga, False),
            "himga mcp --data-dir": ([*himga, "--data-dir", data_dir], False),
            "himga mcp, tools/list": (himga, True),
        }
        initialize: dict[str, list[float]] = {name: [] for name in kinds}
        listing: dict[str, list[float]] = {name: [] for name in kinds}
        cpu: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(runs):  # interleaved, so that a change of load hits every kind alike
            for name, (command, list_tools) in kinds.items():
                if command is None:
                    initialize[name].append(time_pass())
                    continue
                answered, listed, used = time_server(command, list_tools)
                initialize[name].append(answered)
                cpu[name].append(used)
                if listed is not None:
                    listing[name].append(listed)
    print(f"seconds from process start, min / median / max of {runs} runs")
    print(f"{'':22} {'initialize answered':>24}   {'first tools/list':>24}   {'CPU, in all':>24}")
    for name in kinds:
        shown = spread(listing[name]) if listing[name] else ""
        cpu_shown = spread(cpu[name]) if cpu[name] else ""
        print(f"{name:22} {spread(initialize[name]):>24}   {shown:>24}   {cpu_shown:>24}")
    bare = initialize["SDK bare server"]
    for name in ("himga mcp", "himga mcp --data-dir"):
        ratios = [mine / floor for mine, floor in zip(initialize[name], bare, strict=True)]
        print(f"{name} / SDK bare server, initialize: {spread(ratios)}")


if __name__ == "__main__":
    main()
