"""`make bench-service`: the memory service's own cost over gRPC's, measured in one run.

Starts `himga serve --memory null` as a separate process on 127.0.0.1 (so the client and the
server do not share an interpreter), then, over one channel with the generated stub, times
sequential unary calls: the floor (a health Check: the same server stack doing no work),
Ingest and Retrieve; and IngestBatch in messages per second. Each of RUNS runs measures all of
them in turn; the table gives min / median / max over the runs, each ratio taken within a run.
Targets: Ingest and Retrieve at least 0.70 of the floor's calls/s; IngestBatch at least 20x
the messages/s of unary Ingest.
"""

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from tests.server_process import start_listening

RUNS = 5
CALLS = 2000
BATCH_SIZE = 500
SESSION_TURNS = 25
WARM_UP = 200

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


def measure(channel: grpc.Channel, calls: int) -> dict[str, float]:
    """One run: the floor, Ingest and Retrieve in calls/s; IngestBatch in messages/s."""
    health = health_pb2_grpc.HealthStub(channel)
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    check = health_pb2.HealthCheckRequest()
    ingest = pb.IngestRequest(namespace="bench", message=MESSAGE, session=SESSION)
    retrieve = pb.RetrieveRequest(namespace="bench", query="What did Caroline do yesterday?")
    batch = pb.IngestBatchRequest(namespace="bench", items=conversation(BATCH_SIZE))
    batches = max(1, calls // 100)
    return {
        "floor": per_second(lambda: health.Check(check), calls),
        "Ingest": per_second(lambda: stub.Ingest(ingest), calls),
        "Retrieve": per_second(lambda: stub.Retrieve(retrieve), calls),
        "IngestBatch": per_second(lambda: stub.IngestBatch(batch), batches) * BATCH_SIZE,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--calls", type=int, default=CALLS, help="unary calls per measurement")
    args = parser.parse_args()

    server, target = start_listening(
        [sys.executable, "-m", "himga", "serve", "--memory", "null", "--port", "0"]
    )
    try:
        with grpc.insecure_channel(target) as channel:
            measure(channel, WARM_UP)
            runs = [measure(channel, args.calls) for _ in range(args.runs)]
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

    print(f"memory service over gRPC, NullMemory, {args.runs} runs, {args.calls} sequential calls")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
