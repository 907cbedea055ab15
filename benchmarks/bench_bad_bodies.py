"""`make bench-bad-bodies`: how much a stream of large bad request bodies slows small calls to
other namespaces, and how large their answers are.

Starts `himga serve --memory keyword --http-port` as a separate process on 127.0.0.1. A client
sends small Retrieves to namespace `small` over gRPC one after another, alone for
WINDOW_SECONDS (the baseline), then while another thread posts, over HTTP, JSON Retrieve bodies
of KEYS unknown keys each (refused as INVALID_ARGUMENT naming the first 100, then a count of the
rest). It prints the small calls' latency (median, 99th percentile, max) in both phases, the
ratio of the 99th percentiles (target: at most 3), and the size of each refusal.
"""

import argparse
import http.client
import statistics
import sys
import threading
import time

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from benchmarks.bench_http import _free_port
from tests.server_process import start_listening

WINDOW_SECONDS = 10.0
KEYS = 800_000


def small_calls(stub: memory_pb2_grpc.MemoryServiceStub, seconds: float) -> list[float]:
    """Latencies of sequential small Retrieves of `small` for `seconds`."""
    request = pb.RetrieveRequest(namespace="small", query="support group", limit=5)
    latencies = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        stub.Retrieve(request, timeout=60)
        latencies.append(time.perf_counter() - start)
    return latencies


def describe(name: str, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    return (
        f"{name:<24} {len(latencies):>6} calls, median {statistics.median(ordered) * 1e3:.1f} ms, "
        f"p99 {p99 * 1e3:.1f} ms, max {ordered[-1] * 1e3:.1f} ms"
    )


def p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[int(0.99 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=WINDOW_SECONDS)
    parser.add_argument("--keys", type=int, default=KEYS)
    args = parser.parse_args()
    http_port = _free_port()
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--http-port", str(http_port)]
    process, target = start_listening([*command, "--memory", "keyword"])
    assert process.stderr is not None
    threading.Thread(target=process.stderr.read, daemon=True).start()
    body = ("{" + ",".join(f'"k{i}":1' for i in range(args.keys)) + "}").encode()
    answers: list[tuple[int, int, float]] = []
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.Ingest(
                pb.IngestRequest(
                    namespace="small",
                    message=pb.Message(role="u", content="a support group"),
                    session=pb.Session(session_id="s"),
                )
            )
            small_calls(stub, 1.0)  # warm up
            alone = small_calls(stub, args.seconds)
            stop = threading.Event()

            def send_bad() -> None:
                connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=600)
                while not stop.is_set():
                    start = time.perf_counter()
                    connection.request(
                        "POST",
                        "/himga.memory.v1.MemoryService/Retrieve",
                        body,
                        {"Content-Type": "application/json"},
                    )
                    reply = connection.getresponse()
                    answer = reply.read()
                    answers.append((reply.status, len(answer), time.perf_counter() - start))
                connection.close()

            sender = threading.Thread(target=send_bad)
            sender.start()
            time.sleep(1.0)
            beside = small_calls(stub, args.seconds)
            stop.set()
            sender.join()
    finally:
        process.terminate()
        process.wait()
    print(f"bad bodies: {args.keys} unknown keys, {len(body) / 1e6:.1f} MB each")
    print(describe("small Retrieve alone", alone))
    print(describe("beside bad bodies", beside))
    print(f"p99 beside / alone: {p99(beside) / p99(alone):.2f} (target: at most 3)")
    statuses = sorted({status for status, _, _ in answers})
    sizes = [size for _, size, _ in answers]
    seconds = [taken for _, _, taken in answers]
    print(
        f"bad bodies answered: {len(answers)}, statuses {statuses}, answer bytes "
        f"{min(sizes)} to {max(sizes)}, seconds each {min(seconds):.2f} to {max(seconds):.2f}"
    )


if __name__ == "__main__":
    main()
