"""`make bench-concurrent`: Retrieves to ONE namespace, 8 in flight beside one at a time, in one
run: how much the keyword memories' shared read lock (himga.memory.readwrite) lets a server's
Retrieves of one namespace run side by side.

Starts `himga serve` as a separate process on 127.0.0.1 (its data directory a fresh temporary
one), stores SIZE messages of natural text (benchmarks/corpus.py) in one namespace of each
memory (MEMORIES) through IngestBatch, and asks the LoCoMo file's real questions through a gRPC
stub on one channel: one call at a time, then IN_FLIGHT calls in flight, kept so by one thread
with gRPC's futures (a call sent as soon as one of the IN_FLIGHT is answered: a client of
IN_FLIGHT Python threads would take more of the cores the server needs, on a machine of two).
Each run times every question both ways in BLOCKS blocks that alternate which way goes first,
so that a change in the machine's load falls on both. The figures are min / median / max over
the runs of the calls per second each way and of their ratio, each ratio taken within one run;
beside them the cores each side got, as CPU time per second of wall time: the server's (its
/proc stat), this client's, and the rest of the machine's (the busy time of /proc/stat less
both): on a machine whose other work takes the cores, the ratio can be no higher than what is
left allows.
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


def _machine_busy() -> float:
    """The CPU seconds every core of the machine has been busy so far (/proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(field) for field in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _in_flight(ask: Callable[[str], "grpc.Future"], asked: list[str]) -> None:
    """Every question of `asked` answered, IN_FLIGHT calls in flight until the last are sent."""
    room = threading.Semaphore(IN_FLIGHT)
    calls = []
    for question in asked:
        room.acquire()
        call = ask(question)
        call.add_done_callback(lambda _: room.release())
        calls.append(call)
    for call in calls:
        call.result()


def _timed(
    ask: Callable[[str], object],
    ask_later: Callable[[str], "grpc.Future"] | None,
    asked: list[str],
    pid: int,
) -> tuple[float, tuple[float, float, float]]:
    """Calls per second over `asked` (one at a time, or IN_FLIGHT at once through `ask_later`)
    and the cores the server, this client and the rest of the machine took meanwhile."""
    server, client, machine = _cpu_seconds(pid), time.process_time(), _machine_busy()
    start = time.perf_counter()
    if ask_later is None:
        for question in asked:
            ask(question)
    else:
        _in_flight(ask_later, asked)
    wall = time.perf_counter() - start
    server = (_cpu_seconds(pid) - server) / wall
    client = (time.process_time() - client) / wall
    others = (_machine_busy() - machine) / wall - server - client
    return len(asked) / wall, (server, client, others)


def _drain(process: "subprocess.Popen[str]") -> None:
    """Read the server's log as it comes, so that a full pipe never blocks it."""
    assert process.stderr is not None
    for _ in process.stderr:
        pass


def _spread(values: list[float], fmt: str = "{:.3g}") -> str:
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def _cores(taken: list[tuple[float, float, float]]) -> str:
    """The median over runs of each side's cores."""
    return " / ".join(f"{statistics.median(side):.2f}" for side in zip(*taken, strict=True))


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
    print(f"cores: server / this client / the rest of the machine, of {os.cpu_count()}")
    for memory, (one, many, ratios, cores_one, cores_many) in results.items():
        print(f"  {memory}: one at a time {_spread(one)} calls/s (cores {_cores(cores_one)})")
        print(
            f"  {memory}: {IN_FLIGHT} in flight {_spread(many)} calls/s "
            f"(cores {_cores(cores_many)})"
        )
        print(f"  {memory}: {IN_FLIGHT} in flight / one at a time: {_spread(ratios, '{:.2f}')}")
    return 0


_Cores = tuple[float, float, float]


def _measure(
    target: str, memory: str, asked: list[str], runs: int, pid: int
) -> tuple[list[float], list[float], list[float], list[_Cores], list[_Cores]]:
    channel = grpc.insecure_channel(target)
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    namespace = f"bench-{memory}"

    def request(question: str) -> pb.RetrieveRequest:
        return pb.RetrieveRequest(namespace=namespace, memory=memory, query=question, limit=LIMIT)

    def ask(question: str) -> object:
        return stub.Retrieve(request(question), timeout=60)

    def ask_later(question: str) -> grpc.Future:
        return stub.Retrieve.future(request(question), timeout=60)

    one, many, ratios = [], [], []
    cores_one: list[_Cores] = []
    cores_many: list[_Cores] = []
    _in_flight(ask_later, asked)  # every question once, the server's threads started
    block = max(1, len(asked) // BLOCKS)
    for _ in range(runs):
        rates: dict[bool, list[tuple[float, _Cores]]] = {False: [], True: []}
        for b in range(BLOCKS):
            part = asked[b * block : (b + 1) * block] or asked
            order = (False, True) if b % 2 == 0 else (True, False)
            for together in order:
                rates[together].append(_timed(ask, ask_later if together else None, part, pid))
        alone_rate = statistics.fmean(rate for rate, _ in rates[False])
        together_rate = statistics.fmean(rate for rate, _ in rates[True])
        one.append(alone_rate)
        many.append(together_rate)
        ratios.append(together_rate / alone_rate)
        for mode, kept in ((False, cores_one), (True, cores_many)):
            taken = [cores for _, cores in rates[mode]]
            kept.append(tuple(statistics.fmean(side) for side in zip(*taken, strict=True)))  # type: ignore[arg-type]
    channel.close()
    return one, many, ratios, cores_one, cores_many


if __name__ == "__main__":
    sys.exit(main())
