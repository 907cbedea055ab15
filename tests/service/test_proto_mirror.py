"""The proto's messages mirror the JSON Schemas field for field (Message, Session, EpisodeTrace
and its EpisodeContext, ActionEntry, ErrorEntry, TaskContext), and every valid conformance
vector of them survives a ProtoJSON round trip unchanged and still valid.

A proto message mirrors the schema (or the schema's `$defs` entry) whose title is its name. Keys
starting with `$` (`$schema`) are document metadata, not data: the proto does not carry them,
so the comparison and the round trip leave them out. An absent property and its schema
`default` are the same data (ProtoJSON prints an empty repeated field as `[]`, and leaves an
unset `optional` out). Two mappings are the proto's documented rules: a date-time is a
google.protobuf.Timestamp, compared as an instant (ProtoJSON writes `Z` and 0, 3, 6 or 9
fractional digits); an integer is a 32-bit integer or a double, never a 64-bit integer, which
ProtoJSON would write as a string the schema rejects; a double that carries an integer is
marked `(whole_number)` in the proto (so that the JSON writers write it as one), a number's is
not; and a field is marked `(required)` exactly when the schema requires its property.
"""

import copy
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from himga_proto.memory.v1 import memory_pb2, options_pb2

from himga import validation

VECTOR_DIR = Path(__file__).resolve().parents[2] / "schemas" / "conformance"

# The proto field types each JSON Schema type may be carried as.
COMPATIBLE: dict[str, set[int]] = {
    "string": {FieldDescriptor.TYPE_STRING},
    "integer": {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_DOUBLE,
    },
    "number": {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT},
    "boolean": {FieldDescriptor.TYPE_BOOL},
}
# The proto message each JSON Schema format is carried as: a well-known type whose ProtoJSON
# form is that format (a Timestamp prints as an RFC 3339 string in UTC with `Z`).
FORMATS = {"date-time": "google.protobuf.Timestamp"}

TIMESTAMP = "google.protobuf.Timestamp"


def all_schemas() -> dict[str, tuple[dict[str, Any], str]]:
    """Every shipped schema and every titled `$defs` entry, by title, with the `$id` its
    references are resolved against."""
    found = {}
    for name in validation.type_names():
        schema = validation.schema_for(name)
        found[name] = (schema, schema["$id"])
        for sub in schema.get("$defs", {}).values():
            found[sub["title"]] = (sub, schema["$id"])
    return found


SCHEMAS = all_schemas()
MIRRORED = sorted(set(memory_pb2.DESCRIPTOR.message_types_by_name) & set(SCHEMAS))


def resolve(ref: str, base: str) -> tuple[dict[str, Any], str]:
    """The schema a `$ref` names, and the `$id` of the file it is in."""
    uri = urljoin(base, ref)
    document, _, fragment = uri.partition("#")
    if fragment:
        name = fragment.rsplit("/", 1)[-1]
        return SCHEMAS[name][0], document
    return validation.schema_for(validation.type_for_id(document)), document


def data_properties(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.get("properties", {}).items() if not k.startswith("$")}


def mirror_problems(descriptor: Descriptor, schema: dict[str, Any], base: str = "") -> list[str]:
    """Every way the proto message differs from the schema: a field in one and not the other,
    another name or json_name, an incompatible type, another optionality.

    Optionality: a required property has no presence in the proto (a message field has it
    always; the server then reports it missing); an optional one with no default, a null
    default, or a default other than the proto's zero value has presence, so that "absent"
    stays absent; an optional one whose default is the zero value ("", 0) needs none."""
    base = base or schema["$id"]
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
        elif field.has_presence != needs_presence(key in required, prop, field):
            problems.append(
                f"{name}.{key}: {'required' if key in required else 'optional'} in the schema, "
                f"but the proto field {'has' if field.has_presence else 'lacks'} presence"
            )
        marked = field.GetOptions().Extensions[options_pb2.required]
        if marked != (key in required):
            problems.append(
                f"{name}.{key}: {'required' if key in required else 'optional'} in the schema, "
                f"but the proto field is {'' if marked else 'not '}marked (required)"
            )
        problems += type_problems(f"{name}.{key}", field, prop, base)
    return sorted(problems)


def needs_presence(required: bool, prop: dict[str, Any], field: FieldDescriptor) -> bool:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return True  # a message field always has it
    if required:
        return False
    default = prop.get("default")
    return default is None or default not in ("", 0)


def is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def type_problems(where: str, field: FieldDescriptor, prop: dict[str, Any], base: str) -> list[str]:
    held = field.message_type.full_name if field.message_type is not None else None
    if "$ref" in prop:
        target, _ = resolve(prop["$ref"], base)
        if target.get("type") == "object":
            wanted = target["title"]
            held_name = field.message_type.name if field.message_type is not None else None
            if held_name == wanted:
                return []
            return [f"{where}: {wanted} in the schema, {held_name} in the proto"]
        prop = target
    if prop.get("format") == "date-time":
        if held == TIMESTAMP:
            return []
        return [f"{where}: a date-time in the schema, not a {TIMESTAMP} in the proto"]
    if is_map(field):
        return [f"{where}: {prop.get('type')} in the schema, a map in the proto"]
    json_types = prop.get("type")
    json_types = [json_types] if isinstance(json_types, str) else list(json_types or [])
    for json_type in (t for t in json_types if t != "null"):
        if held is not None or field.type not in COMPATIBLE.get(json_type, set()):
            return [
                f"{where}: {json_type} in the schema, proto type {field.type} is not compatible"
            ]
        whole = field.GetOptions().Extensions[options_pb2.whole_number]
        if field.type == FieldDescriptor.TYPE_DOUBLE and whole != (json_type == "integer"):
            return [
                f"{where}: {json_type} in the schema, but the proto double is "
                f"{'' if whole else 'not '}marked (whole_number)"
            ]
    return []


def test_the_proto_mirrors_every_record_type() -> None:
    assert set(MIRRORED) == {
        "ActionEntry",
        "EpisodeContext",
        "EpisodeTrace",
        "ErrorEntry",
        "Message",
        "Session",
        "TaskContext",
    }


@pytest.mark.parametrize("type_name", MIRRORED)
def test_proto_message_mirrors_its_schema(type_name: str) -> None:
    descriptor = memory_pb2.DESCRIPTOR.message_types_by_name[type_name]
    assert mirror_problems(descriptor, *SCHEMAS[type_name]) == []


def _changed(type_name: str, change: str) -> dict[str, Any]:
    schema = copy.deepcopy(SCHEMAS[type_name][0])
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
    elif change == "date-time as a string":
        properties["timestamp"] = {"type": "string", "format": "date-time"}
        properties["timestamp"]["format"] = "date"
    elif change == "another default":
        properties["duration_seconds"]["default"] = 60
    elif change == "reference to a string":
        properties["phase"] = {"$ref": "task_context.json"}
    elif change == "date-time as a plain string":
        properties["timestamp"] = {"type": "string"}
    elif change == "a string as a date-time":
        properties["turn_id"] = {"type": "string", "format": "date-time"}
    elif change == "map values":
        properties["metadata"]["additionalProperties"] = {"type": "integer"}
    elif change == "not a map":
        properties["metadata"] = {"type": "string"}
    elif change == "not required":
        schema["required"].remove("role")
    elif change == "a number for a count":
        properties["access_count"]["type"] = "number"
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
        ("EpisodeTrace", "date-time as a string", "EpisodeTrace.timestamp: string in the schema"),
        ("EpisodeTrace", "another default", "EpisodeTrace.duration_seconds: optional in the"),
        ("TaskContext", "reference to a string", "TaskContext.phase: TaskContext in the schema"),
        ("Message", "date-time as a plain string", "Message.timestamp: string in the schema"),
        ("Message", "a string as a date-time", "Message.turn_id: a date-time in the schema"),
        ("Message", "map values", "Message.metadata: integer in the schema"),
        ("Message", "not a map", "Message.metadata: string in the schema, a map in the proto"),
        ("Message", "a string as a map", "Message.turn_id: a map in the schema, not a map"),
        ("Message", "not required", "Message.role: optional in the schema, but the proto field"),
        ("EpisodeTrace", "a number for a count", "EpisodeTrace.access_count: number in the"),
    ],
)
def test_the_check_finds_each_kind_of_difference(type_name: str, change: str, problem: str) -> None:
    descriptor = memory_pb2.DESCRIPTOR.message_types_by_name[type_name]
    problems = mirror_problems(descriptor, _changed(type_name, change), SCHEMAS[type_name][1])
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
    # A `$defs` type (EpisodeContext) has no vector file: its data travels inside its owner's.
    nested = {name for name, (schema, base) in SCHEMAS.items() if schema.get("$id") != base}
    assert {v.values[0] for v in VALID_VECTORS} == set(MIRRORED) - nested


def without_metadata(document: Any) -> Any:
    """The document without `$`-keys, at any depth."""
    if isinstance(document, dict):
        return {k: without_metadata(v) for k, v in document.items() if not k.startswith("$")}
    if isinstance(document, list):
        return [without_metadata(v) for v in document]
    return document


def with_defaults(document: dict[str, Any], schema: dict[str, Any], base: str) -> dict[str, Any]:
    """The document with each absent property that has a schema default set to it, at any depth."""
    out = dict(document)
    for key, prop in data_properties(schema).items():
        if key not in out and "default" in prop:
            out[key] = copy.deepcopy(prop["default"])
        if prop.get("type") == "array" and "$ref" in prop.get("items", {}):
            item_schema, item_base = resolve(prop["items"]["$ref"], base)
            if item_schema.get("type") == "object" and isinstance(out.get(key), list):
                out[key] = [with_defaults(item, item_schema, item_base) for item in out[key]]
        elif "$ref" in prop and isinstance(out.get(key), dict):
            nested, nested_base = resolve(prop["$ref"], base)
            out[key] = with_defaults(out[key], nested, nested_base)
    return out


_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?[Zz]")


def instants(document: Any) -> Any:
    """The document with every RFC 3339 date-time as the instant it names."""
    if isinstance(document, dict):
        return {k: instants(v) for k, v in document.items()}
    if isinstance(document, list):
        return [instants(v) for v in document]
    if isinstance(document, str) and _DATE_TIME.fullmatch(document):
        return datetime.fromisoformat(document.upper().replace("Z", "+00:00"))
    return document


def protojson_input(document: Any) -> Any:
    """The document as ProtoJSON parsers read it: their Timestamp parsers (Python's, Go's)
    take only an upper-case `T` and `Z`, one of RFC 3339's two spellings."""
    if isinstance(document, dict):
        return {k: protojson_input(v) for k, v in document.items()}
    if isinstance(document, list):
        return [protojson_input(v) for v in document]
    if isinstance(document, str) and _DATE_TIME.fullmatch(document):
        return document.upper()
    return document


@pytest.mark.parametrize(("type_name", "document"), VALID_VECTORS)
def test_valid_vector_round_trips_through_protojson(type_name: str, document: Any) -> None:
    data = without_metadata(document)
    message = json_format.ParseDict(protojson_input(data), getattr(memory_pb2, type_name)())
    printed = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    schema, base = SCHEMAS[type_name]
    assert instants(with_defaults(printed, schema, base)) == instants(
        with_defaults(data, schema, base)
    )
    assert validation.is_valid(printed, type_name)
