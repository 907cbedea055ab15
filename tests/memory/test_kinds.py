"""Kinds declare what they are (himga.kinds), and the registries read the declarations: which
place can hold a kind, which kinds servers over one database share, and a kind's options, typed
and checked, handed to its factory."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from himga.episodes import registry as episode_registry
from himga.errors import InvalidArgument
from himga.kinds import Keeps, Kind, NoOptions, option_pairs, parse_options
from himga.memory import KeywordMemory, registry
from himga.memory.method import Method
from himga.memory.null import NullMemory

DATABASE = object()
"""Any place that is not a directory or None stands for a database."""


def test_every_kind_declares_a_place_and_options() -> None:
    declared = [registry.memory_kind(name) for name in registry.memory_names()]
    declared += [episode_registry.store_kind(name) for name in episode_registry.store_names()]
    for kind in declared:
        assert isinstance(kind.keeps, Keeps)
        assert kind.default_options() == kind.options()
        assert kind.shared is (
            kind.keeps in (Keeps.DATABASE, Keeps.DATA_DIRECTORY_OR_DATABASE, Keeps.NOTHING)
        )


def test_a_database_takes_the_kinds_that_say_they_are_shared(tmp_path: Path) -> None:
    assert registry.shared_memories() == ["hybrid", "null", "postgres"]
    assert episode_registry.shared_stores() == ["postgres"]
    for name in registry.memory_names():
        shared = registry.memory_kind(name).shared
        assert (registry.place_problem(name, DATABASE) is None) is shared  # type: ignore[arg-type]
    problem = registry.place_problem("sqlite", DATABASE)  # type: ignore[arg-type]
    assert problem is not None and "memory must be hybrid or null or postgres" in problem
    assert registry.place_problem("postgres", tmp_path) is not None
    assert registry.place_problem("postgres", None) is not None
    assert episode_registry.place_problem("postgres", tmp_path) is not None
    assert episode_registry.place_problem("sqlite", tmp_path) is None


def test_a_new_kind_that_keeps_namespaces_in_a_database_joins_by_declaring_so() -> None:
    registry.register(
        "test-shared", Kind("himga.memory.null", "NullMemory.for_namespace", Keeps.DATABASE, True)
    )
    try:
        assert "test-shared" in registry.shared_memories()
        assert registry.place_problem("test-shared", DATABASE) is None  # type: ignore[arg-type]
        problem = registry.place_problem("test-shared", None)
        assert problem is not None and "--database" in problem
        assert isinstance(registry.open_memory("test-shared", "n", DATABASE), NullMemory)  # type: ignore[arg-type]
    finally:
        registry.unregister("test-shared")


def test_the_keyword_memorys_options_are_its_rankings_parameters() -> None:
    options = registry.memory_options("keyword", {"k1": "1.5", "near_turns": "1"})
    assert options == Method(k1=1.5, near_turns=1)
    memory = registry.open_memory("keyword", "n", None, options)
    assert isinstance(memory, KeywordMemory) and memory.method == options
    assert registry.open_memory("keyword", "n", None).method == Method()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("given", "field", "rule"),
    [
        ({"k2": "1"}, "options.k2", "not an option of 'keyword' (its options: b, k1, near_turns"),
        ({"k1": "fast"}, "options.k1", "must be a number, not 'fast'"),
        ({"near_turns": "1.5"}, "options.near_turns", "must be a whole number"),
        ({"near_turns": 1.5}, "options.near_turns", "must be a whole number"),
        ({"b": "2"}, "options.b", "must be from 0 to 1"),
        ({"k1": "-1"}, "options.k1", "must be 0 or more"),
    ],
)
def test_a_bad_option_is_refused_naming_it(given: dict[str, object], field: str, rule: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        registry.memory_options("keyword", given)
    assert caught.value.field == field
    assert caught.value.rule.startswith(rule)


def test_a_kind_without_options_takes_none() -> None:
    assert registry.memory_options("sqlite") == NoOptions()
    with pytest.raises(InvalidArgument, match=r"options.model: not an option of 'sqlite' .*none"):
        registry.memory_options("sqlite", {"model": "small"})


@dataclass(frozen=True)
class Typed:
    name: str = "x"
    on: bool = False
    where: Path = Path(".")
    count: int = 1


def test_options_are_converted_to_each_fields_type() -> None:
    kind = Kind("m", "f", Keeps.PROCESS, False, options=Typed)
    parsed = parse_options("t", kind, option_pairs(["on=yes", "where=/a", "count=3", "name=y"]))
    assert parsed == Typed("y", True, Path("/a"), 3)
    with pytest.raises(InvalidArgument, match=r"options\.on: must be true or false"):
        parse_options("t", kind, {"on": "maybe"})
    with pytest.raises(InvalidArgument, match="options: NAME=VALUE, not 'on'"):
        option_pairs(["on"])


def test_options_must_be_a_frozen_dataclass() -> None:
    @dataclass
    class Loose:
        a: int = 1

    with pytest.raises(TypeError, match="frozen dataclass"):
        Kind("m", "f", Keeps.PROCESS, False, options=Loose)
