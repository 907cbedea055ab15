"""A memory server in a child process: start it and learn its address from its log.

`himga serve` (and the Go example server) write `listening on HOST:PORT` to stderr once they
serve; tests, benchmarks and tools that need a real server process wait for that line.
"""

import os
import queue
import re
import signal
import subprocess
import threading
import time
from typing import NoReturn

LISTENING = re.compile(r"listening on (\S+:\d+)")


def start_listening(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """Start `command` and return it with its HOST:PORT once it logs that it is listening.

    Its stderr stays a pipe, positioned after that line, for the caller to read on (or drain,
    so that a full pipe never blocks the server). RuntimeError, with what it said, when the
    process ends before listening."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said: list[str] = []
    for line in process.stderr:
        said.append(line)
        found = LISTENING.search(line)
        if found:
            return process, found.group(1)
    code = process.wait()
    raise RuntimeError(f"{command} exited with {code} before listening; it said: {''.join(said)}")


HANG_SECONDS = 120.0
"""How long a child may stay silent, or take to stop, before it is taken to be hung: a guard
against blocking the suite forever, not a limit on how fast anything is."""


class Watched:
    """A child process whose stderr a thread reads line by line, so that a test waiting for a
    line, or for the child to stop, can give up on a hung child instead of blocking forever:
    it then asks the child for every thread's stack (PYTHONFAULTHANDLER, SIGABRT) and fails
    with all the child said."""

    def __init__(self, command: list[str]) -> None:
        environment = {**os.environ, "PYTHONFAULTHANDLER": "1"}
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=environment)
        self.said: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def log(self) -> str:
        return "".join(self.said)

    def wait_for(self, pattern: "re.Pattern[str] | str", hang: float = HANG_SECONDS) -> str:
        """The first line from now on that `pattern` is found in; AssertionError when the
        child ends first, or says nothing of it for `hang` seconds."""
        wanted = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + hang
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.hung(f"did not log {wanted.pattern!r} in {hang:.0f} s")
            if line is None:
                code = self.process.wait()
                raise AssertionError(
                    f"exited with {code} before logging {wanted.pattern!r}; it said:\n{self.log}"
                )
            self.said.append(line)
            if wanted.search(line):
                return line

    def stop(self, sent: signal.Signals = signal.SIGTERM, hang: float = HANG_SECONDS) -> int:
        """Send `sent` and wait for the child to exit, reading all it says; its exit code.
        AssertionError, with its threads' stacks, when it has not exited after `hang` s."""
        self.process.send_signal(sent)
        try:
            code = self.process.wait(hang)
        except subprocess.TimeoutExpired:
            self.hung(f"did not exit in {hang:.0f} s after {sent.name}")
        self._drain()
        return code

    def hung(self, what: str) -> NoReturn:
        """Fail: `what`, every thread's stack of the child, and everything it said."""
        self.process.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: the stacks to stderr
        try:
            self.process.wait(HANG_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._drain()
        raise AssertionError(f"the child {what}; it said (stacks last):\n{self.log}")

    def _drain(self) -> None:
        self._reader.join(HANG_SECONDS)
        while not self._lines.empty():
            line = self._lines.get()
            if line is not None:
                self.said.append(line)

    def kill(self) -> None:
        """End the child if it still runs (a test's clean-up)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
