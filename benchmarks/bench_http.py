"""`make bench-http`: Retrieve over HTTP JSON (Connect) beside Retrieve over gRPC, in one run.

Starts `himga serve --http-port` as a separate process on 127.0.0.1 (so client and server do
not share an interpreter), stores the LoCoMo development conversations in one namespace, and
asks their real questions through both ports of that one process: one call at a time, then
CONCURRENCY calls in flight. The clients are what a Python user would pick: a gRPC stub on one
channel; http.client with one keep-alive HTTP/1.1 connection per thread, the body made and read
with the json module. Both are warmed first (every thread's connection open, every question
asked once through each port, which also checks that both ports answer every question with the
same hits). The CONCURRENCY threads are made once and kept for every timed pass.

Each run times every question through both ports in BLOCKS blocks that alternate which port
goes first, so that a change in the machine's load falls on both. The table gives min / median
/ max over the runs of HTTP's calls per second as a share of gRPC's, each ratio taken within
one run. Target: HTTP JSON at least 0.8 of gRPC, sequential and at concurrency 8. The floor
rows time, the same way, a call the HTTP server answers without the core (a refused CORS
preflight) against gRPC's Retrieve: the most HTTP calls per second this server gives at all.

Then, in the same process, the MB/s at which a valid IngestBatch of 10,000 LoCoMo turns (as
JSON) is decoded by the HTTP port's codec (himga.http.fastjson, json_format where it is unsure)
beside protobuf's json_format (target: at least 20 MB/s): in the thread that asks, and as the
server reads a body that large (himga.http.apart: in its thread up to HERE_BYTES, else in its
helper process, the message sent back in its binary form).
"""

import argparse
import http.client
import itertools
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
from typing import Any

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data import load_dataset
from himga.service import RemoteMemory
from tests.server_process import start_listening

RUNS = 5
CALLS = 400
BLOCKS = 10
CONCURRENCY = 8
LIMIT = 10
NAMESPACE = "bench-http"
DECODED_ITEMS = 10_000
LOCOMO = Path(os.environ.get("LOCOMO", "../shared/data/locomo/locomo-dev.json"))
_RETRIEVE = "/himga.memory.v1.MemoryService/Retrieve"

Call = Callable[[str], list[str]]
"""Asks one question; answers the turn_ids of its hits."""


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
    print(
        f"Retrieve over HTTP JSON vs gRPC, {len(questions)} LoCoMo questions (limit {LIMIT}), "
        f"one server process, {args.runs} runs"
    )
    for name, ratios in table.items():
        low, mid, high = min(ratios), statistics.median(ratios), max(ratios)
        print(f"  {name:<16} HTTP / gRPC calls per second: {low:.2f} / {mid:.2f} / {high:.2f}")
    _decoding(samples, args.runs)
    return 0


def _decoding(samples: list[Any], runs: int) -> None:
    """MB/s of valid request body decoded: the HTTP port's JSON codec beside json_format, on
    one IngestBatch of DECODED_ITEMS LoCoMo turns (the development conversations' turns over
    again, in order, as far as it takes), each way timed in turn within each run, in the same
    process (min / median / max of `runs`)."""
    from google.protobuf import json_format

    from himga.http import apart, codec, protojson
    from himga.service import convert

    turns = [
        pb.IngestItem(
            message=convert.message_to_proto(m),
            session=convert.session_to_proto(s, with_messages=False),
        )
        for sample in samples
        for s in sample.sessions
        for m in s.messages
    ]
    items = list(itertools.islice(itertools.cycle(turns), DECODED_ITEMS))
    request = pb.IngestBatchRequest(namespace=NAMESPACE, items=items)
    data = json.dumps(protojson.to_dict(request)).encode()
    kind = pb.IngestBatchRequest
    ways: dict[str, Callable[[], object]] = {
        "json_format": lambda: json_format.Parse(data, kind()),
        "the HTTP codec, in the server's thread": lambda: codec.JSON.parse_here(data, kind),
        "the HTTP codec, as the server reads this body": lambda: codec.JSON.parse(data, kind),
    }
    for decode in ways.values():
        if decode() != request:
            raise RuntimeError("a decoder read the batch differently")
    where = "in a helper process" if len(data) > apart.HERE_BYTES else "in the server's thread"
    print(
        f"JSON decoding of a valid IngestBatch of {len(items)} LoCoMo turns "
        f"({len(data) / 1e6:.1f} MB; the server reads it {where}), MB/s, {runs} runs"
    )
    speeds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs):
        for name, decode in ways.items():
            start = time.perf_counter()
            decode()
            speeds[name].append(len(data) / 1e6 / (time.perf_counter() - start))
    for name, found in speeds.items():
        low, mid, high = min(found), statistics.median(found), max(found)
        print(f"  {name:<46} {low:.1f} / {mid:.1f} / {high:.1f}")
    apart.shutdown()


def _measure(
    target: str, http_port: int, questions: list[str], runs: int
) -> dict[str, list[float]]:
    sequential, concurrent = "sequential", f"concurrency {CONCURRENCY}"
    floors = {sequential: "  floor, sequential", concurrent: f"  floor, concurrency {CONCURRENCY}"}
    table: dict[str, list[float]] = {
        sequential: [],
        concurrent: [],
        **{f: [] for f in floors.values()},
    }
    local = threading.local()
    with (
        grpc.insecure_channel(target) as channel,
        ThreadPoolExecutor(max_workers=CONCURRENCY) as pool,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)

        def over_grpc(question: str) -> list[str]:
            request = pb.RetrieveRequest(namespace=NAMESPACE, query=question, limit=LIMIT)
            return [hit.turn_id for hit in stub.Retrieve(request, timeout=30).hits]

        def over_http(question: str) -> list[str]:
            if not hasattr(local, "connection"):
                local.connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
            body = json.dumps({"namespace": NAMESPACE, "query": question, "limit": LIMIT})
            headers = {"Content-Type": "application/json"}
            try:
                local.connection.request("POST", _RETRIEVE, body, headers)
                answer = local.connection.getresponse()
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                # The server closed a connection left idle past its keep-alive timeout (5 s);
                # a client opens another, as this one does once.
                local.connection.close()
                local.connection.request("POST", _RETRIEVE, body, headers)
                answer = local.connection.getresponse()
            payload = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"HTTP {answer.status}: {payload[:200]!r}")
            return [hit["turn_id"] for hit in json.loads(payload)["hits"]]

        def over_floor(question: str) -> list[str]:
            """The HTTP server's floor: a call the application answers at once (a CORS
            preflight from no allowed origin: 403, no body), on the same server."""
            if not hasattr(local, "floor"):
                local.floor = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
            try:
                local.floor.request("OPTIONS", _RETRIEVE)
                answer = local.floor.getresponse()
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                local.floor.close()
                local.floor.request("OPTIONS", _RETRIEVE)
                answer = local.floor.getresponse()
            answer.read()
            return []

        # Warm both ways, each thread's connection included, and check they answer alike.
        for workers in (1, CONCURRENCY):
            grpc_hits = _ask(over_grpc, questions, workers, pool)
            if _ask(over_http, questions, workers, pool) != grpc_hits:
                raise RuntimeError("HTTP and gRPC answered the same questions differently")
        blocks = [questions[i::BLOCKS] for i in range(BLOCKS)]
        for run in range(runs):
            for workers, name in ((1, sequential), (CONCURRENCY, concurrent)):
                spent = {over_grpc: 0.0, over_http: 0.0, over_floor: 0.0}
                for number, block in enumerate(blocks):
                    ways = (over_grpc, over_http) if (run + number) % 2 else (over_http, over_grpc)
                    for way in (*ways, over_floor):
                        start = time.perf_counter()
                        _ask(way, block, workers, pool)
                        spent[way] += time.perf_counter() - start
                table[name].append(spent[over_grpc] / spent[over_http])
                table[floors[name]].append(spent[over_grpc] / spent[over_floor])
    return table


def _ask(
    call: Call, questions: list[str], workers: int, pool: ThreadPoolExecutor
) -> list[list[str]]:
    """The answers of `call` to every question, `workers` at a time (1: on this thread)."""
    if workers == 1:
        return [call(question) for question in questions]
    return list(pool.map(call, questions))


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
