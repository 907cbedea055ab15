"""The server's CPU time for the first invalid EpisodeTrace it is sent, beside a second one.

The first invalid record a server sees is explained by the reference validator (himga.validation:
`jsonschema`, loaded on first use), so that call pays for loading it; the second, the same
request again, is the baseline: what answering an invalid record costs once everything is
loaded. Each run starts a fresh `himga serve` (null memory, nothing on disk), sends one valid
RecordEpisode (so both measured calls find the episode store open), then the invalid one twice,
and reads the server's CPU time (every thread's, from /proc) around each call. Prints, over the
runs, min / median / max of both and of their difference, in milliseconds of server CPU.

    make bench-cold-start      # or: python -m benchmarks.bench_cold_start --runs 5
"""

import argparse
import importlib.util
import statistics
import sys
import threading
from pathlib import Path

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from tests.server_process import start_listening

# The record: a valid one, and one broken as a hurried client breaks it (no agent, no goal).
VALID = pb.EpisodeTrace(id="ep-1", task_id="t", agent="coder", context=pb.EpisodeContext(goal="g"))
VALID.timestamp.FromJsonString("2024-05-08T13:56:00Z")
INVALID = pb.EpisodeTrace(id="ep-2", task_id="t", context=pb.EpisodeContext())
INVALID.timestamp.FromJsonString("2024-05-08T13:56:00Z")


def cpu_seconds(pid: int) -> float:
    """Every live thread's time on a CPU so far (nanoseconds in /proc/PID/task/*/schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def one_run() -> tuple[float, float]:
    """(first, second) invalid call's server CPU milliseconds, in one fresh server."""
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "null"]
    process, target = start_listening(command)
    assert process.stderr is not None
    threading.Thread(target=process.stderr.read, daemon=True).start()  # keep the pipe drained
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memory_pb2_grpc.EpisodeServiceStub(channel)
            stub.RecordEpisode(pb.RecordEpisodeRequest(namespace="cold", episode=VALID))
            costs = []
            for _ in range(2):
                before = cpu_seconds(process.pid)
                try:
                    stub.RecordEpisode(pb.RecordEpisodeRequest(namespace="cold", episode=INVALID))
                except grpc.RpcError as error:
                    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
                else:
                    raise AssertionError("the invalid episode was recorded")
                costs.append((cpu_seconds(process.pid) - before) * 1000)
            return costs[0], costs[1]
    finally:
        process.terminate()
        process.wait(30)


def spread(values: list[float]) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{low:7.1f} / {mid:7.1f} / {high:7.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for heavy in ("rfc3987_syntax", "isoduration"):
        if importlib.util.find_spec(heavy) is not None:
            print(
                f"note: {heavy} is installed (jsonschema imports it, slowly); a fresh install"
                " of himga no longer brings it: pip uninstall it to measure as one would"
            )
    results = [one_run() for _ in range(args.runs)]
    first, second = [r[0] for r in results], [r[1] for r in results]
    extra = [a - b for a, b in results]
    print(f"server CPU ms, min / median / max of {args.runs} fresh servers:")
    print(f"  first invalid EpisodeTrace   {spread(first)}")
    print(f"  second (baseline)            {spread(second)}")
    print(f"  first - second               {spread(extra)}")


if __name__ == "__main__":
    main()
