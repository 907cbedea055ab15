"""The HTTP port as browsers and HTTP clients meet it: HTTP/2 in cleartext (prior knowledge) as
well as HTTP/1.1, and CORS: off unless origins are given (`--cors-origin`), a preflight from an
allowed origin answered with what the browser needs, any other origin given no allowance."""

import json
import socket
import sys
import time
import urllib.request
from collections.abc import Iterator

import httpx2
import pytest

from himga.service.server import create_server
from tests.http.conftest import MEMORY, Served, answer_of
from tests.ports import free_port
from tests.server_process import start_listening

ALLOWED = "https://app.example"
OTHER = "https://elsewhere.example"
RETRIEVE = MEMORY + "Retrieve"
PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, connect-protocol-version",
}


def test_http2_prior_knowledge_serves_calls_and_pages(served: Served) -> None:
    with httpx2.Client(http1=False, http2=True, base_url=served.base) as client:
        stored = client.post(
            MEMORY + "Ingest",
            json={
                "namespace": "h2",
                "message": {"role": "user", "content": "kayaking on the lake", "turn_id": "t1"},
                "session": {"session_id": "s1"},
            },
        )
        found = client.post(RETRIEVE, json={"namespace": "h2", "query": "kayaking"})
        bad = client.post(RETRIEVE, content=b"{", headers={"Content-Type": "application/json"})
        page = client.get("/")
    assert {stored.http_version, found.http_version, page.http_version} == {"HTTP/2"}
    assert stored.status_code == 200
    assert [hit["turn_id"] for hit in found.json()["hits"]] == ["t1"]
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_argument")
    assert page.status_code == 200 and "<html" in page.text.lower()


def _preflight(base: str, origin: str) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(
        base + RETRIEVE, method="OPTIONS", headers={"Origin": origin, **PREFLIGHT}
    )
    status, headers, _ = answer_of(request)
    return status, headers


def _cors_post(base: str, origin: str) -> dict[str, str]:
    body = json.dumps({"namespace": "n", "query": "x"}).encode()
    request = urllib.request.Request(
        base + RETRIEVE, data=body, headers={"Origin": origin, "Content-Type": "application/json"}
    )
    status, headers, _ = answer_of(request)
    assert status == 200
    return headers


def _allowances(headers: dict[str, str]) -> set[str]:
    return {name for name in headers if name.startswith("access-control-")}


def test_cors_is_off_by_default(served: Served) -> None:
    status, headers = _preflight(served.base, ALLOWED)
    assert status == 403 and _allowances(headers) == set()
    assert _allowances(_cors_post(served.base, ALLOWED)) == set()


@pytest.fixture
def cors_base() -> Iterator[str]:
    server, _ = create_server("127.0.0.1:0", http_address=("127.0.0.1", 0), cors_origins=[ALLOWED])
    yield f"http://127.0.0.1:{server.http_port}"
    server.stop(0).wait()


def test_a_preflight_from_an_allowed_origin_gets_what_the_browser_needs(cors_base: str) -> None:
    status, headers = _preflight(cors_base, ALLOWED)
    assert status == 204
    assert headers["access-control-allow-origin"] == ALLOWED
    assert "POST" in headers["access-control-allow-methods"].split(", ")
    allowed = set(headers["access-control-allow-headers"].split(", "))
    assert {"authorization", "content-type", "connect-protocol-version"} <= allowed
    assert "origin" in headers["vary"].lower()
    answer = _cors_post(cors_base, ALLOWED)
    assert answer["access-control-allow-origin"] == ALLOWED
    assert "grpc-status" in answer["access-control-expose-headers"]


def test_another_origin_gets_no_allowance(cors_base: str) -> None:
    status, headers = _preflight(cors_base, OTHER)
    assert status == 403 and _allowances(headers) == set()
    assert _allowances(_cors_post(cors_base, OTHER)) == set()


def test_serve_takes_cors_origins_from_its_flag() -> None:
    http_port = free_port()
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "null"]
    process, _ = start_listening(
        [*command, "--http-port", str(http_port), "--cors-origin", ALLOWED]
    )
    try:
        base = f"http://127.0.0.1:{http_port}"
        assert _preflight(base, ALLOWED)[1]["access-control-allow-origin"] == ALLOWED
        assert _allowances(_preflight(base, OTHER)[1]) == set()
    finally:
        process.terminate()
        process.wait(60)


def test_a_body_over_the_limit_is_refused_and_the_server_keeps_serving() -> None:
    server, port = create_server(
        "127.0.0.1:0", http_address=("127.0.0.1", 0), max_message_bytes=1000
    )
    try:
        served = Served(server, port)
        # Just past the message limit: connect-python's answer; past the limit and a gRPC-Web
        # frame's header: refused before the rest is read.
        just_over = b'{"namespace": "n", "query": "' + b"x" * 972 + b'"}'
        assert len(just_over) == 1003
        for body, status in ((just_over, 429), (b"{" * 100_000, 413)):
            answer_status, _, raw = served.post(RETRIEVE, body)
            error = json.loads(raw)
            assert (answer_status, error["code"]) == (status, "resource_exhausted")
            assert "1000" in error["message"]  # the limit the caller set, not the body's
        assert served.call("Retrieve", {"namespace": "n", "query": "x"}) == (
            200,
            {"context": "", "hits": []},
        )
    finally:
        server.stop(0).wait()


def test_a_stopping_port_sends_the_whole_answer_of_a_committed_write() -> None:
    server, _ = create_server("127.0.0.1:0", http_address=("127.0.0.1", 0))
    items = [
        {
            "message": {"role": "Ada", "content": f"note {i}", "turn_id": f"{i:06d}" + "x" * 200},
            "session": {"session_id": "s1"},
        }
        for i in range(30_000)
    ]
    body = json.dumps({"namespace": "n", "items": items}).encode()
    try:
        with socket.socket() as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", server.http_port))
            client.sendall(
                b"POST " + (MEMORY + "IngestBatch").encode() + b" HTTP/1.1\r\n"
                b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            received = bytearray(client.recv(4096))  # the answer has begun: the batch committed
            stopped = server.stop(5)
            time.sleep(0.5)  # the port closes meanwhile, megabytes of the answer still unsent
            client.settimeout(30)
            while b"\r\n\r\n" not in received:
                received += client.recv(1 << 16)
            head, _, answer = bytes(received).partition(b"\r\n\r\n")
            (length,) = [
                int(line.split(b":")[1]) for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ]  # fmt: skip
            while len(answer) < length and (chunk := client.recv(1 << 16)):
                answer += chunk
        assert head.startswith(b"HTTP/1.1 200")
        assert len(answer) == length > 6_000_000  # whole, not cut off by the stop
        assert json.loads(answer)["ingested"] == 30_000
        assert stopped.wait(30)
    finally:
        server.stop(0).wait()


def _chunked(body: bytes) -> bytes:
    pieces = [b"%x\r\n%s\r\n" % (len(body[i : i + 65536]), body[i : i + 65536])
              for i in range(0, len(body), 65536)]  # fmt: skip
    return b"".join(pieces) + b"0\r\n\r\n"


@pytest.mark.parametrize(
    ("framing", "status"),
    [
        ("content-length", b"413"),
        ("chunked", b"413"),
        ("malformed", b"400"),
    ],
)
def test_a_client_still_sending_a_refused_request_reads_the_refusal(
    framing: str, status: bytes
) -> None:
    # Refused before its end (too large, or not HTTP), the connection stays open while the rest
    # arrives, so the client's sending ends and it reads why, rather than a reset connection.
    server, _ = create_server("127.0.0.1:0", http_address=("127.0.0.1", 0), max_message_bytes=1000)
    body = b'{"namespace": "n", "query": "' + b"x" * (8 << 20) + b'"}'
    head = b"POST " + RETRIEVE.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += b"Content-Type: application/json\r\n"
    if framing == "content-length":
        sent = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    elif framing == "chunked":
        sent = head + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(body)
    else:  # chunked announced, the body sent bare
        sent = head + b"Transfer-Encoding: chunked\r\n\r\n" + body
    try:
        with socket.create_connection(("127.0.0.1", server.http_port)) as client:
            client.settimeout(60)
            client.sendall(sent)
            answer = client.recv(4096)
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:100]
        assert _served_after(server.http_port) == 200
    finally:
        server.stop(0).wait()


def _served_after(port: int | None) -> int:
    """The status of a small call once a refused one is done: the port still serves."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{RETRIEVE}", data=b'{"namespace": "n", "query": "x"}',
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    status, _, _ = answer_of(request)
    return status


def test_a_request_with_two_framings_is_refused() -> None:
    # Transfer-Encoding and Content-Length both: which one frames the body is what request
    # smuggling plays on (RFC 9112, 6.3), so neither is trusted.
    server, _ = create_server("127.0.0.1:0", http_address=("127.0.0.1", 0))
    body = b'{"namespace": "n", "query": "x"}'
    head = b"POST " + RETRIEVE.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += b"Content-Type: application/json\r\nContent-Length: 999999\r\n"
    try:
        with socket.create_connection(("127.0.0.1", server.http_port)) as client:
            client.settimeout(60)
            client.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(body))
            answer = client.recv(4096)
        assert answer.startswith(b"HTTP/1.1 400") and answer.endswith(b"send one\n"), answer
        assert _served_after(server.http_port) == 200
    finally:
        server.stop(0).wait()
