"""The proto's Message and Session mirror the JSON Schemas field for field, and every valid
conformance vector of them survives a ProtoJSON round trip unchanged.

A proto message mirrors the schema whose title is its name. Keys starting with `$` (`$schema`)
are document metadata, not data: the proto does not carry them, so the comparison and the round
trip leave them out. Absent properties with a schema `default` come back with that default
(ProtoJSON prints an empty repeated field as `[]`).
"""

import copy
import json
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from himga_proto.memory.v1 import memory_pb2

from himga import validation

VECTOR_DIR = Path(__file__).resolve().parents[2] / "schemas" / "conformance"

# The proto field types each JSON Schema type may be carried as.
COMPATIBLE: dict[str, set[int]] = {
    "string": {FieldDescriptor.TYPE_STRING},
    "integer": {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
    },
    "number": {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT},
    "boolean": {FieldDescriptor.TYPE_BOOL},
}
# The proto message each JSON Schema format is carried as: a well-known type whose ProtoJSON
# form is that format (a Timestamp prints as an RFC 3339 string in UTC with `Z`).
FORMATS = {"date-time": "google.protobuf.Timestamp"}

MIRRORED = sorted(set(memory_pb2.DESCRIPTOR.message_types_by_name) & set(validation.type_names()))


def data_properties(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.get("properties", {}).items() if not k.startswith("$")}


def mirror_problems(descriptor: Descriptor, schema: dict[str, Any]) -> list[str]:
    """Every way the proto message differs from the schema: a field in one and not the other,
    another name or json_name, an incompatible type, another optionality."""
    name = schema["title"]
    properties = data_properties(schema)
    required = set(schema.get("required", ()))
    fields = {f.json_name: f for f in descriptor.fields}
    problems = [
        f"{name}.{k}: in the schema, not in the proto" for k in properties.keys() - fields.keys()
    ]
    problems += [
        f"{name}.{k}: in the proto, not in the schema" for k in fields.keys() - properties.keys()
    ]
    for key in sorted(properties.keys() & fields.keys()):
        field, prop = fields[key], properties[key]
        if field.name != key:
            problems.append(f"{name}.{key}: the proto field is called {field.name!r}")
        if prop.get("type") == "array":
            if not field.is_repeated:
                problems.append(f"{name}.{key}: an array in the schema, not repeated in the proto")
            prop = prop.get("items", {})
        elif prop.get("type") == "object" and isinstance(prop.get("additionalProperties"), dict):
            if not is_map(field):
                problems.append(f"{name}.{key}: a map in the schema, not a map in the proto")
                continue
            # A map's keys are strings in both; its values must agree like any field's.
            field = field.message_type.fields_by_name["value"]
            prop = prop["additionalProperties"]
        elif field.is_repeated:
            problems.append(f"{name}.{key}: repeated in the proto, not an array in the schema")
        elif field.has_presence == (key in required):
            problems.append(
                f"{name}.{key}: {'required' if key in required else 'optional'} in the schema, "
                f"but the proto field {'has' if field.has_presence else 'lacks'} presence"
            )
        problems += type_problems(f"{name}.{key}", field, prop, schema["$id"])
    return sorted(problems)


def is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def type_problems(where: str, field: FieldDescriptor, prop: dict[str, Any], base: str) -> list[str]:
    held = field.message_type.full_name if field.message_type is not None else None
    if "$ref" in prop:
        wanted = validation.type_for_id(urljoin(base, prop["$ref"]))
        held = field.message_type.name if field.message_type is not None else None
        return [] if held == wanted else [f"{where}: {wanted} in the schema, {held} in the proto"]
    if prop.get("format") in FORMATS or held in FORMATS.values():
        wanted = FORMATS.get(prop.get("format", ""))
        return [] if held == wanted else [f"{where}: {wanted} in the schema, {held} in the proto"]
    if is_map(field):
        return [f"{where}: {prop.get('type')} in the schema, a map in the proto"]
    json_type = prop.get("type")
    if field.type not in COMPATIBLE.get(json_type, set()):
        return [f"{where}: {json_type} in the schema, proto type {field.type} is not compatible"]
    return []


def test_the_proto_mirrors_message_and_session() -> None:
    assert {"Message", "Session"} <= set(MIRRORED)


@pytest.mark.parametrize("type_name", MIRRORED)
def test_proto_message_mirrors_its_schema(type_name: str) -> None:
    descriptor = memory_pb2.DESCRIPTOR.message_types_by_name[type_name]
    assert mirror_problems(descriptor, validation.schema_for(type_name)) == []


def _changed(type_name: str, change: str) -> dict[str, Any]:
    schema = copy.deepcopy(validation.schema_for(type_name))
    properties = schema["properties"]
    if change == "extra property":
        properties["mood"] = {"type": "string"}
    elif change == "missing property":
        del properties["turn_id"]
    elif change == "incompatible type":
        properties["turn_id"] = {"type": "integer"}
    elif change == "optionality":
        schema["required"].append("turn_id")
    elif change == "array item type":
        properties["messages"]["items"] = {"$ref": "session.json"}
    elif change == "not an array":
        properties["messages"] = {"type": "string"}
    elif change == "date-time as a plain string":
        properties["timestamp"] = {"type": "string"}
    elif change == "a string as a date-time":
        properties["turn_id"] = {"type": "string", "format": "date-time"}
    elif change == "map values":
        properties["metadata"]["additionalProperties"] = {"type": "integer"}
    elif change == "not a map":
        properties["metadata"] = {"type": "string"}
    elif change == "a string as a map":
        properties["turn_id"] = {"type": "object", "additionalProperties": {"type": "string"}}
    return schema


@pytest.mark.parametrize(
    ("type_name", "change", "problem"),
    [
        ("Message", "extra property", "Message.mood: in the schema, not in the proto"),
        ("Message", "missing property", "Message.turn_id: in the proto, not in the schema"),
        ("Message", "incompatible type", "Message.turn_id: integer in the schema"),
        ("Message", "optionality", "Message.turn_id: required in the schema"),
        (
            "Session",
            "array item type",
            "Session.messages: Session in the schema, Message in the proto",
        ),
        ("Session", "not an array", "Session.messages: repeated in the proto"),
        ("Message", "date-time as a plain string", "Message.timestamp: None in the schema"),
        ("Message", "a string as a date-time", "Message.turn_id: google.protobuf.Timestamp in"),
        ("Message", "map values", "Message.metadata: integer in the schema"),
        ("Message", "not a map", "Message.metadata: string in the schema, a map in the proto"),
        ("Message", "a string as a map", "Message.turn_id: a map in the schema, not a map"),
    ],
)
def test_the_check_finds_each_kind_of_difference(type_name: str, change: str, problem: str) -> None:
    descriptor = memory_pb2.DESCRIPTOR.message_types_by_name[type_name]
    problems = mirror_problems(descriptor, _changed(type_name, change))
    assert any(p.startswith(problem) for p in problems), problems


def valid_vectors() -> list[Any]:
    """(type, document) of every valid vector of a mirrored type, from any vector file."""
    found = []
    for path in sorted(VECTOR_DIR.glob("*.json")):
        groups = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(groups, list):
            continue  # the vector files' own schema
        for group in groups:
            type_name = validation.type_for_id(group["schema"]["$ref"])
            if type_name not in MIRRORED:
                continue
            for test in group["tests"]:
                if test["valid"]:
                    case_id = f"{path.stem}: {group['description']}: {test['description']}"
                    found.append(pytest.param(type_name, test["data"], id=case_id))
    return found


VALID_VECTORS = valid_vectors()


def test_there_are_vectors_for_every_mirrored_type() -> None:
    assert {v.values[0] for v in VALID_VECTORS} == set(MIRRORED)


def without_metadata(document: Any) -> Any:
    """The document without `$`-keys, at any depth."""
    if isinstance(document, dict):
        return {k: without_metadata(v) for k, v in document.items() if not k.startswith("$")}
    if isinstance(document, list):
        return [without_metadata(v) for v in document]
    return document


def with_defaults(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The document with each absent property that has a schema default set to it, at any depth."""
    out = dict(document)
    for key, prop in data_properties(schema).items():
        if key not in out and "default" in prop:
            out[key] = copy.deepcopy(prop["default"])
        item_ref = prop.get("items", {}).get("$ref") if prop.get("type") == "array" else None
        if item_ref and isinstance(out.get(key), list):
            item_schema = validation.schema_for(
                validation.type_for_id(urljoin(schema["$id"], item_ref))
            )
            out[key] = [with_defaults(item, item_schema) for item in out[key]]
    return out


@pytest.mark.parametrize(("type_name", "document"), VALID_VECTORS)
def test_valid_vector_round_trips_through_protojson(type_name: str, document: Any) -> None:
    data = without_metadata(document)
    message = json_format.ParseDict(data, getattr(memory_pb2, type_name)())
    printed = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    assert printed == with_defaults(data, validation.schema_for(type_name))
    assert validation.is_valid(printed, type_name)
