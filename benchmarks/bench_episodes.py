"""`make bench-episodes`: EpisodeService's speed, each figure beside a baseline of the same run.

1. SearchEpisodes at EPISODES stored episodes (100k; HIMGA_BENCH_EPISODES to change), over
   gRPC to `himga serve` (its SQLite store), median and p99 over the generated set's queries,
   against the Loki Mode way, reimplemented here: episodes kept as JSON files in date folders,
   and each query reads, parses and scores every one of them (himga.eval.episode_baselines'
   rules, without the 2,000-file cap, so that it finds what the index finds). Target: at least
   100x faster at the median.
2. RecordEpisode one by one and RecordEpisodes in batches of BATCH, in episodes per second,
   beside Ingest and IngestBatch of messages holding the same bytes (each message's content is
   one episode's JSON), to fresh namespaces of the same server.

Each of RUNS runs measures everything in turn; the tables give min / median / max over the runs,
each ratio taken within its run.
"""

import functools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.episodes import SQLiteEpisodes
from himga.eval.episode_sets import EpisodeSet, generate
from himga.records import EpisodeTrace, TaskContext
from himga.service import convert
from himga.storage.layout import namespace_file
from himga.timeutil import parse_utc_datetime
from tests.server_process import start_listening

RUNS = 3
EPISODES = int(os.environ.get("HIMGA_BENCH_EPISODES", "100000"))
SCANS = 3
LIMIT = 5
ONE_BY_ONE = 500
BULK = 10_000
BATCH = 500
NAMESPACE = "bench-episodes"


def stats(values: Sequence[float]) -> tuple[float, float, float]:
    return min(values), statistics.median(values), max(values)


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def prepare(data_dir: Path, scan_dir: Path) -> EpisodeSet:
    """The episode set, stored in the namespace's SQLite database and as JSON files."""
    started = time.perf_counter()
    episode_set = generate(seed=3, topics=max(1, round(EPISODES / 2.27)), queries=200)
    episodes = episode_set.episodes[:EPISODES]
    documents = [e.to_dict() for e in episodes]
    path = namespace_file(data_dir, "episodes", NAMESPACE, ".sqlite3")
    with SQLiteEpisodes(path) as store:
        for first in range(0, len(documents), 5000):
            store.record_documents(documents[first : first + 5000])
    for document in documents:
        folder = scan_dir / document["timestamp"][:10]
        folder.mkdir(exist_ok=True)
        (folder / f"{document['id']}.json").write_text(json.dumps(document), encoding="utf-8")
    took = time.perf_counter() - started
    print(f"prepared {len(documents)} episodes in {took:.0f} s", file=sys.stderr)
    return EpisodeSet(episode_set.seed, episodes, episode_set.queries)


def scan(scan_dir: Path, task: TaskContext, text: str) -> list[str]:
    """The Loki Mode way: read and parse every episode file, newest folder first, and score it
    by its rules (himga.eval.episode_baselines.LokiRules, here on the parsed JSON as it is)."""
    parts = [task.goal]
    if task.phase:
        parts.append(f"phase: {task.phase}")
    if task.files:
        parts.append(f"files: {', '.join(task.files[:3])}")
    keywords = [word.lower() for word in " ".join(parts).split()]
    scored = []
    newest = ""
    for folder in sorted(scan_dir.iterdir(), reverse=True):
        for file in folder.iterdir():
            episode = json.loads(file.read_bytes())
            context = episode["context"]
            goal, phase = context["goal"].lower(), context.get("phase", "").lower()
            base = sum(1.0 for k in keywords if k in goal) + sum(
                0.5 for k in keywords if k in phase
            )
            if base > 0:
                weight = 0.7 + 0.3 * episode.get("importance", 0.5)
                scored.append((base * weight, episode["timestamp"], episode["id"]))
            newest = max(newest, episode["timestamp"])
    now = parse_utc_datetime(newest) + timedelta(days=1)  # as LokiRules takes "now"
    boosted = []
    for score, when, episode_id in scored:
        age = (now - parse_utc_datetime(when)).total_seconds() / 86400
        boosted.append(
            (-score * (1 + 0.1 * (1 - age / 30)) if 0 <= age < 30 else -score, episode_id)
        )
    return [episode_id for _, episode_id in sorted(boosted)[:LIMIT]]


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def search_run(
    stub: memory_pb2_grpc.EpisodeServiceStub, episode_set: EpisodeSet, scan_dir: Path
) -> dict[str, float]:
    latencies = []
    for query in episode_set.queries:
        request = pb.SearchEpisodesRequest(
            namespace=NAMESPACE,
            task=convert.task_to_proto(query.task),
            query=query.text,
            limit=LIMIT,
        )
        latencies.append(timed(functools.partial(stub.SearchEpisodes, request)))
    scans = [
        timed(functools.partial(scan, scan_dir, q.task, q.text))
        for q in episode_set.queries[:SCANS]
    ]
    median = statistics.median(latencies)
    return {
        "search median ms": median * 1000,
        "search p99 ms": percentile(latencies, 0.99) * 1000,
        "scan median ms": statistics.median(scans) * 1000,
        "speed-up at the median (x)": statistics.median(scans) / median,
    }


def record_run(channel: grpc.Channel, episodes: list[EpisodeTrace], run: int) -> dict[str, float]:
    stub = memory_pb2_grpc.EpisodeServiceStub(channel)
    memory = memory_pb2_grpc.MemoryServiceStub(channel)
    protos = [convert.episode_to_proto(e) for e in episodes]
    texts = [json.dumps(e.to_dict()) for e in episodes]
    session = pb.Session(session_id="s1")
    items = [
        pb.IngestItem(message=pb.Message(role="agent", content=t), session=session) for t in texts
    ]
    one = protos[:ONE_BY_ONE]

    def record_each() -> None:
        for episode in one:
            stub.RecordEpisode(pb.RecordEpisodeRequest(namespace=f"rec-{run}", episode=episode))

    def record_bulk() -> None:
        for first in range(0, BULK, BATCH):
            batch = protos[first : first + BATCH]
            stub.RecordEpisodes(pb.RecordEpisodesRequest(namespace=f"bulk-{run}", episodes=batch))

    def ingest_each() -> None:
        for item in items[:ONE_BY_ONE]:
            memory.Ingest(
                pb.IngestRequest(namespace=f"msg-{run}", message=item.message, session=session)
            )

    def ingest_bulk() -> None:
        for first in range(0, BULK, BATCH):
            batch = items[first : first + BATCH]
            memory.IngestBatch(pb.IngestBatchRequest(namespace=f"msgb-{run}", items=batch))

    figures = {
        "RecordEpisode /s": ONE_BY_ONE / timed(record_each),
        "Ingest (same bytes) /s": ONE_BY_ONE / timed(ingest_each),
        "RecordEpisodes /s": BULK / timed(record_bulk),
        "IngestBatch (same bytes) /s": BULK / timed(ingest_bulk),
    }
    figures["RecordEpisode / Ingest"] = (
        figures["RecordEpisode /s"] / figures["Ingest (same bytes) /s"]
    )
    figures["RecordEpisodes / IngestBatch"] = (
        figures["RecordEpisodes /s"] / figures["IngestBatch (same bytes) /s"]
    )
    figures["RecordEpisodes / RecordEpisode"] = (
        figures["RecordEpisodes /s"] / figures["RecordEpisode /s"]
    )
    return figures


def table(title: str, runs: list[dict[str, float]]) -> str:
    lines = [title, f"{'':34}{'min':>12}{'median':>12}{'max':>12}"]
    for name in runs[0]:
        low, mid, high = stats([run[name] for run in runs])
        lines.append(f"{name:34}{low:12.1f}{mid:12.1f}{high:12.1f}")
    return "\n".join(lines)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="himga-bench-episodes-") as scratch:
        data_dir, scan_dir = Path(scratch) / "data", Path(scratch) / "scan"
        data_dir.mkdir()
        scan_dir.mkdir()
        episode_set = prepare(data_dir, scan_dir)
        command = [
            sys.executable,
            "-m",
            "himga",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
        ]
        process, target = start_listening(command)
        assert process.stderr is not None
        threading.Thread(target=process.stderr.read, daemon=True).start()
        try:
            with grpc.insecure_channel(
                target, options=[("grpc.max_send_message_length", 64 << 20)]
            ) as channel:
                stub = memory_pb2_grpc.EpisodeServiceStub(channel)
                opened = timed(
                    lambda: stub.ListEpisodes(
                        pb.ListEpisodesRequest(namespace=NAMESPACE, page_size=1)
                    )
                )
                print(f"the server opened the namespace in {opened:.1f} s", file=sys.stderr)
                extra = generate(seed=4, topics=round(BULK / 2.2), queries=1).episodes
                searches, records = [], []
                for run in range(RUNS):
                    searches.append(search_run(stub, episode_set, scan_dir))
                    records.append(record_run(channel, extra[:BULK], run))
        finally:
            process.terminate()
            process.wait()
    print(
        table(
            f"SearchEpisodes at {len(episode_set.episodes)} episodes "
            f"({len(episode_set.queries)} queries a run; the scan: {SCANS} a run)",
            searches,
        )
    )
    print()
    print(table(f"recording ({ONE_BY_ONE} one by one; {BULK} in batches of {BATCH})", records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
