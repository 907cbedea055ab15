"""The one place where the service's proto messages and himga's Python models meet.

Both directions are generic over the proto descriptors: a field is carried under its
`json_name`, which equals the schema's key (tests/service/test_proto_mirror.py holds them
equal), so no field list is restated here. Proto -> model checks the data against its JSON
Schema, the contract itself, with the compiled validator of `himga.validation`, reports each broken
rule as a field violation with its path in the request, and builds the generated model. A number
that is not finite (NaN, an infinity: a double holds them, JSON has none) is named at its path as
"must be a finite number"; a refusal always names at least one field.
"""

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import fields
from datetime import UTC, datetime
from functools import cache
from typing import Any, Literal, TypeVar, cast, get_args, get_origin

from google.protobuf import timestamp_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from himga_proto.memory.v1 import memory_pb2 as pb
from pydantic import BaseModel

from himga import validation
from himga.data.conversation import Message, Session
from himga.errors import InvalidArgument
from himga.memory.base import Hit, StoredMessage
from himga.memory.filters import MessageFilter
from himga.records import EpisodeTrace, TaskContext
from himga.records.jsondata import non_json
from himga.service.errors import FieldViolation, InvalidRequest
from himga.timeutil import holds_datetime, parse_utc_datetime

ModelT = TypeVar("ModelT", bound=BaseModel)
D = TypeVar("D")
P = TypeVar("P", bound=ProtoMessage)
RecordT = TypeVar("RecordT", EpisodeTrace, TaskContext)

_log = logging.getLogger(__name__)

NOT_FINITE = "must be a finite number"
"""The rule a NaN or an infinity breaks, wherever a request carries a number."""
TIME_RANGE = "must be a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z"
"""The rule a binary Timestamp out of its type's range breaks (seconds or nanos)."""

_OUT_OF_RANGE = "\x00out of a Timestamp's range"
"""What `_to_dict` makes of such a Timestamp: a string no date-time format takes, which
`_violations` names with TIME_RANGE where the schema refuses it."""


# A Timestamp's range (0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z), as protobuf checks it.
_FIRST_SECOND, _LAST_SECOND = -62_135_596_800, 253_402_300_799
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)

# How a proto field is carried: a scalar, a message, a map, a well-known type (below), or a
# count (a double that the schema calls an integer: ProtoJSON would write a 64-bit integer as a
# string, which the schemas refuse).
_Kind = Literal["scalar", "message", "map", "well-known", "count"]
# What a proto field needs for its conversion: name, json_name, whether it has presence (an
# unset `optional` stays absent), whether it is repeated, and its kind.
_FieldPlan = tuple[str, str, bool, bool, _Kind]


def _timestamp(text: str) -> timestamp_pb2.Timestamp:
    moment = timestamp_pb2.Timestamp()
    moment.FromJsonString(text.upper())  # protobuf reads only upper-case T and Z
    return moment


# The well-known types the proto uses, each with its value in Python, its ProtoJSON form (the
# form the schemas write: a Timestamp is an RFC 3339 string in UTC with `Z`), and the reverse.
_WELL_KNOWN: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any]]] = {
    timestamp_pb2.Timestamp.DESCRIPTOR.full_name: (
        lambda value: value.ToDatetime(tzinfo=UTC),
        lambda value: value.ToJsonString(),
        _timestamp,
    ),
}


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
    # The fields as they are, but for time and metadata, not through _proto_value: a server
    # converts every hit of a Retrieve holding the interpreter's lock, and this takes a
    # quarter of the time.
    made = pb.Hit(
        **{name: getattr(hit, name) for name in _HIT_AS_IS}, metadata=hit.metadata or None
    )
    if hit.time is not None:  # unset, not 1970, when there is none
        _stamp(made.time, hit.time)
    return made


def hits_from_proto(hits: Iterable[pb.Hit]) -> list[Hit]:
    return [_dataclass_from_proto(Hit, h) for h in hits]


def filter_to_proto(chosen: MessageFilter | None) -> pb.MessageFilter | None:
    """The proto of a filter; None (no field set) for none."""
    if chosen is None:
        return None
    return pb.MessageFilter(
        **{name: _proto_value(getattr(chosen, name)) for name in _field_names(MessageFilter)}
    )


def filter_from_proto(chosen: pb.MessageFilter) -> MessageFilter:
    """The MessageFilter a request carries (InvalidArgument naming the field it breaks, as
    `filter.after`)."""
    return _dataclass_from_proto(MessageFilter, chosen, "filter.")


def stored_to_proto(stored: StoredMessage) -> pb.StoredMessage:
    return pb.StoredMessage(
        message=message_to_proto(stored.message()),
        session=session_to_proto(stored.session(), with_messages=False),
        time=_proto_value(stored.time),
    )


def stored_from_proto(stored: pb.StoredMessage, path: str) -> StoredMessage:
    """The StoredMessage an answer carries, its message and session checked like a request's."""
    message = message_from_proto(stored.message, f"{path}.message")
    session = session_from_proto(stored.session, f"{path}.session", with_messages=False)
    time = _python_value(stored, _field(stored, "time"))
    return StoredMessage(
        message.turn_id if isinstance(message.turn_id, str) else "",
        session.session_id,
        message.role,
        message.content,
        session.date_str if isinstance(session.date_str, str) else "",
        time,
        message.timestamp if isinstance(message.timestamp, datetime) else None,
        session.timestamp if isinstance(session.timestamp, datetime) else None,
        dict(message.metadata),
    )


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
        raise InvalidRequest(_violations(data, type_name, path))
    return data


def _violations(data: dict[str, Any], type_name: str, path: str) -> list[FieldViolation]:
    """Each rule `data` breaks, at its path in the request (`path` + the JSON path in `data`),
    once the fast validator has refused it; never empty. A number that is not finite is named
    as such: the reference validator lets NaN through rules that compare (NaN is neither below
    a minimum nor above a maximum), and says of an infinity only that it is too large or no
    integer."""
    # What `_to_dict` makes holds JSON's types alone: all it holds that JSON cannot is a float
    # that is not finite.
    found = [
        FieldViolation(path + validation.json_path(where).removeprefix("$"), NOT_FINITE)
        for where in non_json(data, [])
    ]
    out_of_range = {validation.json_path(where) for where in _out_of_range(data, [])}
    named = {violation.field for violation in found}
    for error in validation.validate(data, type_name):
        field = path + error.path.removeprefix("$")
        if field in named:
            continue
        if error.path in out_of_range:  # one rule for it, whichever the schema's are
            named.add(field)
            found.append(FieldViolation(field, TIME_RANGE))
        else:
            found.append(FieldViolation(field, error.reason))
    if not found:
        # The fast validator and the reference disagree: a bug of one of them, which must not
        # let the request through nor refuse it naming nothing.
        _log.error("the fast validator refused a %s the reference validator accepts", type_name)
        found.append(FieldViolation(path, f"is not a valid {type_name}"))
    return found


def _out_of_range(value: Any, where: list[str | int]) -> Iterator[list[str | int]]:
    """The paths of the Timestamps out of range in a dict `_to_dict` made."""
    if value == _OUT_OF_RANGE:
        yield where
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _out_of_range(item, [*where, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _out_of_range(item, [*where, index])


def violations_of(error: InvalidArgument, path: str) -> list[FieldViolation]:
    """The violations of `error`, which a handler adds to what it found wrong: never none (an
    error that names no field is reported at `path`, the field it was raised for)."""
    return error.violations or [FieldViolation(path, error.rule or str(error) or "is invalid")]


def _proto_value(value: Any) -> Any:
    """A Python value as a proto constructor takes it: a dict for a mapping, a sorted list for a
    set (so the same filter makes the same bytes), the value itself otherwise."""
    if isinstance(value, datetime):
        moment = timestamp_pb2.Timestamp()
        _stamp(moment, value)
        return moment
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return value


def _stamp(target: timestamp_pb2.Timestamp, moment: datetime) -> None:
    """Set `target` to what protobuf's FromDatetime makes of `moment` (an aware time taken to
    UTC, a naive one read as UTC; whole seconds rounded down, the microseconds as nanos), by
    arithmetic on the time since 1970 rather than through a time tuple, in a third of the
    time. A time outside a Timestamp's range goes to FromDatetime, which refuses it."""
    since = moment - (_EPOCH if moment.utcoffset() is not None else _NAIVE_EPOCH)
    seconds = since.days * 86_400 + since.seconds
    if _FIRST_SECOND <= seconds <= _LAST_SECOND:
        target.seconds, target.nanos = seconds, moment.microsecond * 1000
    else:
        target.FromDatetime(moment)


def _dataclass_from_proto(cls: Callable[..., D], message: ProtoMessage, path: str = "") -> D:
    """An instance of the dataclass `cls` from the proto fields of the same names;
    InvalidArgument naming `path` + the field whose value Python cannot hold."""
    values = {}
    for name in _field_names(cls):
        field = _field(message, name)
        try:
            values[name] = _python_value(message, field)
        except ValueError as error:
            timestamp = field.message_type is timestamp_pb2.Timestamp.DESCRIPTOR
            raise InvalidArgument(path + name, TIME_RANGE if timestamp else str(error)) from None
    return cls(**values)


def _field(message: ProtoMessage, name: str) -> FieldDescriptor:
    found: Any = message.DESCRIPTOR.fields_by_name[name]
    return cast(FieldDescriptor, found)


def _python_value(message: ProtoMessage, field: FieldDescriptor) -> Any:
    """A field's value in Python: a dict for a map, a list for a repeated field, the Python
    value of a well-known type (None when unset), the scalar itself otherwise."""
    value = getattr(message, field.name)
    kind = _kind(field)
    if kind == "map":
        return dict(value)
    if kind == "well-known":
        if not message.HasField(field.name):
            return None
        return _WELL_KNOWN[value.DESCRIPTOR.full_name][0](value)
    if field.is_repeated:
        return list(value)
    return value


def _validate(model: type[ModelT], data: dict[str, Any], path: str) -> ModelT:
    """The model of `data`, checked against its JSON Schema by the compiled fast path; each
    broken rule becomes a violation at its path in the request."""
    type_name = model.__name__  # the generated models are named after their schema's title
    if validation.is_valid(data, type_name):
        return _construct(model, data)
    raise InvalidRequest(_violations(data, type_name, path))


def _construct(model: type[ModelT], data: dict[str, Any]) -> ModelT:
    """The model of schema-valid `data`, built without validating it a second time (pydantic's
    validation of the same rules cost more than the rest of an ingest together). Date-time
    strings become the datetimes the model holds."""
    values = dict(data)
    for key, nested, many in _nested_models(model):
        if key in values:
            value = values[key]
            if nested is None:
                values[key] = parse_utc_datetime(value)
            elif many:
                values[key] = [_construct(nested, v) for v in value]
            else:
                values[key] = _construct(nested, value)
    return model.model_construct(**values)


@cache
def _nested_models(
    model: type[BaseModel],
) -> tuple[tuple[str, type[BaseModel] | None, bool], ...]:
    """(key, model, is a list) of each field of `model` that holds a model or a list of them,
    and (key, None, False) of each that holds a date-time."""
    found: list[tuple[str, type[BaseModel] | None, bool]] = []
    for name, field in model.model_fields.items():
        many = get_origin(field.annotation) is list
        held = get_args(field.annotation)[0] if many else field.annotation
        if isinstance(held, type) and issubclass(held, BaseModel):
            found.append((field.alias or name, held, many))
        elif holds_datetime(field.annotation):
            found.append((field.alias or name, None, False))
    return tuple(found)


def _to_dict(message: ProtoMessage, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON-shaped dict of a proto message, keyed by json_name; unset optionals absent."""
    out: dict[str, Any] = {}
    for name, json_name, presence, repeated, kind in _plan(message.DESCRIPTOR):
        if name in skip or (presence and not message.HasField(name)):
            continue
        value = getattr(message, name)
        if kind == "map":
            value = {k: _to_dict(v) if isinstance(v, ProtoMessage) else v for k, v in value.items()}
        elif kind == "well-known":
            try:
                value = _WELL_KNOWN[value.DESCRIPTOR.full_name][1](value)
            except ValueError:
                # Out of its type's range (a Timestamp before year 1): no JSON form, so a value
                # no schema takes, which `_violations` names with the rule it breaks.
                value = _OUT_OF_RANGE
        elif kind == "message":
            value = [_to_dict(v) for v in value] if repeated else _to_dict(value)
        elif kind == "count":
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
        if kind == "message":
            nested = _message_class(proto, name)
            value = (
                [_from_document(v, nested) for v in value]
                if repeated
                else _from_document(value, nested)
            )
        elif kind == "map":
            value = dict(value)
        elif kind == "well-known":
            made = _WELL_KNOWN[_held(proto, name)][2]
            value = [made(v) for v in value] if repeated else made(value)
        values[name] = value
    return proto(**values)


def _message_class(proto: type[ProtoMessage], field: str) -> type[ProtoMessage]:
    message_type = proto.DESCRIPTOR.fields_by_name[field].message_type
    assert message_type is not None  # the plan says the field holds messages
    held: type[ProtoMessage] = getattr(pb, message_type.name)
    return held


def _count(value: float) -> float | int:
    """A count as the schemas hold it: an integer when it is whole (a fraction stays, for the
    schema to refuse)."""
    return int(value) if value.is_integer() else value


def _held(proto: type[ProtoMessage], field: str) -> str:
    """The full name of the message type a field holds."""
    message_type = proto.DESCRIPTOR.fields_by_name[field].message_type
    assert message_type is not None  # the plan says the field holds messages
    return str(message_type.full_name)


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
        (f.name, f.json_name, f.has_presence, f.is_repeated, _kind(f, descriptor))
        for f in descriptor.fields
    )


def _kind(field: FieldDescriptor, descriptor: Descriptor | None = None) -> _Kind:
    held = field.message_type
    if held is None:
        is_double = field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT)
        if is_double and descriptor is not None:
            wanted = _schema_properties(descriptor.name).get(field.json_name, {})
            if wanted.get("type") == "integer":
                return "count"
        return "scalar"
    if held.GetOptions().map_entry:
        return "map"
    if held.full_name in _WELL_KNOWN:
        return "well-known"
    return "message"


@cache
def _field_names(cls: Any) -> tuple[str, ...]:
    """The field names of a dataclass (Hit, MessageFilter), which the proto shares."""
    return tuple(f.name for f in fields(cls))


_HIT_AS_IS = tuple(name for name in _field_names(Hit) if name not in ("time", "metadata"))
"""The fields of Hit whose Python value the proto takes as it is."""


@cache
def _schema_properties(title: str) -> dict[str, Any]:
    """The properties of the schema a proto message mirrors (none for other messages)."""
    if title not in validation.type_names():
        return {}
    properties: dict[str, Any] = validation.schema_for(title).get("properties", {})
    return properties
