"""Bounded resources: idle namespaces are closed beyond the bound and reopen transparently; a
read or reset of a namespace that does not exist creates nothing; few descriptors close idle
stores to make room; a Retrieve or SearchEpisodes answer over the message limit is cut to fit,
a ListMessages or ListEpisodes page holds fewer items and goes on after its last, and an item
that alone is over the limit is refused naming it, on gRPC and HTTP alike."""

import os
import resource
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.service import convert, create_server
from himga.service.errors import reason_of
from himga.storage.namespaces import MAX_OPEN
from tests.episodes.helpers import episode
from tests.http.connect_stub import ConnectStub
from tests.service.conftest import ingest_request

HANG_SECONDS = 60


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_idle_namespaces_beyond_the_bound_are_closed_and_reopen(tmp_path: Path) -> None:
    server, port = create_server(
        "127.0.0.1:0", memory="sqlite", data_dir=tmp_path, max_open_namespaces=3
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.Ingest(ingest_request("warm-up", "x"))
            before = descriptors()
            for number in range(20):
                stub.Ingest(ingest_request(f"ns-{number}", f"word{number} said"))
                assert len(server.namespaces) <= 3
            # Three namespaces of about 3 descriptors each, not twenty.
            assert descriptors() - before <= 3 * 3
            for number in range(20):
                response = stub.Retrieve(
                    pb.RetrieveRequest(namespace=f"ns-{number}", query=f"word{number}")
                )
                assert [hit.content for hit in response.hits] == [f"word{number} said"]
    finally:
        server.stop(None).wait()


def test_a_server_started_with_no_bound_named_has_the_served_one(tmp_path: Path) -> None:
    """A server started from code, as one from `himga serve`, keeps at most MAX_OPEN
    namespaces open, not every one it ever served."""
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(MAX_OPEN + 5):
                stub.Ingest(ingest_request(f"many-{number}", "x"))
            assert len(server.namespaces) == MAX_OPEN
    finally:
        server.stop(None).wait()


def test_in_process_memories_are_never_closed_for_the_bound(tmp_path: Path) -> None:
    server, port = create_server("127.0.0.1:0", memory="keyword", max_open_namespaces=2)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(5):
                stub.Ingest(ingest_request(f"kept-{number}", f"fig{number}"))
            for number in range(5):
                response = stub.Retrieve(
                    pb.RetrieveRequest(namespace=f"kept-{number}", query=f"fig{number}")
                )
                assert len(response.hits) == 1
    finally:
        server.stop(None).wait()


def test_reading_or_resetting_a_namespace_that_does_not_exist_creates_nothing(
    tmp_path: Path,
) -> None:
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(5):
                answer = stub.Retrieve(pb.RetrieveRequest(namespace=f"never-{number}", query="x"))
                assert answer.context == "" and not answer.hits
                stub.Reset(pb.ResetRequest(namespace=f"never-{number}"))
            assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
            assert len(server.namespaces) == 0
    finally:
        server.stop(None).wait()


DESCRIPTOR_LIMIT = 96
"""RLIMIT_NOFILE of the servers below: room for gRPC and a handful of namespaces."""


def serve_with_few_descriptors(data_dir: Path, max_open: int) -> tuple[subprocess.Popen[str], str]:
    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))

    command = [
        sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "sqlite",
        "--data-dir", str(data_dir), "--max-open-namespaces", str(max_open),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, preexec_fn=few_descriptors
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "listening on" in line:
            return process, line.rsplit("listening on ", 1)[1].split()[0]
    process.wait()
    raise AssertionError("the server did not start")


def test_few_descriptors_close_idle_stores_to_make_room(tmp_path: Path) -> None:
    """No bound worth the name, and fewer descriptors than the namespaces need: the least
    recently used stores are closed to make room, so every write lands, health stays SERVING,
    and every namespace answers (opened again)."""
    process, target = serve_with_few_descriptors(tmp_path, max_open=100_000)
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(DESCRIPTOR_LIMIT):
                stub.Ingest(ingest_request(f"many-{number}", "plum"), timeout=HANG_SECONDS)
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            for number in range(DESCRIPTOR_LIMIT):
                request = pb.RetrieveRequest(namespace=f"many-{number}", query="plum")
                hits = stub.Retrieve(request, timeout=HANG_SECONDS).hits
                assert [hit.content for hit in hits] == ["plum"]
        with grpc.insecure_channel(target) as fresh:  # a new connection is accepted
            answer = health_pb2_grpc.HealthStub(fresh).Check(
                health_pb2.HealthCheckRequest(), timeout=HANG_SECONDS
            )
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        process.kill()
        process.wait()


def test_a_bounded_server_does_not_run_out_of_descriptors(tmp_path: Path) -> None:
    process, target = serve_with_few_descriptors(tmp_path, max_open=8)
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(DESCRIPTOR_LIMIT):
                stub.Ingest(ingest_request(f"many-{number}", "x"), timeout=HANG_SECONDS)
    finally:
        process.kill()
        process.wait()


def test_a_retrieve_over_the_message_limit_is_cut_to_fit() -> None:
    limit = 64 * 1024
    server, port = create_server("127.0.0.1:0", memory="keyword", max_message_bytes=limit)
    try:
        options = [("grpc.max_receive_message_length", limit)]
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(30):
                stub.Ingest(ingest_request("big", f"plum {number} " + "x" * 8000))
            answer = stub.Retrieve(pb.RetrieveRequest(namespace="big", query="plum", limit=30))
        assert 0 < len(answer.hits) < 30
        assert answer.ByteSize() <= limit
        assert answer.context
    finally:
        server.stop(None).wait()


LIMIT = 64 * 1024
"""The message limit of the small-answers server: a page of 30 items of 8 KB is far over it."""


class SmallAnswers:
    """A server whose message limit is LIMIT, reached by gRPC (a client that takes no more than
    LIMIT either) and by HTTP (Connect JSON), each as a pair of generated-stub-like objects."""

    def __init__(self, target: str, http: str) -> None:
        options = [("grpc.max_receive_message_length", LIMIT)]
        self.channel = grpc.insecure_channel(target, options=options)
        self.memory: dict[str, Any] = {
            "grpc": memory_pb2_grpc.MemoryServiceStub(self.channel),
            "http": ConnectStub(http, "MemoryService"),
        }
        self.episodes: dict[str, Any] = {
            "grpc": memory_pb2_grpc.EpisodeServiceStub(self.channel),
            "http": ConnectStub(http, "EpisodeService"),
        }


@pytest.fixture(scope="module")
def small_answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmallAnswers]:
    server, port = create_server(
        "127.0.0.1:0",
        memory="sqlite",
        data_dir=tmp_path_factory.mktemp("small-answers"),
        max_message_bytes=LIMIT,
        http_address=("127.0.0.1", 0),
    )
    served = SmallAnswers(f"127.0.0.1:{port}", f"http://127.0.0.1:{server.http_port}")
    try:
        yield served
    finally:
        served.channel.close()
        server.stop(None).wait()


def store_messages(served: SmallAnswers, namespace: str, sizes: list[int]) -> list[str]:
    """Messages `m00`, `m01`, ... of `sizes` characters each, stored in that order: their ids."""
    ids = [f"m{number:02d}" for number in range(len(sizes))]
    for turn_id, size in zip(ids, sizes, strict=True):
        message = pb.Message(role="Ada", content="x" * size, turn_id=turn_id)
        served.memory["grpc"].Ingest(ingest_request(namespace, "", message=message))
    return ids


def store_episodes(served: SmallAnswers, namespace: str, sizes: list[int]) -> list[str]:
    """Episodes of about `sizes` bytes each, recorded in that order: their ids, newest first
    (ListEpisodes' order)."""
    ids = []
    for number, size in enumerate(sizes):
        made = convert.episode_to_proto(episode(number))
        made.context.goal = "x" * max(1, size - made.ByteSize())
        request = pb.RecordEpisodeRequest(namespace=namespace, episode=made)
        served.episodes["grpc"].RecordEpisode(request)
        ids.append(made.id)
    return ids[::-1]


def message_pages(served: SmallAnswers, door: str, namespace: str) -> Iterator[list[str]]:
    """The ids of each ListMessages page of a walk through the namespace, 1000 a page asked."""
    token = ""
    while True:
        request = pb.ListMessagesRequest(namespace=namespace, page_size=1000, page_token=token)
        page = served.memory[door].ListMessages(request)
        assert page.ByteSize() <= LIMIT
        yield [stored.message.turn_id for stored in page.messages]
        token = page.next_page_token
        if not token:
            return


def episode_pages(served: SmallAnswers, door: str, namespace: str) -> Iterator[list[str]]:
    """The ids of each ListEpisodes page of a walk through the namespace, 1000 a page asked."""
    token = ""
    while True:
        request = pb.ListEpisodesRequest(namespace=namespace, page_size=1000, page_token=token)
        page = served.episodes[door].ListEpisodes(request)
        assert page.ByteSize() <= LIMIT
        yield [stored.id for stored in page.episodes]
        token = page.next_page_token
        if not token:
            return


LISTINGS: dict[str, tuple[Callable[..., list[str]], Callable[..., Iterator[list[str]]]]] = {
    "ListMessages": (store_messages, message_pages),
    "ListEpisodes": (store_episodes, episode_pages),
}


@pytest.mark.parametrize("door", ["grpc", "http"])
@pytest.mark.parametrize("listing", LISTINGS)
def test_a_page_over_the_message_limit_holds_fewer_items_and_goes_on_after_its_last(
    small_answers: SmallAnswers, listing: str, door: str
) -> None:
    store, pages = LISTINGS[listing]
    namespace = f"pages-{uuid.uuid4().hex}"
    ids = store(small_answers, namespace, [8000] * 30)
    walked = list(pages(small_answers, door, namespace))
    assert len(walked) > 1 and all(walked)
    assert [item for page in walked for item in page] == ids  # nothing skipped or repeated


@pytest.mark.parametrize("door", ["grpc", "http"])
@pytest.mark.parametrize("listing", LISTINGS)
def test_an_item_alone_over_the_message_limit_is_refused_naming_it_and_what_to_do(
    small_answers: SmallAnswers, listing: str, door: str
) -> None:
    store, pages = LISTINGS[listing]
    namespace = f"too-large-{uuid.uuid4().hex}"
    # The middle one fits a request but not an answer: it is listed with what goes with it.
    first, too_large, _ = store(small_answers, namespace, [100, LIMIT - 600, 100])
    walk = pages(small_answers, door, namespace)
    assert next(walk) == [first]
    with pytest.raises(grpc.RpcError) as caught:
        next(walk)
    error = caught.value
    assert isinstance(error, grpc.Call)
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(error) == "UNSUPPORTED"
    said = error.details() or ""
    assert repr(too_large) in said and f"more than one {listing} answer may hold" in said
    assert "delete it" in said


@pytest.mark.parametrize("door", ["grpc", "http"])
def test_episodes_over_the_message_limit_are_cut_from_a_search_and_refused_by_get(
    small_answers: SmallAnswers, door: str
) -> None:
    namespace = f"search-{uuid.uuid4().hex}"
    oldest_first = store_episodes(small_answers, namespace, [LIMIT - 600, *[8000] * 12])[::-1]
    too_large, fitting = oldest_first[0], oldest_first[1]
    stub = small_answers.episodes[door]
    task = pb.TaskContext(goal="Add pagination to the orders API")
    found = stub.SearchEpisodes(pb.SearchEpisodesRequest(namespace=namespace, task=task, limit=20))
    assert 0 < len(found.hits) < 13 and found.ByteSize() <= LIMIT and found.context
    assert stub.GetEpisode(pb.GetEpisodeRequest(namespace=namespace, id=fitting)).episode.id
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetEpisode(pb.GetEpisodeRequest(namespace=namespace, id=too_large))
    assert isinstance(caught.value, grpc.Call)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert repr(too_large) in (caught.value.details() or "")
