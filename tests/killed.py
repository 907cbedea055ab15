"""Killing a writer mid-stream, for the durability tests: a child process prints one number a
line, each once the write it names is acknowledged, and is killed with SIGKILL after some."""

import os
import signal
import subprocess


def acknowledged_until_killed(child: "subprocess.Popen[str]", after: int) -> list[int]:
    """The numbers `child` printed: SIGKILL is sent once `after` of them are read, and what it
    printed before the kill landed is read too. Asserts it died of the kill."""
    assert child.stdout is not None
    acknowledged: list[int] = []
    for line in child.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) == after:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait()
    acknowledged += [int(line) for line in child.stdout.read().split()]
    assert child.returncode == -signal.SIGKILL
    return acknowledged
