"""`himga mcp` end to end, through the SDK's own client over both transports: stdio (the
command spawned as a desktop agent spawns it, on embedded stores) and streamable HTTP (in front
of a running memory server). Each lists the tools, checks their schemas and hints, remembers a
LoCoMo conversation and a plain sentence, recalls an evidence turn, refuses a malformed call
naming the field, records an episode (with and without an id and a timestamp) and finds it,
and forgets a session. The SDK's client checks every structured answer against the tool's
output schema."""

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from himga import validation
from himga.data.locomo import load_locomo
from himga.mcp.handshake import NOWHERE
from himga.memory.filters import MessageFilter
from himga.timeutil import parse_utc_datetime
from tests.episodes.helpers import episode
from tests.server_process import start_listening

LOCOMO = Path(__file__).resolve().parents[1] / "fixtures/locomo/locomo-mini.json"
TOOLS = {"remember", "recall", "forget", "record_episode", "find_episodes"}
KEPT = ("access_count", "last_accessed")
"""What the episode store keeps of an episode (record_episode refuses them)."""
BARE = ("id", "timestamp", *KEPT)
"""What record_episode makes or the store keeps: a model need not give them."""
RECORDS = {
    "remember": {"messages": "Message", "session": "Session"},
    "record_episode": {"episode": "EpisodeTrace"},
    "find_episodes": {"task": "TaskContext"},
}


def check_schemas(tools: dict[str, dict[str, Any]]) -> None:
    for name, schema in tools.items():
        Draft202012Validator.check_schema(schema)
        assert "$ref" not in json.dumps(schema)  # inlined: nothing for a host to fetch
        for argument, type_name in RECORDS.get(name, {}).items():
            shape = schema["properties"][argument]
            shipped = validation.schema_for(type_name)
            assert set(shape.get("items", shape)["properties"]) <= set(shipped["properties"])
    for name in ("recall", "forget"):
        criteria = tools[name]["properties"]["filter"]["properties"]
        assert set(criteria) == {f.name for f in fields(MessageFilter)}
    assert tools["recall"]["required"] == ["query"]


async def structured(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def exercise(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    assert all(tool.description for tool in listed.values())
    schemas = {name: tool.input_schema for name, tool in listed.items()}
    check_schemas(schemas)
    for tool in listed.values():
        assert tool.output_schema is not None and tool.annotations is not None
    assert {n for n, t in listed.items() if t.annotations and t.annotations.read_only_hint} == {
        "recall",
        "find_episodes",
    }
    assert listed["forget"].annotations.destructive_hint  # type: ignore[union-attr]

    sample = load_locomo(LOCOMO)[0]
    for session in sample.sessions:
        call = {
            "messages": [m.model_dump(mode="json", exclude_unset=True) for m in session.messages],
            "session": {"session_id": session.session_id, "date_str": session.date_str},
        }
        assert not list(Draft202012Validator(schemas["remember"]).iter_errors(call))
        stored = await structured(client, "remember", call)
        assert len(stored["ids"]) == len(session.messages)

    said = await structured(client, "remember", {"text": "My sister's cat is called Miso."})
    assert said["session_id"] == f"mcp-{datetime.now(UTC):%Y-%m-%d}"
    found = await structured(client, "recall", {"query": "what is the cat called"})
    assert said["ids"][0] in [hit["turn_id"] for hit in found["hits"]]
    assert "Miso" in found["context"]
    (hit,) = [hit for hit in found["hits"] if hit["turn_id"] == said["ids"][0]]
    assert hit["role"] == "user"
    assert abs(parse_utc_datetime(hit["time"]) - datetime.now(UTC)) < timedelta(minutes=5)

    qa = next(qa for qa in sample.qa_pairs if len(qa.evidence) == 1)
    found = await structured(client, "recall", {"query": qa.question, "limit": 5})
    assert qa.evidence[0] in [hit["turn_id"] for hit in found["hits"]]
    assert found["context"]

    bad = await client.call_tool("remember", {"messages": [{"role": 7}], "session": {}})
    assert bad.is_error
    text = bad.content[0].text  # type: ignore[union-attr]
    assert "$.messages[0].role" in text and "$.messages[0].content" in text
    bad = await client.call_tool("recall", {"query": "dog", "filter": {"after": "yesterday"}})
    assert bad.is_error and "$.filter.after" in bad.content[0].text  # type: ignore[union-attr]
    bad = await client.call_tool("recall", {"query": "dog", "limit": 5000})  # the core refuses
    assert bad.is_error and "limit: must be at most 1000" in bad.content[0].text  # type: ignore[union-attr]

    trace = {k: v for k, v in episode(1).to_dict().items() if k not in KEPT}
    assert (await structured(client, "record_episode", {"episode": trace}))["id"] == trace["id"]
    task = {"goal": trace["context"]["goal"]}
    hits = (await structured(client, "find_episodes", {"task": task}))["hits"]
    assert [hit["episode"]["id"] for hit in hits] == [trace["id"]]
    bare = {key: value for key, value in episode(2).to_dict().items() if key not in BARE}
    made = await structured(client, "record_episode", {"episode": bare})
    assert made["id"].startswith(f"ep-{datetime.now(UTC):%Y-%m-%d}-")
    started = parse_utc_datetime(made["timestamp"])
    assert abs(started - datetime.now(UTC)) < timedelta(minutes=5)
    hits = (await structured(client, "find_episodes", {"task": bare["context"]}))["hits"]
    assert made["id"] in [hit["episode"]["id"] for hit in hits]

    first = sample.sessions[0]
    only_first = {"session_ids": [first.session_id]}
    gone = await structured(client, "forget", {"filter": only_first})
    assert gone["deleted"] == len(first.messages)
    left = await structured(client, "recall", {"query": qa.question, "filter": only_first})
    assert left["hits"] == []
    assert (await client.call_tool("forget", {})).is_error  # naming nothing forgets nothing


def test_over_stdio_on_embedded_stores(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "himga", "mcp", "--data-dir", str(tmp_path)]
    parameters = StdioServerParameters(command=command[0], args=command[1:])

    async def main() -> None:
        async with Client(parameters) as client:
            assert client.instructions is not None and NOWHERE not in client.instructions
            await exercise(client)

    asyncio.run(main())
    assert any(tmp_path.iterdir())  # the embedded stores kept their files there


def test_without_a_data_dir_initialize_says_nothing_is_kept() -> None:
    command = [sys.executable, "-m", "himga", "mcp"]
    parameters = StdioServerParameters(command=command[0], args=command[1:])

    async def main() -> str | None:
        async with Client(parameters) as client:
            return client.instructions

    instructions = asyncio.run(main())
    assert instructions is not None
    assert "Nowhere to keep memories" in instructions and "--data-dir" in instructions


@pytest.fixture
def http_url(memory_server: str) -> Iterator[str]:
    """`himga mcp --http-port 0` in front of the test memory server: its /mcp URL."""
    command = [sys.executable, "-m", "himga", "mcp", "--http-port", "0"]
    process, address = start_listening([*command, "--target", memory_server])
    assert process.stderr is not None
    drain = threading.Thread(target=process.stderr.read, daemon=True)
    drain.start()
    try:
        yield f"{address}/mcp"
    finally:
        process.terminate()
        process.wait()


def test_over_streamable_http_before_a_server(http_url: str) -> None:
    async def main() -> None:
        async with Client(http_url) as client:
            assert client.instructions is not None and NOWHERE not in client.instructions
            await exercise(client)

    asyncio.run(main())
