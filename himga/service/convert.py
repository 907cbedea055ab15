"""The one place where the service's proto messages and himga's Python models meet.

Both directions are generic over the proto descriptors: a field is carried under its
`json_name`, which equals the schema's key (tests/service/test_proto_mirror.py holds them
equal), so no field list is restated here. Proto -> model checks the data against its JSON
Schema, the contract itself, with the compiled validator of `himga.validation`, reports each broken
rule as a field violation with its path in the request, and builds the generated model.
"""

from collections.abc import Iterable
from dataclasses import fields
from functools import cache
from typing import Any, TypeVar, get_args, get_origin

from google.protobuf import timestamp_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from himga_proto.memory.v1 import memory_pb2 as pb
from pydantic import BaseModel

from himga import validation
from himga.data.conversation import Message, Session
from himga.memory.base import Hit
from himga.records import EpisodeTrace, TaskContext
from himga.service.errors import FieldViolation, InvalidRequest

ModelT = TypeVar("ModelT", bound=BaseModel)
P = TypeVar("P", bound=ProtoMessage)
RecordT = TypeVar("RecordT", EpisodeTrace, TaskContext)

# What a proto field needs for its conversion: name, json_name, whether it has presence (an
# unset `optional` stays absent), whether it is repeated, and its kind: a message, a Timestamp
# (an RFC 3339 string in the schemas), a count (a double that the schema calls an integer), or
# any other value.
_FieldPlan = tuple[str, str, bool, bool, str]
_MESSAGE, _TIMESTAMP, _COUNT, _VALUE = "message", "timestamp", "count", "value"
_TIMESTAMP_NAME = "google.protobuf.Timestamp"


def message_from_proto(message: pb.Message, path: str) -> Message:
    """The Message a request carries at `path` (`message`, `items[2].message`)."""
    return _validate(Message, _to_dict(message), path)


def session_from_proto(session: pb.Session, path: str, *, with_messages: bool = True) -> Session:
    """The Session a request carries at `path`; its messages are left out when not wanted
    (an Ingest carries its message beside the session, whose `messages` the server ignores)."""
    skip = () if with_messages else ("messages",)
    return _validate(Session, _to_dict(session, skip), path)


def message_to_proto(message: Message) -> pb.Message:
    return pb.Message(**_proto_kwargs(message, pb.Message))


def session_to_proto(session: Session, *, with_messages: bool = True) -> pb.Session:
    """The proto of `session`; without its messages for an Ingest (they travel one by one)."""
    exclude = None if with_messages else {"messages"}
    return pb.Session(**_proto_kwargs(session, pb.Session, exclude))


def hit_to_proto(hit: Hit) -> pb.Hit:
    return pb.Hit(**{name: getattr(hit, name) for name in _hit_fields()})


def hits_from_proto(hits: Iterable[pb.Hit]) -> list[Hit]:
    names = _hit_fields()
    return [Hit(**{name: getattr(h, name) for name in names}) for h in hits]


def episode_from_proto(episode: pb.EpisodeTrace, path: str) -> EpisodeTrace:
    """The EpisodeTrace a request carries at `path` (`episode`, `episodes[2]`)."""
    return EpisodeTrace.from_dict(episode_document(episode, path))


def episode_document(episode: pb.EpisodeTrace, path: str) -> dict[str, Any]:
    """The wire form (the schema's JSON) of an episode a request carries at `path`, checked
    against the schema: what the stores keep."""
    return _checked(_to_dict(episode), "EpisodeTrace", path)


def episode_document_to_proto(document: dict[str, Any]) -> pb.EpisodeTrace:
    """The proto of an episode's wire form."""
    return _from_document(document, pb.EpisodeTrace)


def task_from_proto(task: pb.TaskContext, path: str) -> TaskContext:
    """The TaskContext a request carries at `path`."""
    return _record(TaskContext, _to_dict(task), path)


def episode_to_proto(episode: EpisodeTrace) -> pb.EpisodeTrace:
    return episode_document_to_proto(episode.to_dict())


def task_to_proto(task: TaskContext) -> pb.TaskContext:
    return _from_document(task.to_dict(), pb.TaskContext)


def _record(record: type[RecordT], data: dict[str, Any], path: str) -> RecordT:
    """The record (himga.records) of `data`, checked against its JSON Schema first."""
    return record.from_dict(_checked(data, record.__name__, path))


def _checked(data: dict[str, Any], type_name: str, path: str) -> dict[str, Any]:
    """`data` once it is valid against the schema of `type_name`; else InvalidRequest with
    each broken rule as a violation at its path in the request."""
    if not validation.is_valid(data, type_name):
        raise InvalidRequest(
            [
                FieldViolation(path + e.path.removeprefix("$"), e.reason)
                for e in validation.validate(data, type_name)
            ]
        )
    return data


def _validate(model: type[ModelT], data: dict[str, Any], path: str) -> ModelT:
    """The model of `data`, checked against its JSON Schema by the compiled fast path; each
    broken rule becomes a violation at its path in the request."""
    type_name = model.__name__  # the generated models are named after their schema's title
    if validation.is_valid(data, type_name):
        return _construct(model, data)
    raise InvalidRequest(
        [
            FieldViolation(path + e.path.removeprefix("$"), e.reason)
            for e in validation.validate(data, type_name)
        ]
    )


def _construct(model: type[ModelT], data: dict[str, Any]) -> ModelT:
    """The model of schema-valid `data`, built without validating it a second time (pydantic's
    validation of the same rules cost more than the rest of an ingest together)."""
    values = dict(data)
    for key, nested, many in _nested_models(model):
        if key in values:
            value = values[key]
            values[key] = (
                [_construct(nested, v) for v in value] if many else _construct(nested, value)
            )
    return model.model_construct(**values)


@cache
def _nested_models(model: type[BaseModel]) -> tuple[tuple[str, type[BaseModel], bool], ...]:
    """(key, model, is a list) of each field of `model` that holds a model or a list of them."""
    found = []
    for name, field in model.model_fields.items():
        many = get_origin(field.annotation) is list
        held = get_args(field.annotation)[0] if many else field.annotation
        if isinstance(held, type) and issubclass(held, BaseModel):
            found.append((field.alias or name, held, many))
    return tuple(found)


def _to_dict(message: ProtoMessage, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON-shaped dict of a proto message, keyed by json_name; unset optionals absent."""
    out: dict[str, Any] = {}
    for name, json_name, presence, repeated, kind in _plan(message.DESCRIPTOR):
        if name in skip or (presence and not message.HasField(name)):
            continue
        value = getattr(message, name)
        if kind is _MESSAGE:
            value = [_to_dict(v) for v in value] if repeated else _to_dict(value)
        elif kind is _TIMESTAMP:
            value = [_rfc3339(v) for v in value] if repeated else _rfc3339(value)
        elif kind is _COUNT:
            value = [_count(v) for v in value] if repeated else _count(value)
        elif repeated:
            value = list(value)
        out[json_name] = value
    return out


def _from_document(document: dict[str, Any], proto: type[P]) -> P:
    """The proto message of a JSON document keyed by json_name (the schemas' wire form): the
    inverse of `_to_dict`. An absent or null key leaves its field unset; `$`-keys are skipped."""
    values: dict[str, Any] = {}
    for name, json_name, _, repeated, kind in _plan(proto.DESCRIPTOR):
        value = document.get(json_name)
        if value is None:
            continue
        if kind is _MESSAGE:
            nested = _message_class(proto, name)
            value = (
                [_from_document(v, nested) for v in value]
                if repeated
                else _from_document(value, nested)
            )
        elif kind is _TIMESTAMP:
            value = [_timestamp(v) for v in value] if repeated else _timestamp(value)
        values[name] = value
    return proto(**values)


def _message_class(proto: type[ProtoMessage], field: str) -> type[ProtoMessage]:
    message_type = proto.DESCRIPTOR.fields_by_name[field].message_type
    assert message_type is not None  # the plan says the field holds messages
    held: type[ProtoMessage] = getattr(pb, message_type.name)
    return held


def _rfc3339(moment: timestamp_pb2.Timestamp) -> str:
    """A Timestamp as the schemas write a date-time; one outside RFC 3339's years is written so
    that the schema's check names it."""
    try:
        return moment.ToJsonString()
    except ValueError:
        return f"not a date-time: {moment.seconds} s {moment.nanos} ns"


def _timestamp(text: str) -> timestamp_pb2.Timestamp:
    moment = timestamp_pb2.Timestamp()
    moment.FromJsonString(text.upper())
    return moment


def _count(value: float) -> float | int:
    """A count as the schemas hold it: an integer when it is whole (a fraction stays, for the
    schema to refuse)."""
    return int(value) if value.is_integer() else value


def _proto_kwargs(
    model: BaseModel, proto: type[ProtoMessage], exclude: set[str] | None = None
) -> dict[str, Any]:
    """Constructor arguments of the proto of `model`: its JSON dump keyed by proto field name.
    Keys starting with `$` (`$schema`) are document metadata the proto does not carry."""
    by_json_name = {f.json_name: f.name for f in proto.DESCRIPTOR.fields}
    return {
        by_json_name[key]: value
        for key, value in model.model_dump(exclude=exclude).items()
        if not key.startswith("$")
    }


@cache
def _plan(descriptor: Descriptor) -> tuple[_FieldPlan, ...]:
    return tuple(
        (f.name, f.json_name, f.has_presence, f.is_repeated, _kind(descriptor, f))
        for f in descriptor.fields
    )


def _kind(descriptor: Descriptor, field: FieldDescriptor) -> str:
    if field.message_type is not None:
        return _TIMESTAMP if field.message_type.full_name == _TIMESTAMP_NAME else _MESSAGE
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        properties = _schema_properties(descriptor.name)
        if properties.get(field.json_name, {}).get("type") == "integer":
            return _COUNT
    return _VALUE


def _schema_properties(title: str) -> dict[str, Any]:
    """The properties of the schema a proto message mirrors (none for other messages)."""
    if title not in validation.type_names():
        return {}
    properties: dict[str, Any] = validation.schema_for(title).get("properties", {})
    return properties


@cache
def _hit_fields() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Hit))
