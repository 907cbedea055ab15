"""A local OpenAI-compatible embeddings endpoint (`POST /v1/embeddings`) on 127.0.0.1, a free
port: each text's vector is its letters counted (a-z: 26 dimensions), so a test knows what a
text must come back as. It records every request and checks the API key when given one."""

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSION = 26


def letters(text: str) -> list[float]:
    return [float(text.lower().count(chr(ord("a") + i))) for i in range(DIMENSION)]


class FakeEmbeddings:
    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.keys: list[str] = []
        self.status = 200  # answer every request with this status (200: vectors)
        # answer every request with this body instead (bytes, sent as it is) and content type
        self.raw: tuple[bytes, str] | None = None
        # or each text's vector made by this instead of `letters`
        self.vector: Callable[[str], Any] = letters
        self.delay = 0.0  # seconds each request waits before it is answered
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"


@contextmanager
def running(api_key: str | None = None) -> Iterator[FakeEmbeddings]:
    server = FakeEmbeddings(api_key)
    server._thread.start()
    try:
        yield server
    finally:
        server._httpd.shutdown()
        server._httpd.server_close()


def _handler(server: FakeEmbeddings) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            key = self.headers.get("authorization", "").removeprefix("Bearer ")
            server.requests.append(body)
            server.keys.append(key)
            time.sleep(server.delay)
            if self.path != "/v1/embeddings":
                return self._json(404, {"error": {"message": f"no route {self.path}"}})
            if server.api_key is not None and key != server.api_key:
                return self._json(401, {"error": {"message": "invalid api key"}})
            if server.status != 200:
                return self._json(server.status, {"error": {"message": "scripted failure"}})
            if server.raw is not None:
                return self._send(200, *server.raw)
            data = [
                {"object": "embedding", "index": i, "embedding": server.vector(text)}
                for i, text in enumerate(body["input"])
            ]
            data.reverse()  # a server may answer out of order: the index says whose it is
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            self._json(
                200, {"object": "list", "data": data, "model": body["model"], "usage": usage}
            )

        def _json(self, status: int, body: Any) -> None:
            self._send(status, json.dumps(body).encode(), "application/json")

        def _send(self, status: int, data: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
