"""Random and mutated request bytes against every method of `himga serve`: no crash, no INTERNAL
(nor UNKNOWN), and a good call made every GOOD_EVERY inputs answers.

Inputs are random bytes, and valid requests of each method mutated: bits flipped, bytes
inserted, cut, repeated, spliced with another request. Every method of every service in
himga's protos is tried (methods without a seed here get random and spliced bytes), and
health's Check.
"""

import importlib
import pkgutil
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import himga_proto
from grpc_health.v1 import health_pb2
from himga_proto.memory.v1 import memory_pb2 as pb

from tests.soak.kill_rounds import serve

GOOD_EVERY = 50
CALL_SECONDS = 10.0

_ITEM = pb.IngestItem(
    message=pb.Message(role="Caroline", content="I went to a support group", turn_id="D1:3"),
    session=pb.Session(session_id="s1", date_str="1:56 pm on 8 May, 2023"),
)
SEEDS: dict[str, list[bytes]] = {
    "/himga.memory.v1.MemoryService/Ingest": [
        pb.IngestRequest(
            namespace="fuzz", message=_ITEM.message, session=_ITEM.session, request_id="r1"
        ).SerializeToString()
    ],
    "/himga.memory.v1.MemoryService/IngestBatch": [
        pb.IngestBatchRequest(namespace="fuzz", items=[_ITEM, _ITEM]).SerializeToString()
    ],
    "/himga.memory.v1.MemoryService/Retrieve": [
        pb.RetrieveRequest(namespace="fuzz", query="support group", limit=3).SerializeToString()
    ],
    "/himga.memory.v1.MemoryService/Reset": [
        pb.ResetRequest(namespace="fuzz-reset").SerializeToString()
    ],
    "/grpc.health.v1.Health/Check": [health_pb2.HealthCheckRequest().SerializeToString()],
}


def methods() -> list[str]:
    """Every unary method of himga's services, and health's Check."""
    found = ["/grpc.health.v1.Health/Check"]
    for info in pkgutil.walk_packages(himga_proto.__path__, "himga_proto."):
        if not info.name.endswith("_pb2"):
            continue
        module = importlib.import_module(info.name)
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                if not method.client_streaming and not method.server_streaming:
                    found.append(f"/{service.full_name}/{method.name}")
    return found


def mutate(chooser: random.Random, seeds: list[bytes]) -> bytes:
    """One input made from `seeds` (or from nothing)."""
    seed = bytearray(chooser.choice(seeds)) if seeds else bytearray()
    how = chooser.randrange(7)
    if how == 0 or not seed:
        return chooser.randbytes(chooser.randrange(0, 300))
    if how == 1:
        for _ in range(chooser.randrange(1, 8)):
            seed[chooser.randrange(len(seed))] ^= 1 << chooser.randrange(8)
    elif how == 2:
        at = chooser.randrange(len(seed) + 1)
        seed[at:at] = chooser.randbytes(chooser.randrange(1, 16))
    elif how == 3:
        return bytes(seed[: chooser.randrange(len(seed))])
    elif how == 4:
        seed = seed * chooser.randrange(2, 5)
    elif how == 5:
        other = chooser.choice([s for group in SEEDS.values() for s in group])
        seed = seed[: chooser.randrange(len(seed))] + bytearray(other)
    else:  # a varint of 10 bytes of 0xff: the longest, and out of range
        at = chooser.randrange(len(seed))
        seed[at:at] = b"\xff" * 10
    return bytes(seed)


@dataclass
class Report:
    inputs: int = 0
    good_calls: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def run(data_dir: Path, inputs: int, seed: int = 0, seconds: float | None = None) -> Report:
    """Send up to `inputs` inputs (and for at most `seconds`, when given) to a fresh server."""
    report = Report()
    chooser = random.Random(seed)
    targets = methods()
    process, target = serve(data_dir)
    end = time.monotonic() + seconds if seconds is not None else None
    try:
        with grpc.insecure_channel(target) as channel:
            calls: dict[str, Callable[..., bytes]] = {
                method: channel.unary_unary(method) for method in targets
            }
            good = pb.RetrieveRequest(namespace="fuzz", query="support").SerializeToString()
            for number in range(inputs):
                if end is not None and time.monotonic() > end:
                    break
                method = chooser.choice(targets)
                data = mutate(chooser, SEEDS.get(method, []))
                report.inputs += 1
                try:
                    calls[method](data, timeout=CALL_SECONDS)
                    report.statuses["OK"] += 1
                except grpc.RpcError as error:
                    code = error.code() if isinstance(error, grpc.Call) else None
                    name = code.name if code is not None else type(error).__name__
                    report.statuses[name] += 1
                    if name in ("INTERNAL", "UNKNOWN", "UNAVAILABLE"):
                        report.failures.append(f"{method} {data.hex()[:120]}: {name}: {error}")
                if number % GOOD_EVERY == 0:
                    try:
                        calls["/himga.memory.v1.MemoryService/Retrieve"](good, timeout=CALL_SECONDS)
                        report.good_calls += 1
                    except grpc.RpcError as error:
                        report.failures.append(f"a good call after input {number}: {error}")
                if process.poll() is not None:
                    report.failures.append(f"the server exited ({process.returncode})")
                    break
    finally:
        alive = process.poll() is None
        process.kill()
        process.wait()
    if not alive:
        report.failures.append("the server was not running at the end")
    return report
