"""A tool's plain arguments, read as the ProtoJSON of its request: the schema a model sees states
each integer type's range (and each float's, each enum's names), never lets through a value
ProtoJSON refuses at those edges, and whatever ProtoJSON still refuses (a leap second) is a tool
error naming the field and its rule, before any call of the stores: never an internal error."""

import asyncio
from typing import Any, ClassVar

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from jsonschema import Draft202012Validator
from mcp import Client

from himga import validation
from himga.mcp import proto_read, server, stores
from himga.mcp.proto_schema import field_schema, fields_schema
from himga.mcp.tools import tools

FLOAT_MAX = float.fromhex("0x1.fffffep+127")
RANGES: dict[str, tuple[int, float] | tuple[float, float] | None] = {
    "int32": (-(2**31), 2**31 - 1),
    "sint32": (-(2**31), 2**31 - 1),
    "sfixed32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "fixed32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "sint64": (-(2**63), 2**63 - 1),
    "sfixed64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
    "fixed64": (0, 2**64 - 1),
    "float": (-FLOAT_MAX, FLOAT_MAX),
    "double": None,  # its bounds are the largest doubles: checked apart
    "enum": None,
}
"""Every numeric and enum type a request field may have, with its range."""
INTEGERS = [name for name in RANGES if "int" in name or "fixed" in name]


def kind_of_every_type() -> Any:
    """A message with a field of each type of RANGES (`enum` of the enum Colour), one of each
    repeated (`many_TYPE`), and a map of uint32 values."""
    file = descriptor_pb2.FileDescriptorProto(name="every.proto", package="every", syntax="proto3")
    colour = file.enum_type.add(name="Colour")
    for number, name in enumerate(("COLOUR_UNSET", "RED", "GREEN")):
        colour.value.add(name=name, number=number)
    message = file.message_type.add(name="Every")
    entry = message.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=FieldDescriptor.TYPE_STRING, label=1)
    entry.field.add(name="value", number=2, type=FieldDescriptor.TYPE_UINT32, label=1)
    number = 0
    for name in RANGES:
        kind = getattr(FieldDescriptor, f"TYPE_{name.upper()}")
        for prefix, label in (("", 1), ("many_", 3)):
            number += 1
            field = message.field.add(name=prefix + name, number=number, type=kind, label=label)
            if name == "enum":
                field.type_name = ".every.Colour"
    message.field.add(
        name="counts", number=number + 1, type=FieldDescriptor.TYPE_MESSAGE, label=3
    ).type_name = ".every.Every.CountsEntry"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("every.Every"))


EVERY = kind_of_every_type()


def parses(value: dict[str, Any]) -> bool:
    try:
        json_format.ParseDict(value, EVERY())
    except Exception:
        return False
    return True


def schema_takes(name: str, value: Any) -> bool:
    schema = field_schema(EVERY.DESCRIPTOR.fields_by_name[name])
    return Draft202012Validator(schema).is_valid(value)


def edges(name: str) -> list[Any]:
    """Values at and past the edges of type `name`, and some that are no number of it."""
    odd = ["1", 1.5, True, None, [1], {"a": 1}, "", 10**400]
    if name == "enum":
        return ["RED", "GREEN", "COLOUR_UNSET", "BLUE", "red", 1, *odd]
    if name == "double":
        top = 1.7976931348623157e308
        return [0, -1.5, top, -top, 10**309, -(10**309), *odd]
    low, high = RANGES[name]  # type: ignore[misc]
    if name == "float":
        return [low, high, 0.5, 3.5e38, -3.5e38, 10**39, *odd]
    return [low, high, low - 1, high + 1, 0, 7.0, high * 2, *odd]


@pytest.mark.parametrize("name", list(RANGES))
def test_the_schema_states_the_range_and_takes_nothing_protojson_refuses(name: str) -> None:
    schema = field_schema(EVERY.DESCRIPTOR.fields_by_name[name])
    Draft202012Validator.check_schema(schema)
    if name == "enum":
        assert schema == {"type": "string", "enum": ["COLOUR_UNSET", "RED", "GREEN"]}
    elif RANGES[name] is not None:
        assert (schema["minimum"], schema["maximum"]) == RANGES[name]
    for field in (name, f"many_{name}"):
        for value in edges(name):
            given = value if field == name else [value]
            if schema_takes(field, given):  # what a model is told it may give, parses
                assert parses({field: given}), (field, value)
            if name in INTEGERS and isinstance(value, int | float) and not isinstance(value, bool):
                # on an integer range's edges, the schema and ProtoJSON agree both ways
                assert schema_takes(field, given) == parses({field: given}), (field, value)


@pytest.mark.parametrize("name", list(RANGES))
def test_what_protojson_refuses_is_named_with_its_rule(name: str) -> None:
    for value in edges(name):
        for field, given, where in (
            (name, value, f"$.{name}"),
            (f"many_{name}", [0 if name != "enum" else "RED", value], f"$.many_{name}[1]"),
        ):
            if parses({field: given}):
                assert proto_read.problems(EVERY, {field: given}) == []
                continue
            (problem,) = proto_read.problems(EVERY, {field: given})
            assert problem.startswith(f"{where}: must be "), problem
            if name == "enum":
                assert "one of COLOUR_UNSET, RED, GREEN" in problem
            elif name in INTEGERS:
                low, high = RANGES[name]  # type: ignore[misc]
                assert problem.endswith(f"an integer from {low} to {high}"), problem
            with pytest.raises(ValueError, match=r"^\$\."):
                proto_read.parse(EVERY, {field: given})


def test_a_map_names_its_key() -> None:
    (problem,) = proto_read.problems(EVERY, {"counts": {"a": 1, "b": 2**32}})
    assert problem == "$.counts.b: must be an integer from 0 to 4294967295"


def integer_arguments() -> list[tuple[str, str, dict[str, Any]]]:
    """Every integer argument of every tool (nested ones too), with its schema."""
    found = []

    def walk(tool: str, path: str, schema: dict[str, Any]) -> None:
        if schema.get("type") == "integer":
            found.append((tool, path, schema))
        for name, inner in schema.get("properties", {}).items():
            walk(tool, f"{path}.{name}" if path else name, inner)

    for name, tool in tools().items():
        for argument, schema in tool.plain.items():
            walk(name, argument, schema)
    return found


def test_every_integer_argument_is_found() -> None:
    assert {(tool, path) for tool, path, _ in integer_arguments()} >= {
        ("recall", "limit"),
        ("recall", "max_context_tokens"),
        ("find_episodes", "limit"),
        ("find_episodes", "max_context_tokens"),
    }


BASE = {
    "recall": {"query": "x"},
    "forget": {"ids": ["a"]},
    "find_episodes": {"task": {"goal": "g"}},
}


@pytest.mark.parametrize(("tool", "path", "schema"), integer_arguments())
def test_a_tool_refuses_an_integer_past_its_range_naming_it(
    tool: str, path: str, schema: dict[str, Any]
) -> None:
    assert (schema["minimum"], schema["maximum"]) == (0, 2**32 - 1)  # all uint32, today
    for value, good in ((2**32 - 1, True), (2**32, False), (10**30, False), (-1, False)):
        arguments: dict[str, Any] = dict(BASE[tool])
        *outer, last = path.split(".")
        place = arguments
        for key in outer:
            place = place.setdefault(key, {})
        place[last] = value
        problems, _ = tools()[tool].check(arguments)
        if good:
            assert problems == []
        else:
            assert len(problems) == 1 and problems[0].startswith(f"$.{path}: "), problems


@pytest.mark.parametrize(
    "time",
    [
        "2024-12-31T23:59:60Z",  # a leap second: RFC 3339's, not a Timestamp's
        "2024-05-08T13:56:00.1234567891Z",  # ten digits past the point
        "0001-01-01T00:30:00+01:00",  # before year 1, in UTC
        "9999-12-31T23:30:00-01:00",  # past year 9999, in UTC
    ],
)
def test_a_time_the_schema_takes_and_a_timestamp_cannot_hold_is_named(time: str) -> None:
    for tool in ("recall", "forget"):
        arguments = {**BASE[tool], "filter": {"after": time, "before": "2030-01-01T00:00:00Z"}}
        assert Draft202012Validator(
            tools()[tool].input_schema(), format_checker=validation.format_checker()
        ).is_valid(arguments)
        problems, _ = tools()[tool].check(arguments)
        assert len(problems) == 1 and problems[0].startswith("$.filter.after: must be an RFC 3339")


def test_a_time_in_lower_case_is_read() -> None:
    arguments = {"query": "x", "filter": {"after": "2024-05-08t13:56:00.5z"}}
    assert tools()["recall"].check(arguments)[0] == []
    request: Any = proto_read.parse(tools()["recall"].request, arguments)
    assert request.filter.after.ToJsonString() == "2024-05-08T13:56:00.500Z"


def test_every_wrong_field_is_named_at_once() -> None:
    arguments = {
        "query": "x",
        "limit": 2**32,
        "max_context_tokens": -1,
        "filter": {"after": "2024-12-31T23:59:60Z"},
    }
    problems, _ = tools()["recall"].check(arguments)
    assert sorted(p.split(":")[0] for p in problems) == [
        "$.filter.after",
        "$.limit",
        "$.max_context_tokens",
    ]


def test_the_request_schemas_derive_from_the_proto() -> None:
    pb = tools()["recall"].request
    assert fields_schema(pb.DESCRIPTOR, ("limit",)) == {
        "limit": {"type": "integer", "minimum": 0, "maximum": 4294967295}
    }


class Untouched:
    """Stores no call may reach."""

    kept = False
    calls: ClassVar[list[str]] = []

    def call(self, method: str, request: Any, alive: Any) -> Any:
        self.calls.append(method)
        raise AssertionError(f"{method} reached the stores")

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("recall", {"query": "x", "limit": 2**32}, "$.limit"),
        ("recall", {"query": "x", "max_context_tokens": 2**32}, "$.max_context_tokens"),
        ("recall", {"query": "x", "limit": 10**30}, "$.limit"),
        ("find_episodes", {"task": {"goal": "g"}, "limit": 2**32}, "$.limit"),
        (
            "find_episodes",
            {"task": {"goal": "g"}, "max_context_tokens": 2**32},
            "$.max_context_tokens",
        ),
        ("recall", {"query": "x", "filter": {"before": "2024-12-31T23:59:60Z"}}, "$.filter.before"),
        ("forget", {"filter": {"after": "2024-12-31T23:59:60Z"}}, "$.filter.after"),
    ],
)
def test_over_the_protocol_a_value_protojson_refuses_is_a_tool_error_naming_it(
    tool: str, arguments: dict[str, Any], field: str, caplog: pytest.LogCaptureFixture
) -> None:
    held = stores.Opening(lambda: Untouched(), kept=False)  # type: ignore[arg-type, return-value]

    async def main() -> str:
        async with Client(server.create(held, "ns")) as client:
            result = await client.call_tool(tool, arguments)
            assert result.is_error
            return result.content[0].text  # type: ignore[union-attr]

    try:
        text = asyncio.run(main())
    finally:
        held.close()
    assert text.startswith(f"{field}: "), text
    assert "internal error" not in text and "failed" not in caplog.text
    assert Untouched.calls == []
