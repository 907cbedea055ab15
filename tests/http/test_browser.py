"""The memory browser in a real browser (headless Chromium through playwright-core): a LoCoMo
conversation ingested over HTTP is searched in the page, which shows the evidence turn and the
context string; deleting a session in the page removes it from the memory; with auth on, the
page sends the token typed in. Episodes recorded
over HTTP are listed and filtered in the page, and one opens as its timeline: its tool calls,
then its errors, in order."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.service import tokens
from himga.service.auth import AuthFile
from himga.service.server import create_server
from tests.http.browsing import drive, post, store_conversation, store_episodes


@pytest.fixture
def base() -> Iterator[str]:
    server, _ = create_server("127.0.0.1:0", memory="keyword", http_address=("127.0.0.1", 0))
    yield f"http://127.0.0.1:{server.http_port}"
    server.stop(0).wait()


def test_search_and_delete_a_session_in_the_page(base: str, tmp_path: Path) -> None:
    sample = store_conversation(base, "locomo")
    question = sample.qa_pairs[0]
    gone = sample.sessions[-1].session_id
    png = tmp_path / "page.png"
    seen = drive("messages", base + "/", "locomo", question.question, gone, str(png))
    assert set(question.evidence) & set(seen["hits"]), seen["hits"]
    assert seen["context"].strip()
    assert gone in seen["before"] and gone not in seen["after"]
    left = post(base, "MemoryService", "ListMessages", {"namespace": "locomo", "page_size": 1000})
    assert all(m["session"]["session_id"] != gone for m in left["messages"])
    assert png.stat().st_size > 0


def test_episodes_are_listed_filtered_and_opened_as_a_timeline(base: str) -> None:
    store_episodes(base, "agents")
    seen = drive("episodes", base + "/", "agents", "coder", "failure", "ep-1")
    assert sorted(seen["all"]) == ["ep-1", "ep-2", "ep-3"]
    assert seen["filtered"] == ["ep-1"]
    assert seen["title"] == "ep-1: make expired tokens fail the login"
    assert [tuple(item) for item in seen["timeline"]] == [
        ("action", "0s read_file src/auth.py: 140 lines"),
        ("action", "4s run_tests tests/test_auth.py: 1 failed"),
        ("action", "9s edit_file src/auth.py: token check fixed"),
        (
            "error",
            "error test_failure: test_login: expired token accepted -> compare expiry in UTC",
        ),
        ("error", "error lint_error: unused import os (unresolved)"),
    ]


def test_the_page_sends_the_token_typed_in(tmp_path: Path) -> None:
    held = tokens.Tokens()
    secret, _ = held.new(["locomo"], {"read", "write"})
    tokens.save(tmp_path / "auth.json", held)
    server, _ = create_server(
        "127.0.0.1:0",
        memory="keyword",
        auth=AuthFile(tmp_path / "auth.json"),
        http_address=("127.0.0.1", 0),
    )
    try:
        base = f"http://127.0.0.1:{server.http_port}"
        sample = store_conversation(base, "locomo", token=secret)
        question = sample.qa_pairs[0]
        seen = drive("token", base + "/", "locomo", question.question, secret)
        assert seen["refused"].startswith("Retrieve: unauthenticated: ")
        assert set(question.evidence) & set(seen["hits"]) and seen["error"] == ""
    finally:
        server.stop(0).wait()
