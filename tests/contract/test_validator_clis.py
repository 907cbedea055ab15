"""The README's commands for validating with tools people already use: `check-jsonschema`
(PyPI) and `ajv-cli` (npm), each given a type's bundled schema and every conformance vector of
that type as a file, offline. Each file must get its vector's verdict, with format assertion on
and, for the types that have formats, off (where only `needs_format_assertion` vectors pass).

Both tools are pinned by the project (pyproject's `dev` extra, package-lock.json) and installed
by `make setup`."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from himga import validation
from tests.contract.vectors import REPO, VECTORS, bundle_path, verdict_without_formats

CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"
AJV = REPO / "node_modules" / ".bin" / "ajv"
# Any download would go through a proxy that is not there, and fail at once.
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}


def _has_formats(type_name: str) -> bool:
    return '"format"' in bundle_path(type_name).read_text(encoding="utf-8")


CASES = [(t, True) for t in validation.type_names()] + [
    (t, False) for t in validation.type_names() if _has_formats(t)
]
Process = subprocess.Popen[str]
IDS = [f"{t}, {'format assertion' if on else 'no format assertion'}" for t, on in CASES]


def _vector_files(type_name: str, formats: bool, folder: Path) -> dict[str, bool]:
    """Writes each vector of a type to a file of its own; file name -> expected verdict."""
    expected = {}
    for index, vector in enumerate(v for t, _, v in VECTORS if t == type_name):
        name = f"vector-{index:03d}.json"
        (folder / name).write_text(json.dumps(vector["data"]), encoding="utf-8")
        expected[name] = vector["valid"] if formats else verdict_without_formats(vector)
    assert expected
    return expected


def _start(command: list[Any], cwd: Path, env: dict[str, str] | None = None) -> Process:
    return subprocess.Popen(
        [str(part) for part in command],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _output(process: Process) -> str:
    output, _ = process.communicate()
    # Both tools exit 1 when a document is invalid, and otherwise for errors of their own.
    if process.returncode not in (0, 1):
        pytest.fail(f"{process.args} exited {process.returncode}:\n{output}")
    return output


@pytest.fixture(scope="module")
def check_jsonschema_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, bool], tuple[dict[str, bool], Process]]:
    """Every case's run of check-jsonschema, started at once: each spends seconds importing
    before it validates. Case -> (file name -> expected verdict, the running process)."""
    runs = {}
    for type_name, formats in CASES:
        folder = tmp_path_factory.mktemp("check-jsonschema")
        expected = _vector_files(type_name, formats, folder)
        command: list[Any] = [CHECK_JSONSCHEMA, "--schemafile", bundle_path(type_name)]
        if not formats:
            command += ["--disable-formats", "*"]
        command += ["-o", "json", *sorted(expected)]
        runs[type_name, formats] = expected, _start(command, folder, OFFLINE)
    return runs


@pytest.mark.parametrize(("type_name", "formats"), CASES, ids=IDS)
def test_check_jsonschema_gives_each_vector_its_verdict(
    type_name: str,
    formats: bool,
    check_jsonschema_runs: dict[tuple[str, bool], tuple[dict[str, bool], Process]],
) -> None:
    expected, process = check_jsonschema_runs[type_name, formats]
    output = _output(process)
    report = json.loads(output[output.index("{") :])
    assert report["parse_errors"] == [], output
    invalid = {error["filename"] for error in report["errors"]}
    assert invalid <= set(expected), output
    assert {name: name not in invalid for name in expected} == expected, output


@pytest.fixture(scope="module")
def ajv() -> Path:
    if not AJV.is_file():
        pytest.fail("ajv-cli is not installed: run `make setup` (npm ci)")
    return AJV


# ajv-cli's verdict lines: "FILE valid" on stdout, "FILE invalid" (then the errors) on stderr.
_AJV_VERDICT = re.compile(r"^(vector-\d{3}\.json) (valid|invalid)$", re.MULTILINE)


@pytest.mark.parametrize(("type_name", "formats"), CASES, ids=IDS)
def test_ajv_cli_gives_each_vector_its_verdict(
    type_name: str, formats: bool, tmp_path: Path, ajv: Path
) -> None:
    expected = _vector_files(type_name, formats, tmp_path)
    command: list[Any] = [ajv, "validate", "--spec=draft2020", "--all-errors"]
    command += ["-c", "ajv-formats"] if formats else ["--validate-formats=false"]
    command += ["-s", bundle_path(type_name)]
    for name in sorted(expected):
        command += ["-d", tmp_path / name]
    # Run from the repository, where `-c ajv-formats` finds the module.
    output = _output(_start(command, REPO))
    found = _AJV_VERDICT.findall(output.replace(f"{tmp_path}/", ""))
    verdicts = {name: word == "valid" for name, word in found}
    assert len(found) == len(verdicts), output
    assert verdicts == expected, output
