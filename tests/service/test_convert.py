"""himga.service.convert: models -> proto -> models gives back what went in, for every valid
Message and Session vector; Hit carries the same fields in Python and in the proto."""

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from google.protobuf.timestamp_pb2 import Timestamp
from himga_proto.memory.v1 import memory_pb2 as pb

from himga import validation
from himga.data.conversation import Message, Session
from himga.errors import InvalidArgument
from himga.memory.base import Hit, StoredMessage
from himga.memory.filters import MessageFilter
from himga.records import EpisodeTrace, TaskContext
from himga.service import InvalidRequest, convert

VECTOR_DIR = Path(__file__).resolve().parents[2] / "schemas" / "conformance"


def valid_documents(type_name: str) -> list[Any]:
    documents = []
    for path in sorted(VECTOR_DIR.glob("*.json")):
        groups = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(groups, list):
            continue
        for group in groups:
            if validation.type_for_id(group["schema"]["$ref"]) == type_name:
                documents += [
                    pytest.param(t["data"], id=t["description"])
                    for t in group["tests"]
                    if t["valid"]
                ]
    return documents


def without_metadata(model: Message | Session) -> dict[str, Any]:
    return {k: v for k, v in model.model_dump(mode="json").items() if not k.startswith("$")}


@pytest.mark.parametrize("document", valid_documents("Message"))
def test_message_round_trip(document: dict[str, Any]) -> None:
    message = Message.model_validate(document)
    back = convert.message_from_proto(convert.message_to_proto(message), "message")
    assert without_metadata(back) == without_metadata(message)
    assert back == Message.model_validate(without_metadata(message))


@pytest.mark.parametrize("document", valid_documents("Session"))
def test_session_round_trip(document: dict[str, Any]) -> None:
    session = Session.model_validate(document)
    back = convert.session_from_proto(convert.session_to_proto(session), "session")
    assert without_metadata(back) == without_metadata(session)
    assert back == Session.model_validate(without_metadata(session))


def test_a_session_for_ingest_travels_without_its_messages() -> None:
    session = Session(session_id="s", date_str="d", messages=[Message(role="u", content="x")])
    proto = convert.session_to_proto(session, with_messages=False)
    assert proto == pb.Session(session_id="s", date_str="d")
    with_bad_messages = pb.Session(session_id="s", messages=[pb.Message(role="")])
    assert convert.session_from_proto(with_bad_messages, "session", with_messages=False) == Session(
        session_id="s"
    )


def test_violations_carry_the_path_in_the_request() -> None:
    bad = pb.Session(session_id="", messages=[pb.Message(role="u"), pb.Message(role="")])
    with pytest.raises(InvalidRequest) as caught:
        convert.session_from_proto(bad, "items[4].session")
    assert {v.field for v in caught.value.violations} == {
        "items[4].session.session_id",
        "items[4].session.messages[1].role",
    }


def test_hit_has_the_proto_fields() -> None:
    assert [f.name for f in fields(Hit)] == [f.name for f in pb.Hit.DESCRIPTOR.fields]
    hit = Hit("D1:1", "s1", "Caroline", "hello", "8 May, 2023", 0.5)
    assert convert.hits_from_proto([convert.hit_to_proto(hit)]) == [hit]
    timed = Hit("D1:2", "s1", "Bo", "hi", "", 1.5, MOMENT, {"user": "u1"})
    assert convert.hits_from_proto([convert.hit_to_proto(timed)]) == [timed]
    assert not convert.hit_to_proto(hit).HasField("time")  # no time: unset, not 1970


MOMENT = datetime(2023, 5, 8, 13, 56, 0, 250_000, tzinfo=UTC)


def test_a_hit_carries_every_field_it_has() -> None:
    # One value that is not the default for each field of Hit: a field added to Hit and left
    # out of hit_to_proto (which names them one by one) fails here.
    values: dict[str, Any] = {
        "turn_id": "D1:3",
        "session_id": "s2",
        "role": "Ada",
        "content": "we met at the lake",
        "date_str": "8 May, 2023",
        "score": 2.25,
        "time": MOMENT,
        "metadata": MappingProxyType({"user": "u1", "topic": "lake"}),
    }
    assert set(values) == {f.name for f in fields(Hit)}
    hit = Hit(**values)
    proto = convert.hit_to_proto(hit)
    assert convert.hits_from_proto([proto]) == [hit]
    for name in values:
        assert proto.HasField(name) if name == "time" else getattr(proto, name), name


@pytest.mark.parametrize(
    "moment",
    [
        MOMENT,
        datetime(2023, 5, 8, 13, 56, 0, 250_000),  # naive: read as UTC
        datetime(2023, 5, 8, 19, 26, 0, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(2023, 5, 8, 5, 56, tzinfo=timezone(timedelta(hours=-8))),
        datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),  # before 1970, a fraction
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    ],
)
def test_a_hit_time_is_the_timestamp_protobuf_makes_of_it(moment: datetime) -> None:
    expected = Timestamp()
    expected.FromDatetime(moment)
    assert convert.hit_to_proto(Hit("m", "s", "Ada", "hi", "", 1.0, moment)).time == expected


def test_a_hit_time_outside_a_timestamp_is_refused_as_protobuf_refuses_it() -> None:
    moment = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))  # 0000-12-31 in UTC
    with pytest.raises(ArithmeticError) as protobufs:
        Timestamp().FromDatetime(moment)
    with pytest.raises(ArithmeticError) as ours:
        convert.hit_to_proto(Hit("m", "s", "Ada", "hi", "", 1.0, moment))
    assert (type(ours.value), str(ours.value)) == (type(protobufs.value), str(protobufs.value))


def test_a_filter_has_the_proto_fields_and_round_trips() -> None:
    assert [f.name for f in fields(MessageFilter)] == [
        f.name for f in pb.MessageFilter.DESCRIPTOR.fields
    ]
    chosen = MessageFilter(["s2", "s1"], ["Ada"], MOMENT, None, {"user": "u1"})
    proto = convert.filter_to_proto(chosen)
    assert proto is not None and list(proto.session_ids) == ["s1", "s2"]  # in a stable order
    assert not proto.HasField("before")
    assert convert.filter_from_proto(proto) == chosen
    assert convert.filter_to_proto(None) is None


def test_a_stored_message_round_trips() -> None:
    stored = StoredMessage(
        "D1:1", "s1", "Ada", "hello", "1:56 pm on 8 May, 2023", MOMENT, MOMENT, None, {"k": "v"}
    )
    assert convert.stored_from_proto(convert.stored_to_proto(stored), "messages[0]") == stored
    bare = StoredMessage("m", "s", "Ada", "")
    assert convert.stored_from_proto(convert.stored_to_proto(bare), "messages[0]") == bare


OUT_OF_RANGE = [
    Timestamp(seconds=-(2**40)),  # before year 1
    Timestamp(seconds=2**62),
    Timestamp(seconds=253_402_300_800),  # the second after 9999-12-31T23:59:59Z
    Timestamp(seconds=0, nanos=-1),
    Timestamp(seconds=0, nanos=2 * 10**9),
]


@pytest.mark.parametrize("moment", OUT_OF_RANGE, ids=str)
def test_a_time_no_timestamp_holds_is_one_violation_naming_the_field_and_its_range(
    moment: Timestamp,
) -> None:
    session = pb.Session(session_id="s", timestamp=moment)
    message = pb.Message(role="Ada", timestamp=moment)
    said = [
        (lambda: convert.session_from_proto(session, "session"), "session.timestamp"),
        (
            lambda: convert.message_from_proto(message, "items[2].message"),
            "items[2].message.timestamp",
        ),
        (lambda: convert.filter_from_proto(pb.MessageFilter(after=moment)), "filter.after"),
    ]
    for parse, field in said:
        with pytest.raises(InvalidArgument) as caught:
            parse()
        said = [(v.field, v.description) for v in caught.value.violations]
        assert said == [(field, convert.TIME_RANGE)]


# Each record a request carries, as the server reads it: a valid one whose repeated messages
# hold one item each, so that every double of the proto has a place in it.
_EPISODE = EpisodeTrace.from_dict(
    {
        **EpisodeTrace.create(task_id="t", agent="a", goal="g").to_dict(),
        "action_log": [{"t": 1, "action": "edit"}],
        "errors_encountered": [{"type": "test_failure", "message": "m"}],
    }
)
READERS: dict[str, tuple[Callable[[], ProtoMessage], Callable[[Any, str], object]]] = {
    "Message": (lambda: pb.Message(role="u", content="c"), convert.message_from_proto),
    "Session": (
        lambda: pb.Session(session_id="s", messages=[pb.Message(role="u", content="c")]),
        convert.session_from_proto,
    ),
    "EpisodeTrace": (lambda: convert.episode_to_proto(_EPISODE), convert.episode_document),
    "TaskContext": (lambda: convert.task_to_proto(TaskContext(goal="g")), convert.task_from_proto),
}
DOUBLES = (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT)


def double_paths(message: ProtoMessage, path: str = "") -> Iterator[str]:
    """The path in `message` (as a violation names it) of every double it holds, in the
    messages it holds too (the first item of a repeated one)."""
    for field in message.DESCRIPTOR.fields:
        named = f"{path}.{field.json_name}"
        if field.type in DOUBLES:
            yield named
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            held = getattr(message, field.name)
            if field.is_repeated:
                if held:
                    yield from double_paths(held[0], f"{named}[0]")
            else:
                yield from double_paths(held, named)


def set_double(message: ProtoMessage, path: str, value: float) -> None:
    *holders, name = path.strip(".").split(".")
    for step in holders:
        field, _, index = step.partition("[")
        message = getattr(message, field)
        if index:
            message = message[int(index.rstrip("]"))]  # type: ignore[index]
    setattr(message, name, value)


NUMBERS = [
    (type_name, path) for type_name, (make, _) in READERS.items() for path in double_paths(make())
]


def test_every_double_of_an_episode_has_a_place_in_the_numbers_checked() -> None:
    assert {path for type_name, path in NUMBERS if type_name == "EpisodeTrace"} >= {
        ".importance",
        ".duration_seconds",
        ".tokens_used",
        ".access_count",
        ".action_log[0].t",
    }


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=str)
@pytest.mark.parametrize(("type_name", "path"), NUMBERS, ids=[f"{t}{p}" for t, p in NUMBERS])
def test_a_number_that_is_not_finite_is_a_violation_naming_it(
    type_name: str, path: str, value: float
) -> None:
    make, read = READERS[type_name]
    record = make()
    set_double(record, path, value)
    with pytest.raises(InvalidRequest) as caught:
        read(record, "items[2].record")
    said = [(v.field, v.description) for v in caught.value.violations]
    assert said == [(f"items[2].record{path}", "must be a finite number")]


@pytest.mark.parametrize("type_name", READERS)
def test_a_refusal_names_a_field_even_when_the_validators_disagree(
    type_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled validator refuses what the reference finds no fault with (as it did NaN
    where the schema compares): still a violation, never an InvalidRequest naming nothing."""
    make, read = READERS[type_name]
    monkeypatch.setattr(validation, "is_valid", lambda document, name: False)
    monkeypatch.setattr(validation, "validate", lambda document, name: [])
    with pytest.raises(InvalidRequest) as caught:
        read(make(), "episodes[3]")
    assert [v.field for v in caught.value.violations] == ["episodes[3]"]
    assert convert.violations_of(InvalidRequest([]), "episode") != []
