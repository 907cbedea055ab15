"""A memory server in a child process: start it and learn its address from its log.

`himga serve` (and the Go example server) write `listening on HOST:PORT` to stderr once they
serve; tests, benchmarks and tools that need a real server process wait for that line.
"""

import re
import subprocess

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
