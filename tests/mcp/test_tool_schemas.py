"""The tools as a host takes them from tools/list: every schema self-contained (a dereferencer
that resolves URLs, run with no network, finds nothing to fetch and validates with it), each
tool at most 4 KB, input schemas that keep the shipped schemas' verdicts on every conformance
vector, output schemas, hints, and what a call may leave out being made."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

from himga import validation
from himga.errors import MAX_VIOLATIONS
from himga.mcp.records_schema import inline
from himga.mcp.server import listing
from himga.mcp.tools import tools

VECTORS = Path(__file__).resolve().parents[2] / "schemas/conformance"
LIMIT = 4096
"""Bytes of a tool's input schema, and of its output schema, as tools/list sends them (compact
JSON)."""
FETCHED: list[str] = []


def refuse_the_network(uri: str) -> Resource[Any]:
    """A retriever for a registry run offline: any fetch is recorded and fails."""
    FETCHED.append(uri)
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


OFFLINE: Registry[Any] = Registry(retrieve=refuse_the_network)  # type: ignore[call-arg]


def listed() -> dict[str, dict[str, Any]]:
    return {
        name: listing(tool).model_dump(mode="json", by_alias=True, exclude_none=True)
        for name, tool in tools().items()
    }


def references(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from references(value)
    elif isinstance(node, list):
        for value in node:
            yield from references(value)


def offline(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(
        schema, registry=OFFLINE, format_checker=validation.format_checker()
    )


@pytest.mark.parametrize("name", sorted(tools()))
def test_each_tool_is_self_contained_and_small(name: str) -> None:
    tool = listed()[name]
    for key in ("inputSchema", "outputSchema"):
        schema = tool[key]
        assert len(json.dumps(schema, separators=(",", ":")).encode()) <= LIMIT
        Draft202012Validator.check_schema(schema)
        FETCHED.clear()
        resolver = OFFLINE.resolver()
        for reference in references(schema):  # only local ones may be there, and resolve
            assert reference.startswith("#/"), reference
            resolver.lookup(reference)
        assert "$id" not in json.dumps(schema) and "https://" not in json.dumps(schema)
        offline(schema).is_valid({})
        assert FETCHED == []


def test_a_host_reads_the_hints() -> None:
    hints = {name: tool["annotations"] for name, tool in listed().items()}
    assert {name for name, h in hints.items() if h["readOnlyHint"]} == {"recall", "find_episodes"}
    assert {name for name, h in hints.items() if h["destructiveHint"]} == {"forget"}
    assert hints["forget"]["idempotentHint"] and not hints["remember"]["idempotentHint"]


def strip_claims(node: Any) -> Any:
    """A document without the optional `$schema` claims (which a tool argument leaves out)."""
    if isinstance(node, dict):
        return {k: strip_claims(v) for k, v in node.items() if k != "$schema"}
    if isinstance(node, list):
        return [strip_claims(v) for v in node]
    return node


def vectors() -> Iterator[tuple[str, str, Any]]:
    for path in sorted(VECTORS.glob("*.json")):
        if path.name == "vectors.schema.json":
            continue
        for group in json.loads(path.read_text(encoding="utf-8")):
            type_name = validation.type_for_id(group["schema"]["$ref"])
            for case in group["tests"]:
                yield type_name, case["description"], case["data"]


@pytest.mark.parametrize(("type_name", "description", "data"), list(vectors()))
def test_an_inlined_schema_keeps_every_verdict(type_name: str, description: str, data: Any) -> None:
    document = strip_claims(data)
    shipped = not validation.validate(document, type_name)
    FETCHED.clear()
    assert offline(inline(type_name)).is_valid(document) == shipped, description
    assert FETCHED == []


def test_vectors_are_read() -> None:
    assert len({type_name for type_name, _, _ in vectors()}) == len(validation.type_names())


def test_remember_makes_the_session_and_the_time() -> None:
    problems, completed = tools()["remember"].check({"text": "The cat is called Miso."})
    assert problems == []
    today = f"{datetime.now(UTC):%Y-%m-%d}"
    assert completed["messages"] == [{"role": "user", "content": "The cat is called Miso."}]
    assert completed["session"]["session_id"] == f"mcp-{today}"
    assert completed["session"]["timestamp"].startswith(today)
    given = {"text": "hi", "role": "Ana", "session": {"session_id": "s1", "date_str": "May 8"}}
    problems, completed = tools()["remember"].check(given)
    assert problems == [] and completed["session"] == given["session"]
    assert completed["messages"] == [{"role": "Ana", "content": "hi"}]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "$.text: is required (or messages)"),
        ({"role": "user", "messages": []}, "$.role: is the speaker of text"),
        ({"text": ""}, "$.text: '' should be non-empty"),
        ({"text": " \n\t"}, "$.text: holds only white space"),
        ({"text": "x", "session": {"session_id": "s", "messages": []}}, "$.session.messages"),
        ({"text": "x", "session": {}}, "$.session.session_id"),
    ],
)
def test_remember_refuses_naming_the_field(arguments: dict[str, Any], expected: str) -> None:
    problems, _ = tools()["remember"].check(arguments)
    assert any(problem.startswith(expected) for problem in problems), problems


@pytest.mark.parametrize("messages", ["x" * 1_000_000, {"role": "user", "content": "hi"}, 7])
def test_remember_refuses_messages_that_are_no_list_in_one_line(messages: object) -> None:
    # A string was read as a list of its characters: a megabyte's became a million problems.
    problems, _ = tools()["remember"].check({"messages": messages, "text": "hi"})
    assert problems == ["$.messages: must be a non-empty list of Message"]


def test_remember_names_the_first_problems_of_many_and_reads_no_further() -> None:
    problems, _ = tools()["remember"].check({"messages": [{"role": 1}] * 100_000})
    assert len(problems) == MAX_VIOLATIONS + 1
    assert problems[0].startswith("$.messages[0].")
    assert problems[-1].endswith("the request was not checked to its end")


def test_record_episode_makes_the_id_and_the_timestamp() -> None:
    bare = {"task_id": "t1", "agent": "coder", "context": {"goal": "fix the build"}}
    problems, completed = tools()["record_episode"].check({"episode": bare})
    assert problems == []
    today = f"{datetime.now(UTC):%Y-%m-%d}"
    assert completed["episode"]["id"].startswith(f"ep-{today}-")
    assert completed["episode"]["timestamp"].startswith(today)
    given = {**bare, "id": "mine", "timestamp": "2024-01-02T03:04:05Z"}
    assert tools()["record_episode"].check({"episode": given}) == ([], {"episode": given})
    problems, _ = tools()["record_episode"].check({"episode": {**bare, "access_count": 3}})
    assert problems == [f"$.episode.access_count: {problems[0].split(': ', 1)[1]}"]
    assert "kept by the store" in problems[0]
    problems, _ = tools()["record_episode"].check({"episode": {"agent": "coder"}})
    assert "$.episode.task_id: is required" in "\n".join(problems)
