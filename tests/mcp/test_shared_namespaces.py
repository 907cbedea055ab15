"""`himga mcp --data-dir D` and `himga serve --data-dir D` hold the same namespaces: what one
writes (messages and episodes), the other finds, both ways, each door run as its own process
as a user runs them (the MCP one through the SDK's client over stdio)."""

import asyncio
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from himga.data.conversation import Message, Session
from himga.records import TaskContext
from himga.service import RemoteEpisodes, RemoteMemory
from tests.episodes.helpers import episode
from tests.server_process import start_listening

NAMESPACE = "shared.doors"
KEPT = ("access_count", "last_accessed")


@contextmanager
def served(data_dir: Path) -> Iterator[str]:
    """`himga serve --data-dir data_dir` on a free port: its target."""
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--data-dir", str(data_dir)]
    process, target = start_listening(command)
    assert process.stderr is not None
    threading.Thread(target=process.stderr.read, daemon=True).start()
    try:
        yield target
    finally:
        process.terminate()
        process.wait()


def over_mcp(data_dir: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The structured answers of `calls`, made through `himga mcp --data-dir data_dir`."""
    command = [sys.executable, "-m", "himga", "mcp", "--data-dir", str(data_dir)]
    parameters = StdioServerParameters(
        command=command[0], args=[*command[1:], "--namespace", NAMESPACE]
    )

    async def main() -> list[dict[str, Any]]:
        answers = []
        async with Client(parameters) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.content
                assert result.structured_content is not None
                answers.append(result.structured_content)
        return answers

    return asyncio.run(main())


def test_what_mcp_writes_the_server_finds(tmp_path: Path) -> None:
    trace = {k: v for k, v in episode(1).to_dict().items() if k not in KEPT}
    said, recorded = over_mcp(
        tmp_path,
        [
            ("remember", {"text": "The spare key is under the blue flowerpot."}),
            ("record_episode", {"episode": trace}),
        ],
    )
    with served(tmp_path) as target:
        memory = RemoteMemory(target, NAMESPACE)
        episodes = RemoteEpisodes(target, NAMESPACE)
        try:
            context, hits = memory.recall("where is the spare key")
            assert [hit.turn_id for hit in hits] == said["ids"]
            assert "blue flowerpot" in context
            assert episodes.get(recorded["id"]).id == trace["id"]
            found = episodes.search(TaskContext(goal=trace["context"]["goal"]))
            assert [hit.episode.id for hit in found.hits] == [trace["id"]]
        finally:
            memory.close()
            episodes.close()


def test_what_the_server_writes_mcp_finds(tmp_path: Path) -> None:
    trace = episode(2)
    with served(tmp_path) as target:
        memory = RemoteMemory(target, NAMESPACE)
        episodes = RemoteEpisodes(target, NAMESPACE)
        try:
            session = Session(session_id="s1", date_str="8 May 2023")
            message = Message(role="Ana", content="My bike is the green one by the gate.")
            (stored,) = memory.store([(message, session)])
            episodes.record(trace)
        finally:
            memory.close()
            episodes.close()
    found, similar, forgot = over_mcp(
        tmp_path,
        [
            ("recall", {"query": "which bike is mine"}),
            ("find_episodes", {"task": {"goal": trace.goal}}),
            ("forget", {"ids": [stored]}),
        ],
    )
    assert [hit["turn_id"] for hit in found["hits"]] == [stored]
    assert "green one by the gate" in found["context"]
    assert [hit["episode"]["id"] for hit in similar["hits"]] == [trace.id]
    assert forgot["deleted"] == 1
