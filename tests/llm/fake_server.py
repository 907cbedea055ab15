"""A local stand-in for the Anthropic and OpenAI APIs, so the real SDKs run in tests offline.

It listens on 127.0.0.1 (a free port) and speaks the part of each API himga's clients use:
Anthropic's `GET /v1/models/{id}` and `POST /v1/messages`, OpenAI's `GET /v1/models` and
`POST /v1/chat/completions`. It records every request, answers with scripted failures first
(`fail_next`), then with `reply(prompt)`, and checks the API key as the real services do.
"""

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "test-key"
MODELS = ("claude-test", "claude-haiku-4-5", "gpt-test")


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def prompt(self) -> str:
        """Every message's text, in order (the system prompt first)."""
        parts = [self.body["system"]] if isinstance(self.body.get("system"), str) else []
        parts += [m["content"] for m in self.body["messages"]]
        return "\n".join(parts)


def default_reply(prompt: str) -> str:
    """A judge prompt gets CORRECT; a question gets the first line the memory recalled."""
    if '"label"' in prompt:
        return 'The generated answer names the same thing. {"label": "CORRECT"}'
    memories = prompt.split("<memories>\n", 1)[-1].split("\n</memories>", 1)[0]
    first = memories.splitlines()[0] if memories.strip() else ""
    return first or "Not mentioned in the conversation"


class FakeLLMServer:
    def __init__(self, accept_any_key: bool = False) -> None:
        self.requests: list[Recorded] = []
        self.failures: deque[tuple[int, dict[str, str]]] = deque()
        self.reply: Callable[[str], str] = default_reply
        self.accept_any_key = accept_any_key
        self.models = list(MODELS)
        self.lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def fail_next(self, status: int, times: int = 1, **headers: str) -> None:
        """Answer the next `times` requests with HTTP `status` (and these headers)."""
        for _ in range(times):
            self.failures.append((status, {k.replace("_", "-"): v for k, v in headers.items()}))

    def calls(self, path: str) -> list[Recorded]:
        """The recorded requests to `path` (a suffix such as "/messages")."""
        with self.lock:
            return [r for r in self.requests if r.path.endswith(path)]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def running(accept_any_key: bool = False) -> Iterator[FakeLLMServer]:
    server = FakeLLMServer(accept_any_key)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._handle(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            self._handle(json.loads(self.rfile.read(length) or b"null"))

        def _handle(self, body: Any) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server.lock:
                server.requests.append(Recorded(self.command, self.path, headers, body))
                failure = server.failures.popleft() if server.failures else None
            anthropic = self.path.startswith("/v1/messages") or (
                self.path.startswith("/v1/models/")
            )
            if failure is not None:
                status, extra = failure
                return self._error(status, anthropic, "scripted failure", extra)
            # Anthropic's SDK 2.x sends the key as a bearer token; earlier ones as x-api-key.
            key = (headers.get("x-api-key") if anthropic else None) or _bearer(headers)
            if not server.accept_any_key and key != API_KEY:
                return self._error(401, anthropic, "invalid x-api-key")
            path = self.path.split("?")[0]
            if self.command == "GET" and path == "/v1/models":
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "test"}
                    for m in server.models
                ]
                return self._json(200, {"object": "list", "data": data})
            if self.command == "GET" and path.startswith("/v1/models/"):
                model = path.rsplit("/", 1)[1]
                if model not in server.models:
                    return self._error(404, anthropic, f"model: {model}")
                return self._json(
                    200,
                    {
                        "type": "model",
                        "id": model,
                        "display_name": model,
                        "created_at": "2025-01-01T00:00:00Z",
                    },
                )
            if self.command == "POST" and path == "/v1/messages":
                return self._anthropic_message(body)
            if self.command == "POST" and path == "/v1/chat/completions":
                return self._openai_completion(body)
            return self._error(404, anthropic, f"no route {self.command} {path}")

        def _anthropic_message(self, body: Any) -> None:
            record = Recorded("POST", "/v1/messages", {}, body)
            prompt = record.prompt()
            text = server.reply(prompt)
            self._json(
                200,
                {
                    "id": "msg_test",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": len(prompt.split()),
                        "output_tokens": len(text.split()),
                    },
                },
            )

        def _openai_completion(self, body: Any) -> None:
            prompt = "\n".join(m["content"] for m in body["messages"])
            text = server.reply(prompt)
            inputs, outputs = len(prompt.split()), len(text.split())
            self._json(
                200,
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                            "logprobs": None,
                        }
                    ],
                    "usage": {
                        "prompt_tokens": inputs,
                        "completion_tokens": outputs,
                        "total_tokens": inputs + outputs,
                    },
                },
            )

        def _error(
            self, status: int, anthropic: bool, message: str, headers: dict[str, str] | None = None
        ) -> None:
            if anthropic:
                body = {"type": "error", "error": {"type": "api_error", "message": message}}
            else:
                body = {"error": {"message": message, "type": "api_error", "code": None}}
            self._json(status, body, headers or {})

        def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "")
    return value.removeprefix("Bearer ") if value.startswith("Bearer ") else None
