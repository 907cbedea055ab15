"""A disk that fills: writes of both services fail with UNAVAILABLE (reason STORE_UNAVAILABLE),
storing nothing; health turns NOT_SERVING; every read of both services goes on answering
(GetEpisode and SearchEpisodes skip the access counts they cannot write, and count them), after
a restart on the full disk too, where health is NOT_SERVING from the start; when space returns,
health turns SERVING again and writes succeed. Nothing acknowledged is lost. The disk is a
small tmpfs the test mounts (the tests run as root)."""

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.episodes.indexed import skipped_access_counts
from himga.episodes.postgres import PostgresEpisodes
from himga.records import TaskContext
from himga.service import convert, create_server
from himga.service.metrics import Metrics
from himga.status import reason_of
from himga.storage.postgres import Database
from tests.episodes.helpers import episode

HANG_SECONDS = 60  # protection against a hang only
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB file system of its own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert mounted.returncode == 0, f"cannot mount a tmpfs (root needed): {mounted.stderr}"
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, name: str = "filler") -> Path:
    """Take every free byte of `disk` with one file; return it."""
    filler = disk / name
    with filler.open("wb") as file:
        try:
            while True:
                file.write(bytes(64 * 1024))
                file.flush()
        except OSError:
            pass
    return filler


def batch(number: int) -> pb.IngestBatchRequest:
    return pb.IngestBatchRequest(
        namespace="kept",
        items=[
            pb.IngestItem(
                message=pb.Message(role="u", content=f"apple{number} {i} " + "words " * 100),
                session=pb.Session(session_id="s"),
            )
            for i in range(20)
        ],
    )


def health(channel: grpc.Channel) -> int:
    status: int = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest()).status
    return status


def count(stub: memory_pb2_grpc.MemoryServiceStub, number: int) -> int:
    hits = stub.Retrieve(pb.RetrieveRequest(namespace="kept", query=f"apple{number}", limit=100))
    return sum(hit.content.startswith(f"apple{number} ") for hit in hits.hits)


def record_episodes(stub: memory_pb2_grpc.EpisodeServiceStub, first: int) -> None:
    stub.RecordEpisodes(
        pb.RecordEpisodesRequest(
            namespace="kept",
            episodes=[convert.episode_to_proto(episode(n)) for n in range(first, first + 5)],
        )
    )


def every_read_answers(channel: grpc.Channel, acknowledged: list[int], episodes: int) -> None:
    """Every read of both services answers, with all that was acknowledged."""
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    assert all(count(stub, n) == 20 for n in acknowledged)
    listed = stub.ListMessages(pb.ListMessagesRequest(namespace="kept", page_size=1000))
    assert len(listed.messages) == 20 * len(acknowledged)
    episode_stub = memory_pb2_grpc.EpisodeServiceStub(channel)
    got = episode_stub.GetEpisode(pb.GetEpisodeRequest(namespace="kept", id="ep-0001"))
    assert got.episode.id == "ep-0001"
    found = episode_stub.SearchEpisodes(
        pb.SearchEpisodesRequest(namespace="kept", task=pb.TaskContext(goal="add pagination"))
    )
    assert found.hits
    listing = episode_stub.ListEpisodes(pb.ListEpisodesRequest(namespace="kept", page_size=100))
    assert len(listing.episodes) == episodes


def skipped(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value("himga_episode_access_counts_skipped_total")
    assert value is not None
    return value


def test_a_full_disk_refuses_writes_honestly_and_recovers(small_disk: Path) -> None:
    data = small_disk / "data"
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=data)
    acknowledged = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.IngestBatch(batch(0))
            acknowledged.append(0)
            record_episodes(memory_pb2_grpc.EpisodeServiceStub(channel), 0)
            filler = fill(small_disk)
            refused = None
            for number in range(1, 200):
                try:
                    stub.IngestBatch(batch(number))
                    acknowledged.append(number)
                except grpc.RpcError as error:
                    refused = (number, error)
                    break
            assert refused is not None, "the disk never filled"
            number, error = refused
            assert error.code() == grpc.StatusCode.UNAVAILABLE, error
            assert reason_of(error) == "STORE_UNAVAILABLE"
            assert health(channel) == NOT_SERVING
            assert count(stub, number) == 0  # the refused batch stored nothing
            with pytest.raises(grpc.RpcError) as caught:
                record_episodes(memory_pb2_grpc.EpisodeServiceStub(channel), 100)
            assert reason_of(caught.value) == "STORE_UNAVAILABLE"
            every_read_answers(channel, acknowledged, 5)  # reads go on
    finally:
        server.stop(None).wait()

    # Restarted on the disk filled to the last byte: health says so before any write fails,
    # and every namespace opens and answers, by reading alone.
    more = fill(small_disk, "more")
    metrics = Metrics()
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=data, metrics=metrics)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            assert health(channel) == NOT_SERVING
            every_read_answers(channel, acknowledged, 5)
            assert skipped(metrics) > 0  # the access counts that could not be written
            with pytest.raises(grpc.RpcError) as caught:
                stub.IngestBatch(batch(1000))
            assert reason_of(caught.value) == "STORE_UNAVAILABLE"
            filler.unlink()  # space returns
            more.unlink()
            deadline = time.monotonic() + HANG_SECONDS
            while health(channel) != SERVING:
                assert time.monotonic() < deadline, "health never turned SERVING again"
                time.sleep(0.1)
            stub.IngestBatch(batch(1001))
            assert count(stub, 1001) == 20
            record_episodes(memory_pb2_grpc.EpisodeServiceStub(channel), 100)
            every_read_answers(channel, [*acknowledged, 1001], 10)
    finally:
        server.stop(None).wait()


def test_an_access_count_a_database_cannot_write_is_skipped(database: Database) -> None:
    """PostgreSQL refusing the count's UPDATE as a full disk does (SQLSTATE 53100, raised here
    by a trigger on this namespace's rows alone): GetEpisode and SearchEpisodes answer, and the
    counts are skipped and counted."""
    namespace = f"full-{uuid.uuid4().hex}"
    store = PostgresEpisodes(database, namespace)
    store.record_many([episode(1), episode(2)])
    function = f"himga_test_full_{uuid.uuid4().hex}"
    with database.transaction() as connection:
        connection.execute(
            f"""CREATE FUNCTION {function}() RETURNS trigger AS $$
            BEGIN
                IF NEW.namespace = (SELECT id FROM himga_namespaces WHERE name = '{namespace}') THEN
                    RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full';
                END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql"""
        )
        connection.execute(
            f"CREATE TRIGGER {function} BEFORE UPDATE ON himga_episodes "
            f"FOR EACH ROW EXECUTE FUNCTION {function}()"
        )
    try:
        before = skipped_access_counts()
        assert store.get("ep-0001").access_count == 0
        assert [hit.episode.id for hit in store.search(TaskContext(goal="pagination")).hits]
        assert skipped_access_counts() > before
        assert store.get("ep-0001").access_count == 0  # as stored: the count was not written
    finally:
        with database.transaction() as connection:
            connection.execute(f"DROP TRIGGER {function} ON himga_episodes")
            connection.execute(f"DROP FUNCTION {function}()")
    assert store.get("ep-0001").access_count == 1  # written again once the database can
