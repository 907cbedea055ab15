"""The README runs: every code block is run as written, or marked as a fragment.

Python blocks run with this interpreter, shell blocks with bash in a new folder holding a link
to this checkout's `.venv/`; both against a server started here, whose addresses replace
`127.0.0.1:50051` and `127.0.0.1:8080` (and are in HIMGA_TARGET), with no provider key and the
test LoCoMo file in HIMGA_LOCOMO_PATH. The README's maintainer section says so."""

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.served import Served, serving

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
FIXTURE = REPO / "tests" / "fixtures" / "locomo" / "locomo-mini.json"
FRAGMENT = re.compile(r"^<!-- fragment(: [^>]*)? -->$")
_FENCE = re.compile(r"^```(\w*)$")
KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence
    language: str
    code: str
    fragment: bool


def blocks(text: str) -> list[Block]:
    """Every fenced code block of `text`, with whether the line before it marks a fragment."""
    found = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None or not opening.group(1):
            index += 1
            continue
        end = lines.index("```", index + 1)
        fragment = index > 0 and FRAGMENT.match(lines[index - 1]) is not None
        code = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(index + 1, opening.group(1), code, fragment))
        index = end + 1
    return found


RUN = [block for block in blocks(README.read_text(encoding="utf-8")) if not block.fragment]


def test_the_block_reader_sees_fences_and_markers() -> None:
    text = "a\n<!-- fragment -->\n```sh\nmake x\n```\n\n```python\nprint(1)\n```\n"
    assert blocks(text) == [
        Block(3, "sh", "make x\n", True),
        Block(7, "python", "print(1)\n", False),
    ]


def test_every_block_is_run_or_marked_as_a_fragment() -> None:
    assert {block.language for block in RUN} <= {"python", "sh"}, [
        (block.line, block.language) for block in RUN if block.language not in {"python", "sh"}
    ]
    assert any(block.language == "python" for block in RUN)
    assert "/Retrieve" in RUN[0].code and RUN[0].line < 30  # the first call, on the first screen


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("readme-server")
    with serving(Path(sys.executable).parent / "himga", "--data-dir", str(data)) as server:
        yield server


def _env(served: Served, tmp_path: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in KEYS}
    env.update(
        HIMGA_TARGET=served.target,
        HIMGA_LOCOMO_PATH=str(FIXTURE),
        HIMGA_CACHE_DIR=str(tmp_path / "cache"),
    )
    return env


def _addressed(code: str, served: Served) -> str:
    return code.replace("http://127.0.0.1:8080", served.http).replace(
        "127.0.0.1:50051", served.target
    )


@pytest.mark.parametrize("block", RUN, ids=[f"README.md:{block.line}" for block in RUN])
def test_the_block_runs_as_written(block: Block, served: Served, tmp_path: Path) -> None:
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    code = _addressed(block.code, served)
    if block.language == "python":
        command = [sys.executable, "-c", code]
    else:
        command = ["bash", "-euo", "pipefail", "-c", code]
    done = subprocess.run(
        command, cwd=tmp_path, env=_env(served, tmp_path), capture_output=True, text=True
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"README.md:{block.line} exited {done.returncode}:\n{said}"
    if block.language == "sh" and "curl" in block.code:
        answers = _answers(done.stdout)
        assert answers and not [a for a in answers if "code" in a], said  # a Connect error
        if "/Retrieve" in block.code:
            assert answers[-1]["hits"], said


def _answers(out: str) -> list[dict[str, object]]:
    """The JSON objects curl wrote one after another (no newline between them)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := out.find("{", at)) >= 0:
        answer, at = decoder.raw_decode(out, at)
        found.append(answer)
    return found
