"""`make bench-isolation`: how much one namespace's large batch slows small calls to others.

Starts `himga serve --memory sqlite` as a separate process on 127.0.0.1 with a data directory.
A client sends small Ingests (one message each) to namespace `small` one after another, alone
for WINDOW_SECONDS (the baseline), then while other threads send IngestBatch calls of
BATCH_SIZE messages to namespace `large`. It prints the small calls' rate and their latency
(median, 99th percentile, max) in both phases, and the ratio of the rates.
"""

import argparse
import statistics
import sys
import tempfile
import threading
import time

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from tests.server_process import start_listening

WINDOW_SECONDS = 10.0
BATCH_SIZE = 100_000


def items(count: int, word: str) -> list[pb.IngestItem]:
    return [
        pb.IngestItem(
            message=pb.Message(role="Caroline", content=f"{word} support group number {i}"),
            session=pb.Session(session_id=f"s{i // 25}"),
        )
        for i in range(count)
    ]


def small_calls(stub: memory_pb2_grpc.MemoryServiceStub, seconds: float) -> list[float]:
    """Latencies of sequential one-message Ingests to `small` for `seconds`."""
    request = pb.IngestRequest(
        namespace="small",
        message=pb.Message(role="u", content="a small call"),
        session=pb.Session(session_id="s"),
    )
    latencies = []
    end = time.perf_counter() + seconds
    while (start := time.perf_counter()) < end:
        stub.Ingest(request, timeout=60)
        latencies.append(time.perf_counter() - start)
    return latencies


def describe(name: str, latencies: list[float], seconds: float) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{name:<22} {len(latencies) / seconds:8.0f}/s  p50 "
        f"{statistics.median(ordered) * 1000:6.1f} ms  p99 {p99 * 1000:6.1f} ms  "
        f"max {ordered[-1] * 1000:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=WINDOW_SECONDS)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        process, target = start_listening(
            [
                sys.executable,
                "-m",
                "himga",
                "serve",
                "--port",
                "0",
                "--memory",
                "sqlite",
                "--data-dir",
                data,
            ]
        )
        assert process.stderr is not None
        threading.Thread(target=process.stderr.read, daemon=True).start()
        try:
            options = [("grpc.max_send_message_length", -1)]
            with grpc.insecure_channel(target, options=options) as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                small_calls(stub, 1.0)  # warm up
                alone = small_calls(stub, args.seconds)
                # Serialized once, and sent as bytes: serializing it in this process at each
                # send would stall this process's own small calls and be measured as the
                # server's doing.
                large = pb.IngestBatchRequest(
                    namespace="large", items=items(args.batch_size, "w")
                ).SerializeToString()
                stop = threading.Event()
                batches = 0

                def send_batches() -> None:
                    nonlocal batches
                    with grpc.insecure_channel(target, options=options) as own:
                        big: grpc.UnaryUnaryMultiCallable[bytes, bytes] = own.unary_unary(
                            "/himga.memory.v1.MemoryService/IngestBatch"
                        )
                        while not stop.is_set():
                            big(large, timeout=600)
                            batches += 1

                sender = threading.Thread(target=send_batches)
                sender.start()
                time.sleep(1.0)  # the first batch is being read and stored
                beside = small_calls(stub, args.seconds)
                stop.set()
                sender.join()
        finally:
            process.terminate()
            process.wait()
    print(describe("small Ingest alone", alone, args.seconds))
    print(describe("beside large batches", beside, args.seconds))
    print(f"large batches of {args.batch_size} stored meanwhile: {batches}")
    print(f"rate beside / alone: {len(beside) / len(alone):.2f}")


if __name__ == "__main__":
    main()
