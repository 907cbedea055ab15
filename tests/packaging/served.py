"""A `himga serve` from an installed package, with its gRPC address and its HTTP port's URL."""

import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_HTTP = re.compile(r"HTTP \(.*\) on (http://\S+:\d+)/")
_LISTENING = re.compile(r"listening on (\S+:\d+)")


@dataclass(frozen=True)
class Served:
    target: str  # HOST:PORT of gRPC
    http: str  # http://HOST:PORT of Connect, gRPC-Web and the page

    def call(self, method: str, body: dict[str, object]) -> dict[str, object]:
        """`method` ("MemoryService/Retrieve") with a Connect JSON `body`; its JSON answer."""
        request = urllib.request.Request(
            f"{self.http}/himga.memory.v1.{method}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            parsed: dict[str, object] = json.loads(answer.read())
            return parsed


@contextmanager
def serving(himga: Path, *options: str) -> Iterator[Served]:
    """`himga serve` (the executable `himga`) on loopback ports it picks, stopped at the end."""
    command = [str(himga), "serve", "--port", "0", "--http-port", "0", *options]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said: list[str] = []
    http = None
    try:
        for line in process.stderr:
            said.append(line)
            shown = _HTTP.search(line)
            if shown:
                http = shown.group(1)
            found = _LISTENING.search(line)
            if found:
                assert http is not None, f"no HTTP port in what it said: {''.join(said)}"
                break
        else:
            raise AssertionError(f"{command} exited {process.wait()}: {''.join(said)}")
        yield Served(found.group(1), http)
    finally:
        process.terminate()
        process.communicate(timeout=60)
