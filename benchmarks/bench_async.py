"""`make bench-async`: 1,000 concurrent retrieves from one event loop (AsyncRemoteMemory, one
grpc.aio channel) beside the same 1,000 through RemoteMemory from a thread pool (one channel,
THREADS threads), measured in one run.

Starts `himga serve` (the default sqlite memory) as a separate process on 127.0.0.1, stores a
LoCoMo-like conversation of SIZE messages in a namespace, then in each of RUNS runs times both
ways of issuing CALLS retrieves (each waits for all of them). The table gives the wall time of
each and the ratio of their rates (async over threaded), min / median / max over the runs, each
ratio taken within a run.
"""

import asyncio
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from himga.data.conversation import Message, Session
from himga.service import AsyncRemoteMemory, RemoteMemory
from tests.server_process import start_listening

RUNS = 5
CALLS = 1000
THREADS = 32
SIZE = 2000
QUERIES = ("support group", "painting", "adoption agencies", "camping with the kids", "music")


def fill(target: str, namespace: str) -> None:
    items = [
        (
            Message(role="Caroline", content=f"{QUERIES[i % 5]} came up again today ({i})"),
            Session(session_id=f"s{i // 25}", date_str="1:56 pm on 8 May, 2023"),
        )
        for i in range(SIZE)
    ]
    with RemoteMemory(target, namespace) as memory:
        memory.store(items)


def threaded(memory: RemoteMemory) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(memory.retrieve, (QUERIES[i % 5] for i in range(CALLS))))
    return time.perf_counter() - start


async def concurrent(memory: AsyncRemoteMemory) -> float:
    start = time.perf_counter()
    await asyncio.gather(*(memory.retrieve(QUERIES[i % 5]) for i in range(CALLS)))
    return time.perf_counter() - start


async def async_runs(target: str, namespace: str, runs: int) -> list[float]:
    async with AsyncRemoteMemory(target, namespace) as memory:
        await concurrent(memory)  # warm up: the channel connects
        return [await concurrent(memory) for _ in range(runs)]


def spread(values: list[float], unit: str = "") -> str:
    return " / ".join(
        f"{v:.2f}{unit}" for v in (min(values), statistics.median(values), max(values))
    )


def main() -> int:
    command = [sys.executable, "-m", "himga", "serve", "--port", "0"]
    process, target = start_listening(command)
    try:
        namespace = "bench-async"
        fill(target, namespace)
        with RemoteMemory(target, namespace) as memory:
            threaded(memory)  # warm up
            sync_times, async_times = [], []
            for _ in range(RUNS):
                sync_times.append(threaded(memory))
                async_times.extend(asyncio.run(async_runs(target, namespace, 1)))
    finally:
        process.terminate()
        process.wait()
    ratios = [s / a for s, a in zip(sync_times, async_times, strict=True)]
    print(f"{CALLS} retrieves over {SIZE} stored messages, {RUNS} runs (min / median / max)")
    print(f"  one event loop, AsyncRemoteMemory:        {spread(async_times, ' s')}")
    print(f"  thread pool ({THREADS}), RemoteMemory:           {spread(sync_times, ' s')}")
    print(f"  async rate / threaded rate:               {spread(ratios, 'x')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
