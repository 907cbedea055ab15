"""The memory browser in a real browser (headless Chromium through playwright-core): a LoCoMo
conversation ingested over HTTP is searched in the page, which shows the evidence turn and the
context string; deleting a session in the page removes it from the memory; with auth on, the
page sends the token typed in. Episodes recorded over HTTP are listed and filtered in the page,
and one opens as its timeline: its tool calls, then its errors, in order.

As a person uses it: namespaces are picked from ListNamespaces' pages, or typed where the
server does not list them; an empty list says why and what to do; a failed call (a refused one,
one to a stopped server) is shown with its status and message; messages and episodes page both
ways and a delete keeps its page; the page fits a 400 px window."""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.service import tokens
from himga.service.auth import AuthFile
from himga.service.server import create_server
from tests.http.browsing import drive, episode, post, store_conversation, store_episodes


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
        assert seen["refused"].startswith("Retrieve: unauthenticated (HTTP 401): this server")
        assert set(question.evidence) & set(seen["hits"]) and seen["error"] == ""
    finally:
        server.stop(0).wait()


@pytest.fixture
def stored(base: str) -> str:
    store_conversation(base, "locomo")
    store_episodes(base, "locomo")
    return base


def test_the_picker_pages_through_the_namespaces_and_picks_one(stored: str) -> None:
    """ListNamespaces answered by the page's test as the proto says it answers, over two pages;
    the messages listed are the real server's."""
    seen = drive("picker", stored + "/", "locomo", "listed")
    assert seen["picker"] and seen["error"] == ""
    assert seen["first"] == ["", "agents", "locomo"]
    assert seen["second"] == ["", "zz-last"]
    assert seen["back"] == seen["first"]
    assert seen["namespace"] == "locomo"
    assert len(seen["messages"]) == 11
    # Where the server lists its namespaces, the page can say that one does not exist.
    assert seen["unknown"].startswith("There is no namespace \u201cno-such-namespace\u201d")


def test_the_picker_lists_the_real_servers_namespaces(stored: str) -> None:
    """The server's own ListNamespaces: the namespace the test stored is offered and picked."""
    seen = drive("picker", stored + "/", "locomo", "server")
    assert seen["picker"] and seen["error"] == ""
    assert "locomo" in seen["first"]
    assert seen["namespace"] == "locomo"
    assert len(seen["messages"]) == 11
    assert seen["unknown"].startswith("There is no namespace \u201cno-such-namespace\u201d")


@pytest.mark.parametrize("mode", ["absent", "unimplemented"])
def test_without_list_namespaces_the_namespace_is_typed(stored: str, mode: str) -> None:
    seen = drive("picker", stored + "/", "locomo", mode)
    assert not seen["picker"] and seen["field"]
    assert "does not list its namespaces" in seen["note"]
    assert "type the namespace" in seen["note"]
    assert seen["error"] == ""  # an absent listing is no failure to show
    assert len(seen["messages"]) == 11
    assert "holds no messages: check its name" in seen["unknown"]  # it cannot say more


def test_empty_lists_say_why_and_what_to_do(stored: str) -> None:
    seen = drive("empty", stored + "/", "locomo")
    assert (
        "No message in \u201clocomo\u201d matches \u201czebra xylophone quasar\u201d"
        in (seen["noHits"])
    )
    assert "Try other words" in seen["noHits"]
    # The server lists its namespaces, so the page can say that this one does not exist.
    for said in ("unknownSearch", "unknownMessages", "unknownEpisodes"):
        assert seen[said].startswith(
            "There is no namespace \u201cno-such-namespace\u201d on this server"
        ), seen[said]
    assert "matches these filters: clear some of them" in seen["noEpisodeMatches"]
    assert seen["noNamespace"] == "Pick a namespace above, or type its name, first."
    assert seen["error"] == ""


def test_failed_calls_show_their_status_and_message_a_stopped_server_too() -> None:
    server, _ = create_server("127.0.0.1:0", memory="keyword", http_address=("127.0.0.1", 0))
    base = f"http://127.0.0.1:{server.http_port}"
    store_conversation(base, "locomo")
    stopped = False

    def stop() -> None:
        nonlocal stopped
        server.stop(0).wait()
        stopped = True

    try:
        seen = drive("errors", base + "/", "locomo", between=stop)
    finally:
        if not stopped:
            server.stop(0).wait()
    assert re.match(
        r"Retrieve: invalid_argument \(HTTP 400\): namespace: must be ", seen["refused"]
    )
    assert seen["shown"] and seen["dismissed"]
    assert seen["down"].startswith("ListMessages: unavailable: no answer from the server")


def test_lists_page_both_ways_and_a_delete_keeps_its_page(stored: str) -> None:
    for number in range(4, 8):  # seven episodes: five a page, then two
        trace = episode(f"ep-{number}", "coder", "success")
        post(stored, "EpisodeService", "RecordEpisode", {"namespace": "locomo", "episode": trace})
    seen = drive("paging", stored + "/", "locomo")
    pages = [seen["page1"], seen["page2"], seen["page3"]]
    assert [len(page) for page in pages] == [5, 5, 1]
    assert seen["state1"] == {"page": "page 1", "previous": False, "next": True}
    assert seen["state3"] == {"page": "page 3", "previous": True, "next": False}
    assert seen["page2again"] == seen["page2"]
    # Deleting the first turn of page 2 keeps page 2, which now starts with its second turn
    # and ends with the turn that was on page 3.
    assert seen["stateAfterDelete"]["page"] == "page 2"
    assert seen["afterDelete"] == [*seen["page2"][1:], *seen["page3"]]
    left = post(stored, "MemoryService", "ListMessages", {"namespace": "locomo", "page_size": 50})
    assert seen["page2"][0] not in [m["message"]["turn_id"] for m in left["messages"]]
    assert len(seen["episodes1"]) == 5 and len(seen["episodes2"]) == 2
    assert sorted(seen["episodes1"] + seen["episodes2"]) == [f"ep-{n}" for n in range(1, 8)]
    assert seen["episodesState1"] == {"page": "page 1", "previous": False, "next": True}
    assert seen["episodesState2"] == {"page": "page 2", "previous": True, "next": False}
    assert seen["episodes1again"] == seen["episodes1"]


@pytest.mark.parametrize("width", [400, 800])
def test_the_page_fits_the_window(stored: str, width: int) -> None:
    sample_question = "What breed of dog did Ada adopt?"
    seen = drive("layout", stored + "/", "locomo", sample_question, "ep-1", width=width)
    assert seen["window"] == width
    assert seen["page"] <= width  # nothing scrolls sideways
    assert seen["cells"] <= width  # no cell, field or button is cut at the right
    assert seen["contentLeft"] >= 0 and seen["contentRight"] <= width
    assert seen["squeezed"] == []  # every button holds its label
    assert seen["contentWidth"] >= 200  # room for a line of some 30 characters of content
