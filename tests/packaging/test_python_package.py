"""The Python distribution as a user gets it: `python -m build` makes an sdist and, from it, a
wheel carrying the schemas, the generated code and the compiled ranking core; the wheel,
installed into a clean virtual environment with its runtime dependencies only, serves and
answers, and its commands that need an extra name the extra to install."""

import subprocess
import sys
import tomllib
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

import himga
from tests.languages.commands import REPO, run
from tests.packaging.served import serving

pytestmark = pytest.mark.packaging


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)])
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ of a new virtual environment holding the wheel and its runtime dependencies."""
    env = tmp_path_factory.mktemp("clean") / "venv"
    venv.create(env, with_pip=True)
    (wheel,) = dist.glob("*.whl")
    run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)])
    return env / "bin"


def test_the_distribution_is_named_as_himga_says(dist: Path) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == himga.DISTRIBUTION != "himga"  # PyPI's "himga" is another project
    stem = f"{himga.DISTRIBUTION.replace('-', '_')}-{project['version']}"
    assert (dist / f"{stem}.tar.gz").is_file()
    assert len(list(dist.glob(f"{stem}-*.whl"))) == 1


def test_the_wheel_carries_the_schemas_generated_code_and_ranking_core(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    schemas = {path.name for path in (REPO / "schemas" / "v1").glob("*.json")}
    assert schemas and {f"himga_schema/json/v1/{name}" for name in schemas} <= names
    assert {"himga_proto/memory/v1/memory_pb2.py", "himga_proto/memory/v1/memory_connect.py"} <= (
        names
    )
    assert "himga_proto/memory/v1/memory.openapi.json" in names
    assert any(n.startswith("himga/memory/_ranking.") and n.endswith(".so") for n in names)
    assert {"himga/http/static/index.html", "himga/py.typed"} <= names


def test_the_sdist_carries_what_the_wheel_is_built_from(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    listed = subprocess.run(["tar", "tzf", str(sdist)], capture_output=True, text=True, check=True)
    names = {line.split("/", 1)[1] for line in listed.stdout.splitlines() if "/" in line}
    # the C's shared header too (setup.py's `depends`), or the wheel could not be built from it
    assert {
        "setup.py",
        "pyproject.toml",
        "himga/memory/_ranking.c",
        "himga/memory/_exact.h",
    } <= names
    assert "generated/python/himga_schema/json/v1/session.json" in names


def test_the_clean_install_has_no_extra_and_no_dev_tool(installed: Path) -> None:
    listed = run([str(installed / "python"), "-m", "pip", "list", "--format=freeze"])
    present = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert himga.DISTRIBUTION in present
    assert present.isdisjoint({"mcp", "psycopg", "anthropic", "openai", "pytest", "mypy"})


def test_the_installed_server_serves_and_answers(installed: Path, tmp_path: Path) -> None:
    with serving(installed / "himga", "--data-dir", str(tmp_path / "data")) as served:
        message = {"role": "Ada", "content": "I bought a red kayak.", "turn_id": "D1:1"}
        ingest = {"namespace": "first", "message": message, "session": {"session_id": "s1"}}
        served.call("MemoryService/Ingest", ingest)
        answer = served.call("MemoryService/Retrieve", {"namespace": "first", "query": "kayak"})
        assert "red kayak" in str(answer["context"])
        with urllib.request.urlopen(served.http + "/", timeout=60) as page:
            assert b"<html" in page.read().lower()


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        (["mcp"], "mcp"),
        (["serve", "--port", "0", "--database", "postgresql://127.0.0.1:1/none"], "postgres"),
        (
            ["eval", "--llm", "anthropic", "--dataset", "tests/fixtures/locomo/locomo-mini.json"],
            "llm",
        ),
    ],
)
def test_a_command_without_its_extra_names_the_extra(
    installed: Path, command: list[str], extra: str
) -> None:
    said = run([str(installed / "himga"), *command], status=2)
    assert f"pip install '{himga.DISTRIBUTION}[{extra}]'" in said
