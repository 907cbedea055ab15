"""Few descriptors: `himga serve` under `prlimit --nofile=LIMIT` (far fewer than its namespaces'
SQLite files would take if all stayed open), and threads that each write a message and an
episode to namespaces of their own, with request ids, then read both back. Every call must be
answered OK or RESOURCE_EXHAUSTED (sent again until it is OK, the writes with their request
ids), never UNAVAILABLE or anything else; health must stay SERVING; a new connection must be
accepted at the end; and every acknowledged write must be there, once."""

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.records import ActionEntry, EpisodeTrace
from himga.service import convert
from himga.storage.namespaces import MAX_OPEN  # the descriptors run out long before it
from tests.soak.kill_rounds import serve

CALL_SECONDS = 30.0
"""The deadline of each call (protection against a hang)."""
TRIES = 200
"""How often a call answered RESOURCE_EXHAUSTED is sent again before the run gives up on it."""


@dataclass
class DescriptorReport:
    namespaces: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    not_serving_seen: int = 0
    accepted_at_end: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self, name: str, details: str = "") -> None:
        with self.lock:
            self.statuses[name] += 1
            if name not in ("OK", "RESOURCE_EXHAUSTED"):
                self.unexpected.append(f"{name}: {details}")


def an_episode(namespace: str) -> EpisodeTrace:
    return EpisodeTrace(
        id=f"ep-{namespace}",
        task_id=f"task-{namespace}",
        timestamp="2026-01-01T00:00:00Z",
        agent="soak",
        goal=f"keep {namespace} written",
        action_log=[ActionEntry(tool="edit_file", input="a.py", output="ok", timestamp=0)],
    )


def answered(report: DescriptorReport, call: Any, request: Any) -> Any:
    """`call(request)` once it is answered OK (sent again while RESOURCE_EXHAUSTED); None when
    it got anything else, or never got OK."""
    for _ in range(TRIES):
        try:
            response = call(request, timeout=CALL_SECONDS)
        except grpc.RpcError as error:
            assert isinstance(error, grpc.Call)
            report.seen(error.code().name, error.details() or "")
            if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                return None
            time.sleep(0.05)
            continue
        report.seen("OK")
        return response
    report.unexpected.append(f"still RESOURCE_EXHAUSTED after {TRIES} tries")
    return None


def work(target: str, names: list[str], report: DescriptorReport) -> None:
    try:
        calls(target, names, report)
    except Exception as error:  # a failure of the run itself (health unanswered, a bug here)
        with report.lock:
            report.unexpected.append(f"{type(error).__name__}: {error}")


def calls(target: str, names: list[str], report: DescriptorReport) -> None:
    with grpc.insecure_channel(target) as channel:
        memory = memory_pb2_grpc.MemoryServiceStub(channel)
        episodes = memory_pb2_grpc.EpisodeServiceStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        for name in names:
            content = f"plum kept by {name}"
            answered(
                report,
                memory.IngestBatch,
                pb.IngestBatchRequest(
                    namespace=name,
                    request_id=uuid.uuid4().hex,
                    items=[
                        pb.IngestItem(
                            message=pb.Message(role="agent", content=content),
                            session=pb.Session(session_id="s"),
                        )
                    ],
                ),
            )
            answered(
                report,
                episodes.RecordEpisode,
                pb.RecordEpisodeRequest(
                    namespace=name,
                    request_id=uuid.uuid4().hex,
                    episode=convert.episode_to_proto(an_episode(name)),
                ),
            )
        for name in names:  # read back, from stores closed meanwhile to make room
            listed = answered(report, memory.ListMessages, pb.ListMessagesRequest(namespace=name))
            if listed is not None:
                contents = [stored.message.content for stored in listed.messages]
                report.lost += f"plum kept by {name}" not in contents
                report.duplicated += max(0, len(contents) - 1)
            answered(report, memory.Retrieve, pb.RetrieveRequest(namespace=name, query="plum"))
            got = answered(
                report, episodes.GetEpisode, pb.GetEpisodeRequest(namespace=name, id=f"ep-{name}")
            )
            report.lost += got is None
            every = answered(report, episodes.ListEpisodes, pb.ListEpisodesRequest(namespace=name))
            if every is not None:
                report.duplicated += max(0, len(every.episodes) - 1)
            status = health.Check(health_pb2.HealthCheckRequest(), timeout=CALL_SECONDS).status
            if status != health_pb2.HealthCheckResponse.SERVING:
                with report.lock:
                    report.not_serving_seen += 1


def run(
    directory: Path, namespaces: int = 600, threads: int = 8, limit: int = 256
) -> DescriptorReport:
    """The run above, `namespaces` spread over `threads`, the server at `limit` descriptors."""
    report = DescriptorReport(namespaces=namespaces)
    names = [f"fd-{n}" for n in range(namespaces)]
    process, target = serve(
        directory / "data", prefix=["prlimit", f"--nofile={limit}"], max_open=MAX_OPEN
    )
    try:
        team = [
            threading.Thread(target=work, args=(target, names[n::threads], report))
            for n in range(threads)
        ]
        for thread in team:
            thread.start()
        for thread in team:
            thread.join()
        with grpc.insecure_channel(target) as fresh:  # a new connection, once the calls ended
            answer = health_pb2_grpc.HealthStub(fresh).Check(
                health_pb2.HealthCheckRequest(), timeout=CALL_SECONDS
            )
            hits = memory_pb2_grpc.MemoryServiceStub(fresh).Retrieve(
                pb.RetrieveRequest(namespace=names[0], query="plum"), timeout=CALL_SECONDS
            )
            report.accepted_at_end = (
                answer.status == health_pb2.HealthCheckResponse.SERVING and len(hits.hits) == 1
            )
    finally:
        process.terminate()
        process.wait()
    return report
