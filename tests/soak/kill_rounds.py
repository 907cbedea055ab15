"""Kill rounds: clients write and read across many namespaces while `himga serve` is SIGKILLed
at random moments, messages and episodes alike; every write (IngestBatch, Delete,
RecordEpisodes, DeleteEpisode) carries a request_id and a write whose outcome the client never
learned is sent again, with the same id, in the next round. At the end the store must hold
exactly what was acknowledged (messages: since each namespace's last acknowledged Reset), less
what acknowledged deletes took: nothing lost, nothing twice, nothing reset or deleted back to
life; and a retried delete answers what its first sending deleted.

Each client owns its namespaces, so the calls to one namespace are in a known order.
"""

import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.records import ActionEntry, EpisodeTrace
from himga.service import convert
from himga.storage.layout import episodes_database, messages_database
from tests.server_process import start_listening

CALL_SECONDS = 10.0
"""The deadline of each call (protection against a hang; a killed server fails them at once)."""


@dataclass
class Namespace:
    """What the store must hold for one namespace, and the write not yet known to be done."""

    name: str
    expected: list[str] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    """The id the server gave each acknowledged message, by content."""
    deleted: set[str] = field(default_factory=set)
    """The content of every message an acknowledged Delete deleted."""
    episodes: set[str] = field(default_factory=set)
    """The ids of the episodes acknowledged recorded and not deleted since."""
    episodes_deleted: set[str] = field(default_factory=set)
    """The ids of the episodes an acknowledged DeleteEpisode deleted (never recorded again)."""
    pending: tuple[str, object] | None = None
    """("ingest" | "reset" | "delete" | "record" | "forget", request): the write not yet known
    to be done."""


@dataclass
class Tally:
    """What a run saw."""

    rounds: int = 0
    calls_acknowledged: int = 0
    messages_acknowledged: int = 0
    resets_acknowledged: int = 0
    deletes_acknowledged: int = 0
    messages_deleted: int = 0
    retried: int = 0
    stored_before_retry: int = 0
    """Retried writes that the killed server had stored without the client learning it: the
    retries that request_id keeps from being stored twice."""
    reads: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    resurrected: int = 0
    undeleted: int = 0
    """Messages an acknowledged Delete deleted, found stored."""
    episodes_acknowledged: int = 0
    episode_deletes_acknowledged: int = 0
    episode_reads: int = 0
    episodes_lost: int = 0
    episodes_undeleted: int = 0
    """Episodes an acknowledged DeleteEpisode deleted, found stored."""
    episodes_unexpected: int = 0
    """Episodes stored that no acknowledged write put there."""


class Stubs:
    """The stubs of both services over one channel."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.memory = memory_pb2_grpc.MemoryServiceStub(channel)
        self.episodes = memory_pb2_grpc.EpisodeServiceStub(channel)


def an_episode(episode_id: str, words: str) -> pb.EpisodeTrace:
    return convert.episode_to_proto(
        EpisodeTrace(
            id=episode_id,
            task_id=f"task-{episode_id}",
            timestamp="2026-01-01T00:00:00Z",
            agent="soak",
            goal=f"fix the {words}",
            action_log=[ActionEntry(tool="edit_file", input="a.py", output="ok", timestamp=0)],
        )
    )


class Client:
    """One client: its namespaces, its random choices, and its calls."""

    def __init__(self, number: int, namespaces: int, seed: int, tally: Tally) -> None:
        self.random = random.Random(seed + number)
        self.namespaces = [Namespace(f"soak-{number}-{n}") for n in range(namespaces)]
        self.number = number
        self.sequence = 0
        self.tally = tally
        self.lock = threading.Lock()

    def message(self) -> str:
        self.sequence += 1
        filler = " ".join(self.random.choices(["plum", "fig", "pear", "tea", "walk"], k=6))
        return f"m{self.number}x{self.sequence} {filler}"

    def work(self, stub: Stubs, stop: threading.Event) -> None:
        """Resolve pending writes first, then write, reset and read until the server dies."""
        try:
            self.resolve(stub)
            while not stop.is_set():
                self.step(stub)
        except grpc.RpcError:
            return  # the server is gone: the round is over for this client

    def step(self, stub: Stubs, resets: float = 0.03, deletes: float = 0.07) -> None:
        """One call to a namespace with no write pending: a Reset, a Delete, a read, episodes
        recorded, an episode deleted, or a batch."""
        namespace = self.random.choice([n for n in self.namespaces if n.pending is None])
        roll = self.random.random()
        if 0.25 <= roll < 0.40:
            ids = [f"ep-{self.number}-{self.sequence + n}" for n in range(1, 4)]
            self.sequence += len(ids)
            words = " ".join(self.random.choices(["plum", "fig", "pear", "tea", "walk"], k=3))
            episodes = pb.RecordEpisodesRequest(
                namespace=namespace.name,
                request_id=uuid.uuid4().hex,
                episodes=[an_episode(i, words) for i in ids[: self.random.choice([1, 3])]],
            )
            self.send(stub, namespace, "record", episodes)
        elif 0.40 <= roll < 0.40 + deletes and namespace.episodes:
            forget = pb.DeleteEpisodeRequest(
                namespace=namespace.name,
                id=self.random.choice(sorted(namespace.episodes)),
                request_id=uuid.uuid4().hex,
            )
            self.send(stub, namespace, "forget", forget)
        elif roll < resets:
            request: object = pb.ResetRequest(namespace=namespace.name)
            self.send(stub, namespace, "reset", request)
        elif roll < resets + deletes and namespace.expected:
            chosen = self.random.sample(namespace.expected, min(3, len(namespace.expected)))
            request = pb.DeleteRequest(
                namespace=namespace.name,
                ids=[namespace.ids[content] for content in chosen],
                request_id=uuid.uuid4().hex,
            )
            self.send(stub, namespace, "delete", request)
        elif roll < 0.25:
            self.read(stub, namespace)
        else:
            size = self.random.choice([1, 1, 3, 10, 50])
            request = pb.IngestBatchRequest(
                namespace=namespace.name,
                request_id=uuid.uuid4().hex,
                items=[
                    pb.IngestItem(
                        message=pb.Message(role="agent", content=self.message()),
                        session=pb.Session(session_id=f"s{self.sequence // 40}"),
                    )
                    for _ in range(size)
                ],
            )
            self.send(stub, namespace, "ingest", request)

    def send(self, stubs: Stubs, namespace: Namespace, kind: str, request: object) -> None:
        namespace.pending = (kind, request)
        stub = stubs.memory
        try:
            if kind == "record":
                assert isinstance(request, pb.RecordEpisodesRequest)
                recorded = stubs.episodes.RecordEpisodes(request, timeout=CALL_SECONDS)
                if recorded.recorded != len(request.episodes):
                    self.tally.unexpected.append(
                        f"{namespace.name}: recorded {recorded.recorded} of {len(request.episodes)}"
                    )
            elif kind == "forget":
                assert isinstance(request, pb.DeleteEpisodeRequest)
                if not stubs.episodes.DeleteEpisode(request, timeout=CALL_SECONDS).deleted:
                    self.tally.unexpected.append(f"{namespace.name}: {request.id} not deleted")
            elif kind == "reset":
                stub.Reset(request, timeout=CALL_SECONDS)
            elif kind == "delete":
                assert isinstance(request, pb.DeleteRequest)
                answer = stub.Delete(request, timeout=CALL_SECONDS)
                if answer.deleted != len(request.ids):  # a retry answers as the first did
                    self.tally.unexpected.append(
                        f"{namespace.name}: deleted {answer.deleted} of {len(request.ids)}"
                    )
            else:
                response = stub.IngestBatch(request, timeout=CALL_SECONDS)
                assert isinstance(request, pb.IngestBatchRequest)
                if response.ingested != len(request.items):
                    self.tally.unexpected.append(
                        f"{namespace.name}: ingested {response.ingested} of {len(request.items)}"
                    )
        except grpc.RpcError as error:
            self.seen(error)
            raise
        self.tally.statuses["OK"] += 1
        namespace.pending = None
        self.tally.calls_acknowledged += 1
        if kind == "record":
            assert isinstance(request, pb.RecordEpisodesRequest)
            namespace.episodes |= {episode.id for episode in request.episodes}
            self.tally.episodes_acknowledged += len(request.episodes)
        elif kind == "forget":
            assert isinstance(request, pb.DeleteEpisodeRequest)
            namespace.episodes.discard(request.id)
            namespace.episodes_deleted.add(request.id)
            self.tally.episode_deletes_acknowledged += 1
        elif kind == "reset":
            namespace.expected.clear()
            namespace.ids.clear()
            self.tally.resets_acknowledged += 1
        elif kind == "delete":
            assert isinstance(request, pb.DeleteRequest)
            gone = {content for content, id_ in namespace.ids.items() if id_ in request.ids}
            namespace.expected = [c for c in namespace.expected if c not in gone]
            namespace.deleted |= gone
            self.tally.deletes_acknowledged += 1
            self.tally.messages_deleted += len(gone)
        else:
            assert isinstance(request, pb.IngestBatchRequest)
            contents = [item.message.content for item in request.items]
            namespace.expected.extend(contents)
            namespace.ids.update(zip(contents, response.ids, strict=True))
            self.tally.messages_acknowledged += len(request.items)

    def read(self, stubs: Stubs, namespace: Namespace) -> None:
        """A Retrieve, and an episode read: a search, a listing, or a get of a kept one."""
        try:
            stubs.memory.Retrieve(
                pb.RetrieveRequest(namespace=namespace.name, query="plum fig", limit=5),
                timeout=CALL_SECONDS,
            )
            self.tally.statuses["OK"] += 1
            self.tally.reads += 1
            roll = self.random.random()
            if roll < 0.4:
                stubs.episodes.SearchEpisodes(
                    pb.SearchEpisodesRequest(
                        namespace=namespace.name, task=pb.TaskContext(goal="fix the plum")
                    ),
                    timeout=CALL_SECONDS,
                )
            elif roll < 0.7 or not namespace.episodes:
                stubs.episodes.ListEpisodes(
                    pb.ListEpisodesRequest(namespace=namespace.name), timeout=CALL_SECONDS
                )
            else:
                wanted = self.random.choice(sorted(namespace.episodes))
                got = stubs.episodes.GetEpisode(
                    pb.GetEpisodeRequest(namespace=namespace.name, id=wanted),
                    timeout=CALL_SECONDS,
                )
                if got.episode.id != wanted:
                    self.tally.unexpected.append(f"{namespace.name}: got {got.episode.id}")
            self.tally.statuses["OK"] += 1
            self.tally.episode_reads += 1
        except grpc.RpcError as error:
            self.seen(error)
            raise

    def resolve(self, stub: Stubs) -> None:
        """Send every pending write again, with its request id (RpcError if one fails)."""
        for namespace in self.namespaces:
            if namespace.pending is not None:
                self.tally.retried += 1
                self.send(stub, namespace, *namespace.pending)

    def seen(self, error: grpc.RpcError) -> None:
        code = error.code() if isinstance(error, grpc.Call) else None
        name = code.name if code is not None else type(error).__name__
        self.tally.statuses[name] += 1
        # A killed server fails calls with UNAVAILABLE (or, mid-call, CANCELLED / a deadline).
        if name not in ("UNAVAILABLE", "CANCELLED", "DEADLINE_EXCEEDED"):
            details = error.details() if isinstance(error, grpc.Call) else str(error)
            self.tally.unexpected.append(f"{name}: {details}")


def serve(
    data_dir: Path,
    *options: str,
    log: Path | None = None,
    prefix: Sequence[str] = (),
    max_open: int = 16,
) -> tuple[subprocess.Popen[str], str]:
    """`himga serve` on `data_dir` (run under the command `prefix`, if given: `prlimit ...`),
    its log drained (into `log`, by default `server.log` beside `data_dir`) so that a full pipe
    never blocks it."""
    process, target = start_listening(
        [
            *prefix, sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "sqlite",
            "--data-dir", str(data_dir), "--max-open-namespaces", str(max_open), *options,
        ]
    )  # fmt: skip
    assert process.stderr is not None
    threading.Thread(
        target=_drain, args=(process.stderr, log or data_dir.parent / "server.log"), daemon=True
    ).start()
    return process, target


def _drain(stream: IO[str], log: Path) -> None:
    with log.open("a", encoding="utf-8") as file:
        for line in stream:
            file.write(line)
            file.flush()


def run(
    data_dir: Path,
    rounds: int,
    clients: int = 4,
    namespaces: int = 10,
    round_seconds: tuple[float, float] = (0.3, 2.0),
    seed: int = 0,
) -> Tally:
    """`rounds` rounds of writes and reads, each ended by SIGKILL after a random time within
    `round_seconds`; then a check of the store against what was acknowledged."""
    tally = Tally()
    chooser = random.Random(seed)
    team = [Client(n, namespaces, seed, tally) for n in range(clients)]
    for _ in range(rounds):
        count_stored_pending(data_dir, team, tally)
        process, target = serve(data_dir)
        stop = threading.Event()
        try:
            with grpc.insecure_channel(target) as channel:
                stub = Stubs(channel)
                threads = [
                    threading.Thread(target=client.work, args=(stub, stop)) for client in team
                ]
                for thread in threads:
                    thread.start()
                time.sleep(chooser.uniform(*round_seconds))
                process.send_signal(signal.SIGKILL)
                process.wait()
                stop.set()
                for thread in threads:
                    thread.join()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        tally.rounds += 1
    # A last round resolves every write still pending, then the server stops cleanly.
    count_stored_pending(data_dir, team, tally)
    process, target = serve(data_dir)
    try:
        with grpc.insecure_channel(target) as channel:
            stub = Stubs(channel)
            stopped = threading.Event()
            stopped.set()
            for client in team:
                client.work(stub, stopped)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait()
    for client in team:
        for namespace in client.namespaces:
            if namespace.pending is not None:
                tally.unexpected.append(f"{namespace.name}: a write is still pending")
            check(data_dir, namespace, tally)
    return tally


def count_stored_pending(data_dir: Path, team: list[Client], tally: Tally) -> None:
    """Count the pending batches and episodes already in the store (read while no server
    runs)."""
    for client in team:
        for namespace in client.namespaces:
            if namespace.pending is None:
                continue
            kind, request = namespace.pending
            if kind == "ingest":
                assert isinstance(request, pb.IngestBatchRequest)
                content = request.items[0].message.content
                tally.stored_before_retry += content in stored_contents(data_dir, namespace.name)
            elif kind == "record":
                assert isinstance(request, pb.RecordEpisodesRequest)
                episode_id = request.episodes[0].id
                tally.stored_before_retry += episode_id in stored_episodes(data_dir, namespace.name)


def stored_contents(data_dir: Path, namespace: str) -> Counter[str]:
    """The content of every message the namespace's store holds, with how often."""
    path = messages_database(data_dir, namespace)
    stored: Counter[str] = Counter()
    if path.exists():
        # Read-write: no server runs now, and a database whose server was killed may need its
        # WAL index rebuilt, which a read-only connection cannot do.
        with sqlite3.connect(path) as db:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
            if "messages" in tables:  # a server killed as it made the file left it empty
                stored.update(c for (c,) in db.execute("SELECT content FROM messages"))
    return stored


def stored_episodes(data_dir: Path, namespace: str) -> set[str]:
    """The ids of the episodes the namespace's store holds."""
    path = episodes_database(data_dir, namespace)
    if not path.exists():
        return set()
    with sqlite3.connect(path) as db:  # read-write, as stored_contents says why
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        if "episodes" not in tables:  # a server killed as it made the file left it empty
            return set()
        return {episode_id for (episode_id,) in db.execute("SELECT id FROM episodes")}


def check(data_dir: Path, namespace: Namespace, tally: Tally) -> None:
    """Compare the namespace's store with what was acknowledged."""
    stored = stored_contents(data_dir, namespace.name)
    expected = Counter(namespace.expected)
    tally.lost += sum((expected - stored).values())
    tally.duplicated += sum(max(0, stored[c] - 1) for c in expected)
    tally.undeleted += sum(n for c, n in stored.items() if c in namespace.deleted)
    tally.resurrected += sum(
        n for c, n in stored.items() if c not in expected and c not in namespace.deleted
    )
    episodes = stored_episodes(data_dir, namespace.name)
    tally.episodes_lost += len(namespace.episodes - episodes)
    tally.episodes_undeleted += len(episodes & namespace.episodes_deleted)
    tally.episodes_unexpected += len(episodes - namespace.episodes - namespace.episodes_deleted)
