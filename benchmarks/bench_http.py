"""`make bench-http`: Retrieve over HTTP JSON (Connect) beside Retrieve over gRPC, in one run.

Starts `himga serve --http-port` as a separate process on 127.0.0.1 (so client and server do
not share an interpreter), stores the LoCoMo development conversations in one namespace, and
asks their real questions through both ports: one call at a time, then CONCURRENCY calls in
flight (a thread each: a gRPC stub on one shared channel; an HTTP/1.1 keep-alive connection per
thread). Each of RUNS runs times both in turn; the table gives min / median / max over the runs
of HTTP's calls per second as a share of gRPC's, each ratio taken within a run.
Target: HTTP JSON at least 0.50 of gRPC, sequential and at concurrency 8.
"""

import argparse
import http.client
import json
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data import load_dataset
from himga.service import RemoteMemory
from tests.server_process import start_listening

RUNS = 3
CALLS = 400
CONCURRENCY = 8
NAMESPACE = "bench-http"
LOCOMO = Path(os.environ.get("LOCOMO", "../shared/data/locomo/locomo-dev.json"))
_RETRIEVE = "/himga.memory.v1.MemoryService/Retrieve"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--calls", type=int, default=CALLS)
    args = parser.parse_args()
    samples = load_dataset("locomo", path=LOCOMO)
    questions = [qa.question for sample in samples for qa in sample.qa_pairs][: args.calls]
    http_port = _free_port()
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--http-port", str(http_port)]
    process, target = start_listening([*command, "--memory", "keyword"])
    try:
        threading.Thread(target=_drain, args=(process,), daemon=True).start()
        with RemoteMemory(target, NAMESPACE) as memory:
            for sample in samples:
                memory.ingest_many((m, s) for s in sample.sessions for m in s.messages)
        table = _measure(target, http_port, questions, args.runs)
    finally:
        process.terminate()
        process.wait()
    print(f"Retrieve over HTTP JSON vs gRPC, {len(questions)} LoCoMo questions, {args.runs} runs")
    for name, ratios in table.items():
        low, mid, high = min(ratios), statistics.median(ratios), max(ratios)
        print(f"  {name:<16} HTTP / gRPC calls per second: {low:.2f} / {mid:.2f} / {high:.2f}")
    return 0


def _measure(
    target: str, http_port: int, questions: list[str], runs: int
) -> dict[str, list[float]]:
    table: dict[str, list[float]] = {"sequential": [], f"concurrency {CONCURRENCY}": []}
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)

        def over_grpc(question: str) -> int:
            request = pb.RetrieveRequest(namespace=NAMESPACE, query=question, limit=10)
            return len(stub.Retrieve(request, timeout=30).hits)

        local = threading.local()

        def over_http(question: str) -> int:
            if not hasattr(local, "connection"):
                local.connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
            body = json.dumps({"namespace": NAMESPACE, "query": question, "limit": 10})
            headers = {"Content-Type": "application/json"}
            local.connection.request("POST", _RETRIEVE, body, headers)
            answer = local.connection.getresponse()
            payload = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"HTTP {answer.status}: {payload[:200]!r}")
            return len(json.loads(payload).get("hits", []))

        # Both ports must find the same hits, or the comparison means nothing.
        sample = questions[:20]
        if [over_grpc(q) for q in sample] != [over_http(q) for q in sample]:
            raise RuntimeError("HTTP and gRPC answered the same questions differently")
        for _ in range(runs):
            for workers, name in ((1, "sequential"), (CONCURRENCY, f"concurrency {CONCURRENCY}")):
                grpc_rate = _rate(over_grpc, questions, workers)
                http_rate = _rate(over_http, questions, workers)
                table[name].append(http_rate / grpc_rate)
    return table


def _rate(call: Callable[[str], int], questions: list[str], workers: int) -> float:
    """Calls per second of `call` over every question, `workers` at a time."""
    start = time.perf_counter()
    if workers == 1:
        for question in questions:
            call(question)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(call, questions))
    return len(questions) / (time.perf_counter() - start)


def _free_port() -> int:
    """A port free on 127.0.0.1 now (the server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _drain(process: "object") -> None:
    for _ in process.stderr:  # type: ignore[attr-defined]
        pass


if __name__ == "__main__":
    sys.exit(main())
