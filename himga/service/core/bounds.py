"""How much of a bad request the core looks at, and how much of it an answer tells.

A request is checked up to `MAX_VIOLATIONS` violations; a check that reaches them stops there
(the rest of the body is not walked) or, where telling the rest costs nothing more than a look
at a key, counts them. An answer carries at most `MAX_VIOLATIONS` violations and at most
`MAX_DETAIL_BYTES` of their text, then one more violation of the whole request saying how many
it left out ("and 799,900 more"), so that every door's answer stays small: a gRPC client refuses
trailing metadata past 8 KiB by default, and the whole of a refusal's details stays far under
64 KiB on every door.
"""

from collections.abc import Iterable

from himga.status import FieldViolation

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


def _cut(text: str) -> str:
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
