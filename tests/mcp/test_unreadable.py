"""A line on `himga mcp`'s stdin that is not a JSON-RPC message gets JSON-RPC's error for it
(himga.mcp.unreadable), where the SDK alone answered nothing and the host waited: not JSON, a
parse error with id null; JSON that is no message, an invalid request under its id if it has
one. The session goes on, before `initialize` as after it."""

import json

import mcp_types as types
import pytest

from tests.mcp.test_handshake import exchange, initialize

INITIALIZE = json.dumps(initialize("2025-06-18"))
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
LIST = json.dumps({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})


@pytest.mark.parametrize(
    ("line", "answer_id", "code"),
    [
        ("this is not json", None, types.PARSE_ERROR),
        ('{"jsonrpc": "2.0", "id": 7, "method": ', None, types.PARSE_ERROR),
        ('{"jsonrpc": "2.0", "id": 7}', 7, types.INVALID_REQUEST),
        ('{"jsonrpc": "1.0", "id": "a", "method": "ping"}', "a", types.INVALID_REQUEST),
        ('{"id": true, "method": "ping"}', None, types.INVALID_REQUEST),
        ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', None, types.INVALID_REQUEST),
        ('{"jsonrpc": "2.0", "id": false, "method": "tools/list"}', None, types.INVALID_REQUEST),
        ("[1, 2]", None, types.INVALID_REQUEST),
        ('"ping"', None, types.INVALID_REQUEST),
    ],
)
def test_a_line_that_is_no_message_is_answered_and_the_session_goes_on(
    line: str, answer_id: int | str | None, code: int
) -> None:
    found, log = exchange([INITIALIZE, INITIALIZED, line, LIST], 3)
    assert found[0]["id"] == 1 and "result" in found[0]
    assert found[1]["id"] == answer_id and found[1]["error"]["code"] == code
    assert found[1]["error"]["message"].startswith(
        "parse error" if code == types.PARSE_ERROR else "invalid request"
    )
    assert found[2]["id"] == "list" and found[2]["result"]["tools"]
    assert f"refused a line on stdin ({code})" in log


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   \t",
        '{"jsonrpc": "2.0", "id": 5, "result": "not an object"}',
        '{"jsonrpc": "2.0", "id": 5, "error": {"code": "not a number"}}',
    ],
)
def test_a_blank_line_or_a_broken_response_gets_no_answer(line: str) -> None:
    # JSON-RPC answers no response: the client would take an error under its id for the answer
    # to its own request 5.
    found, log = exchange([INITIALIZE, INITIALIZED, line, LIST], 2)
    assert [answer["id"] for answer in found] == [1, "list"]
    assert "refused a line" not in log


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("null", "id is null"),
        ("true", "id is true"),
        ("1.5", "id is the number 1.5, not an integer"),
        ("[1]", "id is an array"),
        ('{"n": 1}', "id is an object"),
    ],
)
def test_a_request_whose_id_is_no_string_or_integer_is_refused_naming_it(
    given: str, named: str
) -> None:
    # The SDK's models read such a request as a notification: no answer, and a client waiting.
    line = f'{{"jsonrpc": "2.0", "id": {given}, "method": "tools/list"}}'
    found, _ = exchange([INITIALIZE, INITIALIZED, line, LIST], 3)
    assert found[1]["id"] is None and found[1]["error"]["code"] == types.INVALID_REQUEST
    assert named in found[1]["error"]["message"]
    assert "must be a string or an integer" in found[1]["error"]["message"]
    assert found[2]["id"] == "list" and found[2]["result"]["tools"]


def test_a_byte_order_mark_before_a_line_is_passed_over() -> None:
    # RFC 8259 lets a parser ignore one; some Windows tools write one before what they pipe.
    found, log = exchange(["\ufeff" + INITIALIZE, INITIALIZED, "\ufeff" + LIST], 2)
    assert found[0]["id"] == 1 and found[0]["result"]["serverInfo"]["name"] == "himga"
    assert found[1]["id"] == "list" and found[1]["result"]["tools"]
    assert "refused a line" not in log and "otherwise than himga did" not in log


def test_before_initialize_too() -> None:
    found, _ = exchange(["not json", INITIALIZE, INITIALIZED, LIST], 3)
    assert found[0]["error"]["code"] == types.PARSE_ERROR
    assert [answer["id"] for answer in found[1:]] == [1, "list"]
