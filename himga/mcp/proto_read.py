"""A tool's plain arguments read as the ProtoJSON of its request (json_format.ParseDict), and,
when they do not parse, each offending field by its path and the rule it breaks: never a
ParseError for the server to log as its own fault.

The tool's schema (himga.mcp.proto_schema) refuses most of what does not parse, and says so
before the call; what it lets through is a date-time the RFC allows and a Timestamp does not
hold (a leap second, more than nine digits after the point, a time outside years 1 to 9999
once its offset is applied). A date-time written in lower case (`2024-05-08t13:56:00z`), which
RFC 3339 and the schema allow, is read in upper case first, as the HTTP door reads it."""

from collections.abc import Mapping
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from himga import validation
from himga.mcp.proto_schema import integer_range

_TIMESTAMP = "google.protobuf.Timestamp"
_TIME_RULE = (
    "an RFC 3339 date-time in years 1 to 9999 once its offset is applied, seconds 0 to 59, "
    "at most 9 digits after the point"
)
_KINDS = {
    FieldDescriptor.TYPE_STRING: "a string",
    FieldDescriptor.TYPE_BOOL: "true or false",
    FieldDescriptor.TYPE_DOUBLE: "a number",
    FieldDescriptor.TYPE_FLOAT: "a number of at most 3.4028234663852886e38 either way",
    FieldDescriptor.TYPE_BYTES: "base64 text",
}


def parse(kind: type[Message], arguments: Mapping[str, Any]) -> Message:
    """`arguments` read as a `kind`; ValueError naming every field that does not parse (one
    a line, `$.path: must be ...`)."""
    value = upper_case_times(dict(arguments), _descriptor(kind))
    try:
        return json_format.ParseDict(value, kind())
    except Exception:  # ParseError, and what a field's parser lets through (OverflowError)
        found = problems(kind, value)
        raise ValueError("\n".join(found or ["the arguments do not make a request"])) from None


def problems(kind: type[Message], arguments: Mapping[str, Any]) -> list[str]:
    """Each field of `arguments` (a `kind`'s ProtoJSON) that does not parse, as
    `$.path: must be ...` (none when they all do)."""
    found: list[str] = []
    descriptor = _descriptor(kind)
    _object(descriptor, upper_case_times(dict(arguments), descriptor), [], found)
    return found


def _descriptor(kind: type[Message]) -> Descriptor:
    return cast(Descriptor, kind.DESCRIPTOR)


def _object(
    descriptor: Descriptor, value: Mapping[str, Any], where: list[str | int], found: list[str]
) -> None:
    for key, item in value.items():
        at = [*where, key]
        field = descriptor.fields_by_name.get(key) or _by_json_name(descriptor, key)
        if field is None:
            found.append(f"{validation.json_path(at)}: {descriptor.name} has no such field")
        elif not _parses(descriptor, {key: item}):
            before = len(found)
            _inside(descriptor, field, key, item, at, found)
            if len(found) == before:
                found.append(f"{validation.json_path(at)}: must be {_whole(field)}")


def _inside(
    descriptor: Descriptor,
    field: FieldDescriptor,
    key: str,
    item: Any,
    at: list[str | int],
    found: list[str],
) -> None:
    """The offending parts of a field that does not parse, when they can be told apart."""
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        if isinstance(item, dict):
            value = entry.fields_by_name["value"]
            for name, element in item.items():
                if not _parses(descriptor, {key: {name: element}}):
                    found.append(f"{validation.json_path([*at, name])}: must be {_kind(value)}")
        return
    if field.is_repeated:
        if isinstance(item, list):
            for index, element in enumerate(item):
                if not _parses(descriptor, {key: [element]}):
                    _one(field, element, [*at, index], found)
        return
    _one(field, item, at, found)


def _one(field: FieldDescriptor, item: Any, at: list[str | int], found: list[str]) -> None:
    message = field.message_type
    if message is not None and not _well_known(message) and isinstance(item, dict):
        before = len(found)
        _object(message, item, at, found)
        if len(found) > before:
            return
    found.append(f"{validation.json_path(at)}: must be {_kind(field)}")


def _whole(field: FieldDescriptor) -> str:
    """What a field's whole value must be, in words."""
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        return f"an object whose values are each {_kind(entry.fields_by_name['value'])}"
    if field.is_repeated:
        return f"a list, each item {_kind(field)}"
    return _kind(field)


def _kind(field: FieldDescriptor) -> str:
    """What one value of `field` must be, in words."""
    if field.enum_type is not None:
        return "one of " + ", ".join(value.name for value in field.enum_type.values)
    message = field.message_type
    if message is not None:
        return _TIME_RULE if message.full_name == _TIMESTAMP else f"an object ({message.name})"
    bounds = integer_range(field)
    if bounds is not None:
        return f"an integer from {bounds[0]} to {bounds[1]}"
    return _KINDS.get(field.type, "a value of its proto type")


def _well_known(descriptor: Descriptor) -> bool:
    """Types with a ProtoJSON form of their own (a Timestamp is a string)."""
    return descriptor.full_name.startswith("google.protobuf.")


def _by_json_name(descriptor: Descriptor, key: str) -> FieldDescriptor | None:
    return next((f for f in descriptor.fields if f.json_name == key), None)


def _parses(descriptor: Descriptor, value: dict[str, Any]) -> bool:
    from google.protobuf import message_factory

    try:
        json_format.ParseDict(value, message_factory.GetMessageClass(descriptor)())
    except Exception:  # ParseError, and what a field's parser lets through (OverflowError)
        return False
    return True


def upper_case_times(value: Any, descriptor: Descriptor) -> Any:
    """`value`, the ProtoJSON of a `descriptor` message, with each Timestamp's string in upper
    case (a date-time holds no other letter); anything that is not what its field takes is
    left for the parser to judge."""
    if not isinstance(value, dict):
        return value
    fixed = dict(value)
    for key, item in value.items():
        field = descriptor.fields_by_name.get(key) or _by_json_name(descriptor, key)
        message = None if field is None else field.message_type
        if field is None or message is None:
            continue
        if message.GetOptions().map_entry:
            inner = message.fields_by_name["value"].message_type
            if inner is not None and isinstance(item, dict):
                fixed[key] = {k: _upper_case(v, inner) for k, v in item.items()}
        elif field.is_repeated and isinstance(item, list):
            fixed[key] = [_upper_case(element, message) for element in item]
        else:
            fixed[key] = _upper_case(item, message)
    return fixed


def _upper_case(item: Any, descriptor: Descriptor) -> Any:
    if descriptor.full_name == _TIMESTAMP:
        return item.upper() if isinstance(item, str) else item
    return upper_case_times(item, descriptor)
