"""What a kind of memory or episode store declares in its registry: where it keeps namespaces,
whether several servers over one place can share them, and the options it takes.

A registry (himga.memory.registry, himga.episodes.registry) holds one `Kind` a name. A server
reads the declaration to know which kinds a place can hold (`place_problem`), and the tests read
it to know where to put a kind's namespaces; no code compares kind names. A kind's options are
a frozen dataclass of its own (`NoOptions` for none), made from text by `parse_options` (a
command line's `NAME=VALUE`s, a configuration file's table) and handed to its factory:
`factory(namespace, place, options)`.
"""

import dataclasses
import enum
import importlib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from himga.errors import InvalidArgument


class Keeps(enum.Enum):
    """Where a kind keeps a namespace's data."""

    NOTHING = "nothing"
    """Nowhere: it stores nothing (a memory that forgets)."""
    PROCESS = "process"
    """In the process that opened it: gone when that process stops."""
    DATA_DIRECTORY = "data directory"
    """In files in the server's data directory (in the process alone without one)."""
    DATABASE = "database"
    """In the server's database, where every server over it sees the same namespace."""
    DATA_DIRECTORY_OR_DATABASE = "data directory or database"
    """Where the server keeps its namespaces: in files in its data directory, or in its
    database (where every server over it sees the same namespace)."""


@dataclass(frozen=True, slots=True)
class NoOptions:
    """The options of a kind that takes none."""


@dataclass(frozen=True, slots=True)
class Kind:
    """One registry entry. `factory` is a dotted path in `module` to
    `factory(namespace, place, options)`, imported on first use so that naming one kind does
    not load the others. `shared`: several servers over one place see the same namespaces
    (true of a kind that keeps them in a database, and of one that keeps nothing)."""

    module: str
    factory: str
    keeps: Keeps
    shared: bool
    options: type = NoOptions

    def __post_init__(self) -> None:
        if not (dataclasses.is_dataclass(self.options) and _is_frozen(self.options)):
            raise TypeError(f"{self.module}: a kind's options are a frozen dataclass")

    def load(self) -> Any:
        """The factory, imported now."""
        target: object = importlib.import_module(self.module)
        for part in self.factory.split("."):
            target = getattr(target, part)
        return target

    def default_options(self) -> Any:
        """The options of a kind that is given none: each field's default."""
        return self.options()


def _is_frozen(cls: type) -> bool:
    params = getattr(cls, "__dataclass_params__", None)
    return bool(params is not None and params.frozen)


def place_problem(what: str, name: str, kind: Kind, place: object) -> str | None:
    """Why kind `name` (a `what`: "memory", "episode store") cannot keep namespaces in
    `place` (a data directory, a database, or None), or None when it can. A server over a
    database is one of several over it, so it takes only kinds they share."""
    database = place is not None and not isinstance(place, Path)
    if database and not kind.shared:
        return (
            f"this server keeps its namespaces in a database, shared by every server over it: "
            f"{what} {name!r} keeps a namespace in one server alone ({kind.keeps.value})"
        )
    if not database and kind.keeps is Keeps.DATABASE:
        return f"{what} {name!r} keeps namespaces in a database: start the server with --database"
    return None


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def parse_options(name: str, kind: Kind, given: Mapping[str, object]) -> Any:
    """The options of kind `name` from `given` (option name -> value: text from a command line
    or a value from a configuration file), each converted to its field's type; the others keep
    their defaults. InvalidArgument naming `options.<option>` for an option the kind does not
    take or a value of the wrong type; the options' own checks (their `__post_init__`) run too."""
    fields = {field.name: field for field in dataclasses.fields(kind.options)}
    types = typing.get_type_hints(kind.options)
    values: dict[str, object] = {}
    for option, value in given.items():
        if option not in fields:
            takes = ", ".join(sorted(fields)) or "none"
            raise InvalidArgument(
                f"options.{option}", f"not an option of {name!r} (its options: {takes})"
            )
        values[option] = _converted(f"options.{option}", types[option], value)
    try:
        return kind.options(**values)
    except InvalidArgument as error:
        raise InvalidArgument(
            [dataclasses.replace(v, field=f"options.{v.field}") for v in error.violations]
        ) from None


def _converted(field: str, wanted: object, value: object) -> object:
    """`value` as a `wanted` (bool, int, float, str, Path, or one of a Literal's values), or
    InvalidArgument naming `field`."""
    if wanted is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise InvalidArgument(field, f"must be true or false, not {value!r}")
    if wanted in (int, float):
        if isinstance(value, bool):
            raise InvalidArgument(field, f"must be a number, not {value!r}")
        convert: Any = wanted
        try:
            number = convert(value)
        except (TypeError, ValueError):
            kind = "a whole number" if wanted is int else "a number"
            raise InvalidArgument(field, f"must be {kind}, not {value!r}") from None
        if wanted is int and isinstance(value, float) and number != value:
            raise InvalidArgument(field, f"must be a whole number, not {value!r}")
        return number
    if wanted is str:
        if not isinstance(value, str):
            raise InvalidArgument(field, f"must be text, not {value!r}")
        return value
    if typing.get_origin(wanted) is typing.Literal:
        allowed = typing.get_args(wanted)
        if value not in allowed:
            raise InvalidArgument(
                field, f"must be one of {', '.join(map(str, allowed))}, not {value!r}"
            )
        return value
    if wanted is Path:
        if not isinstance(value, str | Path):
            raise InvalidArgument(field, f"must be a path, not {value!r}")
        return Path(value)
    raise InvalidArgument(field, f"cannot be given as text (a {wanted!r})")


def option_pairs(texts: list[str]) -> dict[str, str]:
    """`NAME=VALUE` texts (as `--memory-option` gives them) as a mapping; InvalidArgument
    naming `options` for a text without `=`."""
    pairs: dict[str, str] = {}
    for text in texts:
        option, equals, value = text.partition("=")
        if not equals or not option:
            raise InvalidArgument("options", f"NAME=VALUE, not {text!r}")
        pairs[option.strip()] = value.strip()
    return pairs
