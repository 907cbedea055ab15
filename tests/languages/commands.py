"""Running another language's tools from pytest: one helper for the Go and TypeScript drivers."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(command: list[str], env: dict[str, str] | None = None, status: int = 0) -> str:
    """Run `command` in the repository with `env` added to this environment; fail the test with
    its output unless it exits with `status`. Returns the output (stdout and stderr together)."""
    completed = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if completed.returncode != status:
        pytest.fail(f"{' '.join(command)} exited {completed.returncode}:\n{completed.stdout}")
    return completed.stdout
