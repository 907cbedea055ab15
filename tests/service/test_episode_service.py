"""EpisodeService on the wire, through the generated stub: what a malformed request gets (and
that nothing of it is stored), NOT_FOUND with its reason, and the proto's defaults."""

import base64
import json
import math
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.episodes import paging
from himga.episodes.base import EpisodeFilter
from himga.service import convert
from himga.service.errors import field_violations, reason_of
from tests.conftest import HTTP_PORTS
from tests.episodes.helpers import episode
from tests.http.connect_stub import ConnectStub


@pytest.fixture(scope="module")
def stub(memory_server: str) -> Iterator[memory_pb2_grpc.EpisodeServiceStub]:
    with grpc.insecure_channel(memory_server) as channel:
        yield memory_pb2_grpc.EpisodeServiceStub(channel)


def fresh() -> str:
    return f"wire-{uuid.uuid4().hex}"


def refused(call: Callable[[], object]) -> tuple[grpc.StatusCode, str | None, list[str]]:
    """The code, ErrorInfo reason and violated fields of a call that must fail."""
    with pytest.raises(grpc.RpcError) as caught:
        call()
    error = caught.value
    assert isinstance(error, grpc.Call)
    return error.code(), reason_of(error), [v.field for v in field_violations(error)]


def proto_episode(number: int) -> pb.EpisodeTrace:
    return convert.episode_to_proto(episode(number))


def listed(stub: memory_pb2_grpc.EpisodeServiceStub, namespace: str) -> list[str]:
    answer = stub.ListEpisodes(pb.ListEpisodesRequest(namespace=namespace))
    return [e.id for e in answer.episodes]


def test_an_invalid_episode_names_each_field_and_is_not_stored(
    stub: memory_pb2_grpc.EpisodeServiceStub,
) -> None:
    namespace = fresh()
    bad = proto_episode(1)
    bad.context.goal = ""
    bad.agent = ""
    bad.duration_seconds = 1.5
    bad.context.phase = "DREAM"
    code, reason, fields = refused(
        lambda: stub.RecordEpisode(pb.RecordEpisodeRequest(namespace=namespace, episode=bad))
    )
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST")
    assert set(fields) == {
        "episode.agent",
        "episode.context.goal",
        "episode.context.phase",
        "episode.duration_seconds",
    }
    assert listed(stub, namespace) == []


def test_a_missing_episode_or_timestamp_is_named(stub: memory_pb2_grpc.EpisodeServiceStub) -> None:
    no_time = proto_episode(1)
    no_time.ClearField("timestamp")
    far = proto_episode(1)
    far.timestamp.seconds = 10**13  # beyond year 9999: no RFC 3339 form
    for request, field in (
        (pb.RecordEpisodeRequest(namespace=fresh(), episode=far), "episode.timestamp"),
        (pb.RecordEpisodeRequest(namespace=fresh()), "episode"),
        (pb.RecordEpisodeRequest(namespace=fresh(), episode=no_time), "episode.timestamp"),
        (pb.RecordEpisodeRequest(namespace="bad namespace", episode=proto_episode(1)), "namespace"),
    ):
        assert field in refused(lambda r=request: stub.RecordEpisode(r))[2]


def test_a_batch_with_one_bad_episode_stores_none(stub: memory_pb2_grpc.EpisodeServiceStub) -> None:
    namespace = fresh()
    episodes = [proto_episode(n) for n in range(3)]
    episodes[1].task_id = ""
    request = pb.RecordEpisodesRequest(namespace=namespace, episodes=episodes)
    assert refused(lambda: stub.RecordEpisodes(request))[2] == ["episodes[1].task_id"]
    assert listed(stub, namespace) == []
    del episodes[1]
    answer = stub.RecordEpisodes(pb.RecordEpisodesRequest(namespace=namespace, episodes=episodes))
    assert answer.recorded == 2
    assert listed(stub, namespace) == ["ep-0002", "ep-0000"]


@pytest.fixture(params=["grpc", "http"])
def door(
    request: pytest.FixtureRequest, stub: memory_pb2_grpc.EpisodeServiceStub, memory_server: str
) -> Any:
    """EpisodeService through the generated stub, or over the server's HTTP port (Connect
    JSON, where a double that is not finite is written "NaN", "Infinity" or "-Infinity")."""
    if request.param == "grpc":
        return stub
    return ConnectStub(HTTP_PORTS[memory_server], "EpisodeService")


def with_number(field: str, value: float) -> pb.EpisodeTrace:
    """A valid episode but for `field` (a double, `action_log[0].t` in its first action)."""
    made = proto_episode(1)
    held = made.action_log[0] if field.startswith("action_log[0].") else made
    setattr(held, field.removeprefix("action_log[0]."), value)
    return made


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=str)
@pytest.mark.parametrize(
    "field", ["importance", "duration_seconds", "tokens_used", "access_count", "action_log[0].t"]
)
def test_a_number_that_is_not_finite_is_named_and_nothing_of_its_batch_is_stored(
    door: Any, stub: memory_pb2_grpc.EpisodeServiceStub, field: str, value: float
) -> None:
    namespace = fresh()
    bad = with_number(field, value)
    for request, path in (
        (pb.RecordEpisodeRequest(namespace=namespace, episode=bad), "episode"),
        (
            pb.RecordEpisodesRequest(namespace=namespace, episodes=[proto_episode(2), bad]),
            "episodes[1]",
        ),
    ):
        method = door.RecordEpisode if path == "episode" else door.RecordEpisodes
        with pytest.raises(grpc.RpcError) as caught:
            method(request)
        error = caught.value
        assert isinstance(error, grpc.Call)
        assert (error.code(), reason_of(error)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        named = [(v.field, v.description) for v in field_violations(error)]
        assert named == [(f"{path}.{field}", "must be a finite number")]
    assert listed(stub, namespace) == []


def test_get_of_an_absent_id_is_not_found_with_its_reason(
    stub: memory_pb2_grpc.EpisodeServiceStub,
) -> None:
    request = pb.GetEpisodeRequest(namespace=fresh(), id="ep-none")
    code, reason, _ = refused(lambda: stub.GetEpisode(request))
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "NOT_FOUND")
    assert "id" in refused(lambda: stub.GetEpisode(pb.GetEpisodeRequest(namespace=fresh())))[2]


def test_the_round_trip_keeps_every_field(stub: memory_pb2_grpc.EpisodeServiceStub) -> None:
    namespace = fresh()
    sent = proto_episode(7)
    sent.git_commit = "abc123"
    stub.RecordEpisode(pb.RecordEpisodeRequest(namespace=namespace, episode=sent))
    got = stub.GetEpisode(pb.GetEpisodeRequest(namespace=namespace, id="ep-0007")).episode
    assert got.access_count == 1 and got.HasField("last_accessed")
    got.access_count = 0
    got.ClearField("last_accessed")
    assert got == sent


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (pb.ListEpisodesRequest(page_size=1001), "page_size"),
        (pb.ListEpisodesRequest(page_token="garbage"), "page_token"),
        (
            pb.ListEpisodesRequest(since=timestamp_pb2.Timestamp(seconds=10**13)),
            "since",
        ),
        (pb.SearchEpisodesRequest(task=pb.TaskContext(goal="g"), limit=101), "limit"),
        (pb.SearchEpisodesRequest(), "task"),
        (pb.SearchEpisodesRequest(task=pb.TaskContext(goal="")), "task.goal"),
        (pb.SearchEpisodesRequest(task=pb.TaskContext(goal="g", phase="NAP")), "task.phase"),
    ],
)
def test_malformed_list_and_search_requests_name_the_field(
    stub: memory_pb2_grpc.EpisodeServiceStub, request_: object, field: str
) -> None:
    request_.namespace = fresh()  # type: ignore[attr-defined]
    method = (
        stub.ListEpisodes if isinstance(request_, pb.ListEpisodesRequest) else stub.SearchEpisodes
    )
    code, _, fields = refused(lambda: method(request_))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in fields


def test_search_defaults_to_five_hits_and_keeps_its_budget(
    stub: memory_pb2_grpc.EpisodeServiceStub,
) -> None:
    namespace = fresh()
    episodes = [convert.episode_to_proto(episode(n, f"Tune the cache {n}")) for n in range(7)]
    stub.RecordEpisodes(pb.RecordEpisodesRequest(namespace=namespace, episodes=episodes))
    task = pb.TaskContext(goal="tune the cache")
    answer = stub.SearchEpisodes(pb.SearchEpisodesRequest(namespace=namespace, task=task))
    assert len(answer.hits) == 5
    assert 0 < len(answer.context) <= 1000 * 4
    small = stub.SearchEpisodes(
        pb.SearchEpisodesRequest(namespace=namespace, task=task, max_context_tokens=10)
    )
    assert 0 < len(small.context) <= 40


def test_a_batch_repeating_an_id_is_refused_naming_the_repeat(
    stub: memory_pb2_grpc.EpisodeServiceStub,
) -> None:
    namespace = fresh()
    episodes = [proto_episode(1), proto_episode(2), proto_episode(3), proto_episode(2)]
    request = pb.RecordEpisodesRequest(namespace=namespace, episodes=episodes)
    with pytest.raises(grpc.RpcError) as caught:
        stub.RecordEpisodes(request)
    error = caught.value
    assert isinstance(error, grpc.Call)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    named = [(v.field, v.description) for v in field_violations(error)]
    assert named == [("episodes[3].id", "repeats episodes[1].id")]
    assert listed(stub, namespace) == []


def stamp(seconds: int, nanos: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


@pytest.mark.parametrize(("since", "until"), [(600, 500), (500, 500), (10**9 - 1, 0)])
def test_a_time_range_that_does_not_end_after_it_starts_is_refused_naming_until(
    door: Any, since: int, until: int
) -> None:
    # to the nanosecond, as sent: one microsecond may hold a range's both ends
    request = pb.ListEpisodesRequest(
        namespace=fresh(), since=stamp(1_700_000_000, since), until=stamp(1_700_000_000, until)
    )
    with pytest.raises(grpc.RpcError) as caught:
        door.ListEpisodes(request)
    error = caught.value
    assert isinstance(error, grpc.Call)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    named = [(v.field, v.description) for v in field_violations(error)]
    assert named == [("until", "must be later than since")]


def test_times_are_kept_to_the_microsecond_and_filters_agree_with_them(door: Any) -> None:
    namespace = fresh()
    second = 1_700_000_000
    for name, nanos in (("z-first", 100), ("a-later", 900)):
        sent = proto_episode(1)
        sent.id = name
        sent.timestamp.CopyFrom(stamp(second, nanos))
        door.RecordEpisode(pb.RecordEpisodeRequest(namespace=namespace, episode=sent))

    def times(**bounds: int) -> list[tuple[str, int, int]]:
        request = pb.ListEpisodesRequest(
            namespace=namespace, **{k: stamp(second, v) for k, v in bounds.items()}
        )
        answer = door.ListEpisodes(request)
        return [(e.id, e.timestamp.seconds, e.timestamp.nanos) for e in answer.episodes]

    both = [("z-first", second, 0), ("a-later", second, 0)]  # one time: by id, descending
    assert times() == both
    assert times(since=0) == both
    assert times(since=500) == []  # each is listed at .000000, before .000000500
    assert times(until=500) == both
    assert times(until=0) == []
    assert times(since=0, until=1) == both
    assert times(since=100, until=900) == []  # no microsecond between them
    assert times(since=1000, until=2000) == []


@pytest.mark.parametrize(
    "data",
    [
        {"t": 2**70, "id": "x"},  # beyond SQLite's integers
        {"t": 1, "id": "\ud800"},  # a lone surrogate, which no store can encode
        {"t": True, "id": "x"},
    ],
    ids=["huge-time", "lone-surrogate", "bool-time"],
)
def test_a_forged_page_token_is_invalid_argument(door: Any, data: dict[str, Any]) -> None:
    namespace = fresh()
    door.RecordEpisode(pb.RecordEpisodeRequest(namespace=namespace, episode=proto_episode(1)))
    fingerprint = paging._fingerprint(EpisodeFilter())
    text = json.dumps({**data, "f": fingerprint})
    token = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    with pytest.raises(grpc.RpcError) as caught:
        door.ListEpisodes(pb.ListEpisodesRequest(namespace=namespace, page_token=token))
    error = caught.value
    assert isinstance(error, grpc.Call)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in field_violations(error)] == ["page_token"]


def test_bounds_within_the_last_microsecond_a_timestamp_holds(door: Any) -> None:
    namespace = fresh()
    last = 253_402_300_799  # 9999-12-31T23:59:59Z
    sent = proto_episode(1)
    sent.timestamp.CopyFrom(stamp(last, 999_999_999))  # kept as 23:59:59.999999
    door.RecordEpisode(pb.RecordEpisodeRequest(namespace=namespace, episode=sent))

    def ids(**bounds: int) -> list[str]:
        request = pb.ListEpisodesRequest(
            namespace=namespace, **{k: stamp(last, v) for k, v in bounds.items()}
        )
        return [e.id for e in door.ListEpisodes(request).episodes]

    assert ids(since=999_999_000) == ["ep-0001"]
    assert ids(since=999_999_500) == []
    assert ids(until=999_999_500) == ["ep-0001"]
    assert ids(since=999_999_000, until=999_999_500) == ["ep-0001"]
    assert ids(until=999_999_000) == []
