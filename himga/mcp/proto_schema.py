"""The JSON Schema of a proto message's fields, read from its descriptor: what a tool argument
taken from a request of the proto accepts, as ProtoJSON reads it (json_format.ParseDict).

A message field whose proto type mirrors a shipped schema (Message, Session, TaskContext,
EpisodeTrace) takes that schema, inlined (himga.mcp.records_schema); a Timestamp is an RFC 3339
string; a map<string, string> is an object of strings; an integer states its type's range, a
float or double its largest magnitude, an enum its names. A field of any other kind is
refused, so a new kind fails the tests until it has a mapping here. What the schema lets
through and ProtoJSON still refuses (a leap second, a time past year 9999 once its offset is
applied) himga.mcp.proto_read names, field by field."""

import sys
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from himga.mcp.records_schema import inline
from himga.validation import type_names

_32 = 2**31
_64 = 2**63
_INTEGERS = {
    FieldDescriptor.TYPE_INT32: (-_32, _32 - 1),
    FieldDescriptor.TYPE_SINT32: (-_32, _32 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-_32, _32 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2 * _32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2 * _32 - 1),
    FieldDescriptor.TYPE_INT64: (-_64, _64 - 1),
    FieldDescriptor.TYPE_SINT64: (-_64, _64 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-_64, _64 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2 * _64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2 * _64 - 1),
}
"""Each integer type's range, as ProtoJSON reads it (a value past it does not parse)."""
_FLOAT_MAX = float.fromhex("0x1.fffffep+127")
_DOUBLE_MAX = sys.float_info.max
_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_DOUBLE: {
        "type": "number",
        "minimum": -_DOUBLE_MAX,
        "maximum": _DOUBLE_MAX,
    },
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "minimum": -_FLOAT_MAX, "maximum": _FLOAT_MAX},
    **{
        kind: {"type": "integer", "minimum": low, "maximum": high}
        for kind, (low, high) in _INTEGERS.items()
    },
}
"""The schema of each scalar type: the values ProtoJSON reads as it (ProtoJSON also reads a
64-bit integer or a float written as a string, "NaN" and "Infinity": a schema that takes fewer
values than the parser is safe; one that takes more is a tool error the schema did not
announce)."""
_TIMESTAMP = "google.protobuf.Timestamp"


def integer_range(field: FieldDescriptor) -> tuple[int, int] | None:
    """The range of an integer field's values (None: not an integer)."""
    return _INTEGERS.get(field.type)


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
        if field.enum_type is not None:  # by name (ProtoJSON reads numbers too)
            return {"type": "string", "enum": [value.name for value in field.enum_type.values]}
        if field.type not in _SCALARS:
            raise TypeError(f"{field.full_name}: no JSON Schema for proto type {field.type}")
        return dict(_SCALARS[field.type])
    if message.full_name == _TIMESTAMP:
        return {"type": "string", "format": "date-time"}
    if message.name in type_names():
        return inline(message.name)
    return message_schema(message)
