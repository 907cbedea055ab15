"""`make bench-concurrent`: Retrieves to ONE namespace, 8 in flight beside one at a time, in one
run: how much the keyword memories' shared read lock (himga.memory.readwrite) lets a server's
Retrieves of one namespace run side by side.

Starts `himga serve` as a separate process on 127.0.0.1 (its data directory a fresh temporary
one), stores SIZE messages of natural text (benchmarks/corpus.py) in one namespace of each
memory (MEMORIES) through IngestBatch, and asks the LoCoMo file's real questions through a gRPC
stub on one channel: one call at a time, then IN_FLIGHT calls in flight from as many threads
(made once, warmed, kept). Each run times every question both ways in BLOCKS blocks that
alternate which way goes first, so that a change in the machine's load falls on both. The
figures are min / median / max over the runs of the calls per second each way and of their
ratio, each ratio taken within one run; beside them the server's CPU time per second of wall
time (its /proc stat), the cores it got: on a machine whose other work takes the cores (Linux
groups a session's threads for the scheduler), the ratio can be no higher than that allows.
Target: 8 in flight at least 1.5x the calls per second of one at a time.

    make bench-concurrent   # or: python -m benchmarks.bench_concurrent --size 100000 --runs 3
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from benchmarks.corpus import natural, questions
from himga.service import RemoteMemory
from tests.server_process import start_listening

SIZE = 100_000
RUNS = 3
CALLS = 200
BLOCKS = 4
IN_FLIGHT = 8
LIMIT = 10
MEMORIES = ("sqlite", "keyword")
BATCH = 1000
LOCOMO = os.environ.get("LOCOMO", "../shared/data/locomo/locomo-dev.json")


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(
    ask: Callable[[str], object], asked: list[str], pool: ThreadPoolExecutor | None, pid: int
) -> tuple[float, float]:
    """Calls per second over `asked` (one at a time, or through `pool`) and the server's cores."""
    cpu, start = _cpu_seconds(pid), time.perf_counter()
    if pool is None:
        for question in asked:
            ask(question)
    else:
        list(pool.map(ask, asked))
    wall = time.perf_counter() - start
    return len(asked) / wall, (_cpu_seconds(pid) - cpu) / wall


def _drain(process: "subprocess.Popen[str]") -> None:
    """Read the server's log as it comes, so that a full pipe never blocks it."""
    assert process.stderr is not None
    for _ in process.stderr:
        pass


def _spread(values: list[float], fmt: str = "{:.3g}") -> str:
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--memories", default=",".join(MEMORIES), help="comma-separated kinds")
    args = parser.parse_args()
    data = natural(LOCOMO, args.size)
    asked = questions(LOCOMO, args.calls)
    with tempfile.TemporaryDirectory() as directory:
        command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--data-dir", directory]
        process, target = start_listening(command)
        try:
            threading.Thread(target=_drain, args=(process,), daemon=True).start()
            memories = args.memories.split(",")
            for memory in memories:
                with RemoteMemory(target, f"bench-{memory}", memory=memory) as remote:
                    for i in range(0, len(data), BATCH):
                        remote.ingest_many(data[i : i + BATCH])
            results = {
                memory: _measure(target, memory, asked, args.runs, process.pid)
                for memory in memories
            }
        finally:
            process.terminate()
            process.wait()
    print(
        f"Retrieve to one namespace of {args.size:,} natural-text messages, {len(asked)} LoCoMo "
        f"questions (limit {LIMIT}), one server process; min / median / max over {args.runs} runs"
    )
    print(f"target: {IN_FLIGHT} in flight >= 1.5x the calls/s of one at a time")
    for memory, (one, many, ratios, cores_one, cores_many) in results.items():
        print(
            f"  {memory}: one at a time {_spread(one)} calls/s (server cores {_spread(cores_one)})"
        )
        print(
            f"  {memory}: {IN_FLIGHT} in flight {_spread(many)} calls/s "
            f"(server cores {_spread(cores_many)})"
        )
        print(f"  {memory}: {IN_FLIGHT} in flight / one at a time: {_spread(ratios, '{:.2f}')}")
    return 0


def _measure(
    target: str, memory: str, asked: list[str], runs: int, pid: int
) -> tuple[list[float], list[float], list[float], list[float], list[float]]:
    channel = grpc.insecure_channel(target)
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    namespace = f"bench-{memory}"

    def ask(question: str) -> object:
        request = pb.RetrieveRequest(
            namespace=namespace, memory=memory, query=question, limit=LIMIT
        )
        return stub.Retrieve(request, timeout=60)

    one, many, ratios, cores_one, cores_many = [], [], [], [], []
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        list(pool.map(ask, asked))  # every thread's first call, every question once
        block = max(1, len(asked) // BLOCKS)
        for _ in range(runs):
            rates: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for b in range(BLOCKS):
                part = asked[b * block : (b + 1) * block] or asked
                order = (False, True) if b % 2 == 0 else (True, False)
                for together in order:
                    rates[together].append(_timed(ask, part, pool if together else None, pid))
            alone = statistics.fmean(rate for rate, _ in rates[False])
            together = statistics.fmean(rate for rate, _ in rates[True])
            one.append(alone)
            many.append(together)
            ratios.append(together / alone)
            cores_one.append(statistics.fmean(cores for _, cores in rates[False]))
            cores_many.append(statistics.fmean(cores for _, cores in rates[True]))
    channel.close()
    return one, many, ratios, cores_one, cores_many


if __name__ == "__main__":
    sys.exit(main())
