"""Names a user relies on keep working after the house was rearranged, and the version and the
tested dependency versions are what pyproject.toml says."""

import importlib
import re
import tomllib
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
def test_an_earlier_name_gives_the_same_objects(old: str, new: str) -> None:
    before, now = importlib.import_module(old), importlib.import_module(new)
    assert before.__all__ == now.__all__
    for name in now.__all__:
        assert getattr(before, name) is getattr(now, name), name


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
