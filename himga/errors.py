"""The exceptions himga raises: one package base, each also a builtin callers already catch."""

from collections.abc import Iterable
from dataclasses import dataclass


class HimgaError(Exception):
    """Base of every error himga raises on purpose, so callers can catch them all at once."""


class SchemaError(HimgaError, ValueError):
    """A document breaks one rule of a schema.

    `path` is a JSON path into the document (`$.context.goal`), `reason` says what is wrong
    there, `keyword` names the broken rule (`required`, `minimum`, ...) and `schema_path`
    locates that rule in the schema files (`<$id>#/properties/goal/minLength`).
    """

    def __init__(self, path: str, reason: str, keyword: str = "", schema_path: str = "") -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.keyword = keyword
        self.schema_path = schema_path

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SchemaError):
            return NotImplemented
        return (self.path, self.reason, self.keyword, self.schema_path) == (
            other.path,
            other.reason,
            other.keyword,
            other.schema_path,
        )

    def __hash__(self) -> int:
        return hash((self.path, self.reason, self.keyword, self.schema_path))

    def __repr__(self) -> str:
        return f"SchemaError(path={self.path!r}, reason={self.reason!r}, keyword={self.keyword!r})"


class UnknownTypeError(HimgaError, LookupError):
    """A type name or schema `$id` that none of the shipped schemas has."""


class IncompatibleStoreError(HimgaError, ValueError):
    """A memory's stored data was written in a form this himga does not read (for example, by
    another version's retrieval method); the message says what to do. `public`, when given,
    is what a server tells its caller instead: the message without the server's paths (the
    command that fixes it, which names them, goes to the server's log)."""

    def __init__(self, message: str, public: str | None = None) -> None:
        super().__init__(message)
        self.public = public


class DamagedStoreError(HimgaError, RuntimeError):
    """A store's file is not a database, or its database is damaged (SQLite's SQLITE_NOTADB or
    SQLITE_CORRUPT); the message names the file and what can be done."""


class MemoryMismatch(HimgaError, RuntimeError):
    """A call names another memory than the one its namespace was opened with."""


class NotFoundError(HimgaError, LookupError):
    """A record asked for by its id is not stored (an episode GetEpisode names, for one)."""


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One broken rule of a request: the field's path (`items[3].message.role`; empty: the
    whole request) and the rule."""

    field: str
    description: str

    def __str__(self) -> str:
        return f"{self.field}: {self.description}" if self.field else self.description


# How much of a bad request is checked, and how much of it an answer tells (himga.bounds).
MAX_VIOLATIONS = 100
"""The most violations a request is checked for, and the most an answer names."""
MAX_DETAIL_BYTES = 3000
"""The most bytes of field paths and rules one answer carries."""
MAX_TEXT = 200
"""The most characters of one field path or one rule an answer carries."""
MESSAGE_CHARS = 1000
"""The most characters of violations a refusal's one-line message names (past them, it says
how many more there are; the details name more)."""


class Violations(list[FieldViolation]):
    """The violations a check found so far; `full` once it need look no further. `more` counts
    those found past the bound, `unchecked` says the check stopped before the end."""

    def __init__(self, first: Iterable[FieldViolation] = ()) -> None:
        super().__init__(first)
        self.more = 0
        self.unchecked = False

    @property
    def full(self) -> bool:
        return len(self) >= MAX_VIOLATIONS


def unicode_problem(text: str) -> str | None:
    """The rule `text` breaks if it is not Unicode text (a lone surrogate, which JSON can spell
    as "\\ud800" and Python holds), else None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"must be valid Unicode: a lone surrogate at character {error.start}"
    return None


def _cut(text: str) -> str:
    if not text.isascii():  # a key a JSON body spelt with a lone surrogate: written as escaped
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def shown(
    violations: list[FieldViolation], more: int = 0, unchecked: bool = False
) -> list[FieldViolation]:
    """The violations an answer carries: the first ones within the bounds, then one saying how
    many more there are (`more` counted beyond `violations`), and whether the request was
    checked to its end."""
    kept: list[FieldViolation] = []
    size = 0
    for violation in violations[:MAX_VIOLATIONS]:
        cut = FieldViolation(_cut(violation.field), _cut(violation.description))
        size += len(cut.field) + len(cut.description)
        if size > MAX_DETAIL_BYTES:
            break
        kept.append(cut)
    rest = len(violations) - len(kept) + more
    if rest or unchecked:
        kept.append(FieldViolation("", left_out(rest, unchecked)))
    return kept


def left_out(rest: int, unchecked: bool) -> str:
    """The words of the last violation of a cut answer."""
    if not unchecked:
        return f"and {rest:,} more"
    if rest:
        return f"and {rest:,} more; the request was not checked to its end"
    return "and more: the request was not checked to its end"


def message(violations: list[FieldViolation], more: int = 0, unchecked: bool = False) -> str:
    """The one-line message of a refusal for `violations`: the first few, then how many more."""
    first: list[str] = []
    size = 0
    for violation in violations[:MAX_VIOLATIONS]:
        cut = FieldViolation(_cut(violation.field), _cut(violation.description))
        size += len(str(cut)) + 2
        if first and size > MESSAGE_CHARS:
            break
        first.append(str(cut))
    rest = len(violations) - len(first) + more
    if rest > 0 or unchecked:
        first.append(left_out(rest, unchecked))
    return "; ".join(first)


class InvalidArgument(HimgaError, ValueError):
    """A call breaks rules of its arguments: `violations` names every one (a field as the proto
    names it, `page_token`, `filter.before`, and what it must be); `field` and `rule` are the
    first's. Raised alike by an in-process memory (`InvalidArgument("ids", rule)`) and by a
    client for a server's INVALID_ARGUMENT answer (`InvalidArgument(violations)`), so one
    mistake is one class wherever the memory runs.

    `more` counts violations found past those named, and `unchecked` says the check stopped
    before the end of the request (himga.bounds: the message and `shown` stay small)."""

    def __init__(
        self,
        field: "str | Iterable[FieldViolation]",
        rule: str = "",
        *,
        more: int = 0,
        unchecked: bool = False,
    ) -> None:
        violations = [FieldViolation(field, rule)] if isinstance(field, str) else list(field)
        super().__init__(message(violations, more, unchecked))
        self.violations = violations
        self.more = more
        self.unchecked = unchecked
        self.field = violations[0].field if violations else ""
        self.rule = violations[0].description if violations else ""

    def shown(self) -> "list[FieldViolation]":
        """The violations an answer carries (the first ones, then how many were left out)."""
        return shown(self.violations, self.more, self.unchecked)

    def whole(self) -> str:
        """Every violation, none cut, and how many more were left unchecked: what a command
        prints of its own arguments' mistakes (an answer on the wire keeps to `shown`)."""
        said = list(map(str, self.violations))
        if self.more or self.unchecked:
            said.append(left_out(self.more, self.unchecked))
        return "; ".join(said)


class Unsupported(HimgaError, RuntimeError):
    """A memory cannot do what a call asks (filter, delete, list) and refuses it, rather than
    ignore part of the request; the message says what it cannot do."""


class ModelError(HimgaError, RuntimeError):
    """An embedding model cannot be used: not fetched, a file missing or not the file its card
    names, an endpoint that refuses it (an unknown model, a bad key). The message names the
    file or the command that fixes it. (Raised by himga.embeddings; here so that the server can
    tell it without loading them.)"""


class ModelUnreachable(ModelError):
    """An embeddings endpoint did not answer a call now (down, timing out, overloaded): the
    same call may succeed later."""


class DatabaseUnavailable(HimgaError, ConnectionError):
    """The database cannot be reached now (down, failing over, or the connection was lost). A
    write that raised it may or may not have committed: send it again with the same request id
    to learn which, without storing it twice."""
