"""`make bench-service`: the memory service's own cost over gRPC's, measured in one run.

Starts `himga serve --memory null` as a separate process on 127.0.0.1 (so the client and the
server do not share an interpreter), with a data directory of its own, then, over one channel
with the generated stub, times sequential unary calls: the floor (a health Check: the same
server stack doing no work), Ingest and Retrieve on NullMemory; and IngestBatch in messages per
second. Then Retrieve where the ranking has work to do: on a namespace of the default memory
(SQLite, on disk) holding NATURAL_TURNS turns of natural text (benchmarks/corpus.py: LoCoMo's
turns, words reshuffled), asked the LoCoMo file's questions, one call at a time and with
IN_FLIGHT calls in flight at once (the floor too). Each of RUNS runs measures all of them in
turn; the table gives min / median / max over the runs, each ratio taken within a run.
Targets: Ingest and Retrieve at least 0.70 of the floor's calls/s; IngestBatch at least 20x
the messages/s of unary Ingest; Retrieve on the natural namespace at least 0.50 of the floor,
and more calls/s with IN_FLIGHT calls in flight than with one (the ranking releases the GIL).
"""

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from benchmarks.corpus import natural, questions
from tests.server_process import start_listening

RUNS = 5
CALLS = 2000
BATCH_SIZE = 500
SESSION_TURNS = 25
WARM_UP = 200
NATURAL_TURNS = 20_000
NATURAL = "natural"
IN_FLIGHT = 8
DEFAULT_LOCOMO = "../shared/data/locomo/locomo-dev.json"

SESSION = pb.Session(session_id="session_3", date_str="1:56 pm on 8 May, 2023")
MESSAGE = pb.Message(
    role="Caroline",
    content="I went to a LGBTQ support group yesterday and it was so powerful, honestly.",
    turn_id="D3:14",
)


def conversation(size: int) -> list[pb.IngestItem]:
    """`size` distinct messages, in sessions of SESSION_TURNS turns, as a LoCoMo conversation."""
    items = []
    for i in range(size):
        session, turn = divmod(i, SESSION_TURNS)
        message = pb.Message(
            role=MESSAGE.role, content=f"{MESSAGE.content} ({i})", turn_id=f"D{session}:{turn}"
        )
        items.append(
            pb.IngestItem(
                message=message,
                session=pb.Session(session_id=f"session_{session}", date_str=SESSION.date_str),
            )
        )
    return items


def per_second(call: Callable[[], object], count: int) -> float:
    """Calls of `call` per second over `count` sequential calls."""
    start = time.perf_counter()
    for _ in range(count):
        call()
    return count / (time.perf_counter() - start)


def in_flight(start: Callable[[], grpc.Future], count: int, width: int) -> float:
    """Calls per second over `count` calls made `width` at a time: each call that ends is
    replaced by a new one, so `width` are always in flight (from one client thread)."""
    began = time.perf_counter()
    pending: deque[grpc.Future] = deque(start() for _ in range(min(width, count)))
    for _ in range(count - len(pending)):
        pending.popleft().result()
        pending.append(start())
    while pending:
        pending.popleft().result()
    return count / (time.perf_counter() - began)


def load_natural(channel: grpc.Channel, locomo: str) -> None:
    """Ingest NATURAL_TURNS turns of natural text into the NATURAL namespace, in SQLite."""
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    items = [
        pb.IngestItem(
            message=pb.Message(role=m.role, content=m.content, turn_id=m.turn_id),
            session=pb.Session(session_id=s.session_id, date_str=s.date_str),
        )
        for m, s in natural(locomo, NATURAL_TURNS)
    ]
    for i in range(0, len(items), BATCH_SIZE):
        batch = items[i : i + BATCH_SIZE]
        stub.IngestBatch(pb.IngestBatchRequest(namespace=NATURAL, items=batch, memory="sqlite"))


def measure(channel: grpc.Channel, calls: int, asked: list[str]) -> dict[str, float]:
    """One run: the floor, Ingest and Retrieve in calls/s; IngestBatch in messages/s; Retrieve
    of the natural namespace one at a time and IN_FLIGHT at a time, and the floor so too."""
    # Any: the typeshed stub of HealthStub does not declare its methods.
    health: Any = health_pb2_grpc.HealthStub(channel)
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    check = health_pb2.HealthCheckRequest()
    ingest = pb.IngestRequest(namespace="bench", message=MESSAGE, session=SESSION)
    retrieve = pb.RetrieveRequest(namespace="bench", query="What did Caroline do yesterday?")
    batch = pb.IngestBatchRequest(namespace="bench", items=conversation(BATCH_SIZE))
    batches = max(1, calls // 100)
    requests: Iterator[pb.RetrieveRequest] = itertools.cycle(
        [pb.RetrieveRequest(namespace=NATURAL, query=q, memory="sqlite") for q in asked]
    )
    return {
        "floor": per_second(lambda: health.Check(check), calls),
        "Ingest": per_second(lambda: stub.Ingest(ingest), calls),
        "Retrieve": per_second(lambda: stub.Retrieve(retrieve), calls),
        "IngestBatch": per_second(lambda: stub.IngestBatch(batch), batches) * BATCH_SIZE,
        "floor x": in_flight(lambda: health.Check.future(check), calls, IN_FLIGHT),
        "natural": per_second(lambda: stub.Retrieve(next(requests)), calls),
        "natural x": in_flight(lambda: stub.Retrieve.future(next(requests)), calls, IN_FLIGHT),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--calls", type=int, default=CALLS, help="unary calls per measurement")
    parser.add_argument("--locomo", default=os.environ.get("HIMGA_LOCOMO_PATH", DEFAULT_LOCOMO))
    args = parser.parse_args()

    asked = questions(args.locomo, 200)
    with tempfile.TemporaryDirectory() as data_dir:
        command = [sys.executable, "-m", "himga", "serve", "--memory", "null", "--port", "0"]
        server, target = start_listening([*command, "--data-dir", data_dir])
        try:
            with grpc.insecure_channel(target) as channel:
                load_natural(channel, args.locomo)
                measure(channel, WARM_UP, asked)
                runs = [measure(channel, args.calls, asked) for _ in range(args.runs)]
        finally:
            server.terminate()
            server.wait()

    def row(label: str, unit: str, values: list[float], ratios: list[float], target: str) -> None:
        low, mid, high = min(values), statistics.median(values), max(values)
        r_low, r_mid, r_high = min(ratios), statistics.median(ratios), max(ratios)
        print(
            f"{label:<12} {low:>10,.0f} {mid:>10,.0f} {high:>10,.0f} {unit:<7}"
            f"  ratio {r_low:6.2f} {r_mid:6.2f} {r_high:6.2f}  {target}"
        )

    print(f"memory service over gRPC, {args.runs} runs, {args.calls} calls a measurement")
    print("NullMemory, calls one at a time:")
    print(
        f"(IngestBatch: batches of {BATCH_SIZE} distinct messages in sessions of {SESSION_TURNS}),"
        f" server `himga serve` at {target}"
    )
    print(f"{'':<12} {'min':>10} {'median':>10} {'max':>10} {'':<7}  ratio    min    med    max")
    floor = [r["floor"] for r in runs]
    row("floor", "calls/s", floor, [1.0] * len(runs), "(health Check: the same stack, no work)")
    for name in ("Ingest", "Retrieve"):
        values = [r[name] for r in runs]
        ratios = [r[name] / r["floor"] for r in runs]
        row(name, "calls/s", values, ratios, "to the floor; target >= 0.70")
    batch = [r["IngestBatch"] for r in runs]
    row(
        "IngestBatch",
        "msgs/s",
        batch,
        [r["IngestBatch"] / r["Ingest"] for r in runs],
        "to unary Ingest msgs/s; target >= 20",
    )
    print(
        f"Retrieve on {NATURAL_TURNS:,} turns of natural text (SQLite), the LoCoMo questions; "
        f"x{IN_FLIGHT}: {IN_FLIGHT} calls in flight at once"
    )
    floor_x = [r["floor x"] for r in runs]
    row(
        f"floor x{IN_FLIGHT}",
        "calls/s",
        floor_x,
        [r["floor x"] / r["floor"] for r in runs],
        "to the floor",
    )
    natural = [r["natural"] for r in runs]
    row(
        "Retrieve",
        "calls/s",
        natural,
        [r["natural"] / r["floor"] for r in runs],
        "to the floor; target >= 0.50",
    )
    natural_x = [r["natural x"] for r in runs]
    ratios = [r["natural x"] / r["natural"] for r in runs]
    row(
        f"Retrieve x{IN_FLIGHT}",
        "calls/s",
        natural_x,
        ratios,
        "to Retrieve one at a time; target > 1",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
