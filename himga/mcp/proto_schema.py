"""The JSON Schema of a proto message's fields, read from its descriptor: what a tool argument
taken from a request of the proto accepts, as ProtoJSON reads it (json_format.ParseDict).

A message field whose proto type mirrors a shipped schema (Message, Session, TaskContext,
EpisodeTrace) takes that schema, inlined (himga.mcp.records_schema); a Timestamp is an RFC 3339
string; a map<string, string> is an object of strings. A field of any other kind is refused,
so a new kind fails the tests until it has a mapping here."""

from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from himga.mcp.records_schema import inline
from himga.validation import type_names

_SCALARS = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number"},
    **{
        kind: {"type": "integer"}
        for kind in (
            FieldDescriptor.TYPE_INT32,
            FieldDescriptor.TYPE_INT64,
            FieldDescriptor.TYPE_UINT32,
            FieldDescriptor.TYPE_UINT64,
            FieldDescriptor.TYPE_SINT32,
            FieldDescriptor.TYPE_SINT64,
        )
    },
}
_TIMESTAMP = "google.protobuf.Timestamp"
_UNSIGNED = (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64)


def fields_schema(descriptor: Descriptor, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The schema of each of `names` (proto field names) of `descriptor`, by name."""
    return {name: field_schema(descriptor.fields_by_name[name]) for name in names}


def message_schema(descriptor: Descriptor) -> dict[str, Any]:
    """A closed object of every field of `descriptor`, none required (proto3 fields are
    optional)."""
    return {
        "type": "object",
        "properties": fields_schema(descriptor, tuple(f.name for f in descriptor.fields)),
        "additionalProperties": False,
    }


def field_schema(field: FieldDescriptor) -> dict[str, Any]:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        value = field_schema(message.fields_by_name["value"])
        return {"type": "object", "additionalProperties": value}
    one = _single(field)
    if field.is_repeated:
        return {"type": "array", "items": one}
    return one


def _single(field: FieldDescriptor) -> dict[str, Any]:
    message = field.message_type
    if message is None:
        if field.type not in _SCALARS:
            raise TypeError(f"{field.full_name}: no JSON Schema for proto type {field.type}")
        schema: dict[str, Any] = dict(_SCALARS[field.type])
        if field.type in _UNSIGNED:
            schema["minimum"] = 0
        return schema
    if message.full_name == _TIMESTAMP:
        return {"type": "string", "format": "date-time"}
    if message.name in type_names():
        return inline(message.name)
    return message_schema(message)
