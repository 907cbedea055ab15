"""Names a user relies on keep working after the house was rearranged, and the version and the
tested dependency versions are what pyproject.toml says."""

import ast
import importlib
import re
import sys
import tomllib
import warnings
from importlib.metadata import version
from pathlib import Path

import pytest

import himga

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("himga.memory.schemas", "himga.records"),  # the seed's `memory.schemas`
        ("himga.schemas", "himga.validation"),
        ("himga.data.schema", "himga.data.conversation"),
    ],
)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_an_earlier_name_gives_the_same_objects(old: str, new: str) -> None:
    before, now = importlib.import_module(old), importlib.import_module(new)
    assert before.__all__ == now.__all__
    for name in now.__all__:
        assert getattr(before, name) is getattr(now, name), name


DEPRECATED = {"himga.schemas": "himga.validation", "himga.data.schema": "himga.data.conversation"}
"""The project's own earlier names: they warn, naming the new one. (`himga.memory.schemas` is
the seed's path and stays quiet.)"""


@pytest.mark.parametrize(("old", "new"), sorted(DEPRECATED.items()))
def test_an_earlier_name_of_the_projects_own_warns(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)} is deprecated.*{new}"):
        importlib.import_module(old)


def test_the_seeds_path_does_not_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    importlib.import_module("himga.records")  # what it names, loaded before the check
    monkeypatch.delitem(sys.modules, "himga.memory.schemas", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        importlib.import_module("himga.memory.schemas")


def imported_names(path: Path) -> set[str]:
    """The modules a Python file imports (`import a.b`, `from a.b import c`: a.b and a.b.c)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_nothing_of_the_project_imports_a_deprecated_name() -> None:
    users = [
        f"{path.relative_to(REPO)}: {name}"
        for folder in ("himga", "tests", "benchmarks", "examples", "scripts")
        for path in sorted((REPO / folder).rglob("*.py"))
        if path.relative_to(REPO).as_posix() not in ("himga/schemas.py", "himga/data/schema.py")
        for name in sorted(imported_names(path) & DEPRECATED.keys())
    ]
    assert users == []


def test_the_readme_examples_import_what_they_name() -> None:
    from himga.data import Message, Session
    from himga.memory import KeywordMemory
    from himga.memory.schemas import EpisodeTrace

    memory = KeywordMemory()
    memory.ingest(Message(role="Ada", content="a kayak trip"), Session(session_id="s1"))
    assert memory.retrieve("kayak") == "[unknown] Ada: a kayak trip"
    assert EpisodeTrace.create(task_id="t", agent="a", goal="g").validate() == []


def test_the_version_is_the_one_in_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == himga.DISTRIBUTION
    assert himga.__version__ == project["version"] == version(himga.DISTRIBUTION)


@pytest.mark.parametrize("package", ["protobuf", "grpcio", "grpcio-status"])
def test_the_tests_run_on_the_oldest_version_himga_allows(package: str) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (requirement,) = [r for r in project["dependencies"] if re.match(rf"{package}\b[>=<]", r)]
    floor = re.search(r">=([\w.]+)", requirement)
    assert floor is not None, requirement
    assert version(package) == floor.group(1)
