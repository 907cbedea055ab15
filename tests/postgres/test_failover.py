"""When the database goes away: calls answer UNAVAILABLE (STORE_UNAVAILABLE), health turns
NOT_SERVING, and the servers recover by themselves once it is back; and failover: the primary
SIGKILLed under a steady write load, its synchronous standby promoted (this test plays the
failover manager), the servers reconnect by themselves and every acknowledged write is there,
once."""

import threading
import time
from collections import Counter
from collections.abc import Callable

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from himga.data import Message, Session
from himga.service import RemoteMemory
from himga.service.errors import StoreUnavailable
from tests import postgres_cluster
from tests.postgres.servers import listed, serving, several

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
RETRIED = (StoreUnavailable, grpc.RpcError)
"""What a client sends again, with the same request id: an answer lost or refused."""


def said(turn_id: str) -> tuple[Message, Session]:
    return Message(role="Ada", content=f"kayak {turn_id}", turn_id=turn_id), Session(
        session_id="s1"
    )


def health(target: str) -> int:
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        status: int = stub.Check(health_pb2.HealthCheckRequest(), timeout=5).status
        return status


def eventually(check: Callable[[], bool], seconds: float = 60.0) -> float:
    """Wait until `check()` holds; the seconds it took. AssertionError after `seconds`."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            if check():
                return time.monotonic() - start
        except RETRIED:
            pass
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s")


def test_an_unreachable_database_is_unavailable_and_recovers_by_itself() -> None:
    with postgres_cluster.primary(fsync=False) as database, serving(database.url) as server:
        memory = RemoteMemory(server.target, "outage", timeout=30)
        memory.store([said("before")])
        database.stop()
        try:
            memory.store([said("during")])
            raise AssertionError("a write to an unreachable database was acknowledged")
        except StoreUnavailable as error:
            assert "database is unavailable" in str(error)
        try:
            memory.search("kayak")
            raise AssertionError("a read of an unreachable database answered")
        except StoreUnavailable:
            pass
        assert health(server.target) == NOT_SERVING
        database.start()
        eventually(lambda: health(server.target) == SERVING)
        eventually(lambda: memory.store([said("after")]) == ["after"])
        assert sorted(hit.turn_id for hit in memory.search("kayak")) == ["after", "before"]
        memory.close()


def test_failover_under_load_loses_and_duplicates_nothing() -> None:
    with (
        postgres_cluster.primary() as primary,
        postgres_cluster.standby(primary) as standby,
        several(postgres_cluster.cluster_url(primary, standby), 2) as servers,
    ):
        acknowledged: dict[str, list[str]] = {}  # request id -> the ids its write answered
        failed: Counter[str] = Counter()
        times: list[float] = []  # when each write was acknowledged
        lock = threading.Lock()
        stop = threading.Event()

        def write(worker: int) -> None:
            memory = RemoteMemory(servers[worker % 2].target, "failover", timeout=15)
            try:
                number = 0
                while not stop.is_set():
                    request_id = f"w{worker}-{number}"
                    items = [said(f"{request_id}.{i}") for i in range(3)]
                    while True:  # a write once begun is sent until it is acknowledged
                        try:
                            ids = memory.store(items, request_id=request_id)
                            break
                        except RETRIED as error:
                            with lock:
                                failed[type(error).__name__] += 1
                            time.sleep(0.05)
                    with lock:
                        acknowledged[request_id] = ids
                        times.append(time.monotonic())
                    number += 1
            finally:
                memory.close()

        workers = [threading.Thread(target=write, args=(n,)) for n in range(6)]
        for worker in workers:
            worker.start()
        time.sleep(3)
        before = len(acknowledged)
        killed = time.monotonic()
        primary.kill()
        standby.promote()
        promoted = time.monotonic()
        eventually(lambda: any(t > promoted for t in times))
        resumed = min(t for t in times if t > promoted)
        time.sleep(3)
        stop.set()
        for worker in workers:
            worker.join(120)
        print(
            f"\nfailover: {before} writes acknowledged before the kill, {len(acknowledged)} in "
            f"all; failed calls during the switch: {sum(failed.values())} {dict(failed)}; "
            f"promoted {promoted - killed:.2f} s after the kill; the first write acknowledged "
            f"after the promotion {resumed - killed:.2f} s after the kill"
        )
        assert before > 0 and len(acknowledged) > before
        reader = RemoteMemory(servers[1].target, "failover", timeout=30)
        stored = listed(reader)
        reader.close()
        written = [id_ for ids in acknowledged.values() for id_ in ids]
        assert len(stored) == len(set(stored))  # nothing twice
        assert set(written) - set(stored) == set()  # nothing lost
        assert len(stored) == len(written)  # nothing that was not acknowledged
