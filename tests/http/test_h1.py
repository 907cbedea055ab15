"""The HTTP port's HTTP/1.1 connections as clients meet them on the wire (himga.http.h1): requests
sent back to back on one connection answered in order, `Expect: 100-continue` answered before the
body is sent, a request that is not HTTP refused with 400 and the port serving the next
connection, HEAD answered without a body, and an idle connection closed after the keep-alive
timeout."""

import json
import socket
import time

from tests.http.conftest import MEMORY, Served

RETRIEVE = MEMORY + "Retrieve"


def _connect(served: Served) -> socket.socket:
    assert served.server.http_port is not None
    return socket.create_connection(("127.0.0.1", served.server.http_port), timeout=10)


def _request(body: bytes, *extra: str) -> bytes:
    head = [
        f"POST {RETRIEVE} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _answers(connection: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """`count` answers read from `connection`: (status, body) each, by their Content-Length."""
    data, found = b"", []
    while len(found) < count:
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            assert chunk, f"the server closed after {len(found)} answers"
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        fields = dict(line.lower().split(": ", 1) for line in lines[1:])
        length = int(fields.get("content-length", "0"))
        while len(data) < length:
            data += connection.recv(65536)
        found.append((int(lines[0].split()[1]), data[:length]))
        data = data[length:]
    return found


def _body(query: str) -> bytes:
    return json.dumps({"namespace": "h1", "query": query}).encode()


def test_requests_sent_back_to_back_on_one_connection_are_answered_in_order(
    served: Served,
) -> None:
    message = {"role": "u", "content": "kayak"}
    session = {"session_id": "s"}
    request = {"namespace": "h1", "message": message, "session": session}
    assert served.call("Ingest", request)[0] == 200
    with _connect(served) as connection:
        connection.sendall(b"".join(_request(_body(q)) for q in ("kayak", "nothing", "kayak")))
        answers = _answers(connection, 3)
    hits = [len(json.loads(body)["hits"]) for _, body in answers]
    assert [status for status, _ in answers] == [200, 200, 200] and hits == [1, 0, 1]


def test_a_client_that_expects_100_continue_is_told_to_send_its_body(served: Served) -> None:
    body = _body("kayak")
    with _connect(served) as connection:
        head = _request(body, "Expect: 100-continue")[: -len(body)]
        connection.sendall(head)
        assert _answers(connection, 1)[0][0] == 100
        connection.sendall(body)
        assert _answers(connection, 1)[0][0] == 200


def test_a_request_that_is_not_http_is_refused_and_the_port_serves_on(served: Served) -> None:
    with _connect(served) as connection:
        connection.sendall(b"HELLO THERE\r\n\r\n")
        status, _ = _answers(connection, 1)[0]
        assert status == 400
        assert connection.recv(1) == b""  # closed
    with _connect(served) as connection:
        connection.sendall(_request(_body("kayak")))
        assert _answers(connection, 1)[0][0] == 200


def test_head_is_answered_without_a_body(served: Served) -> None:
    with _connect(served) as connection:
        connection.sendall(b"HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        connection.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while data.count(b"\r\n\r\n") < 2:
            data += connection.recv(65536)
        first, second = data.split(b"\r\n\r\n")[:2]
        assert first.startswith(b"HTTP/1.1 200") and second.startswith(b"HTTP/1.1 200")


def test_an_idle_connection_is_closed_after_the_keep_alive_timeout(served: Served) -> None:
    with _connect(served) as connection:
        connection.sendall(_request(_body("kayak")))
        assert _answers(connection, 1)[0][0] == 200
        start = time.monotonic()
        connection.settimeout(30)
        assert connection.recv(1) == b""
        assert time.monotonic() - start >= 4  # keep_alive_timeout: 5 s
