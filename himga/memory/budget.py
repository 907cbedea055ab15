"""Token budgets for context strings: a context made to fit `max_context_tokens`, counted by
himga.tokens (one token per run of ASCII letters and digits and per other non-space character;
its text says why that rule and how it compares to model tokenizers)."""

from collections.abc import Iterable

from himga.errors import InvalidArgument
from himga.tokens import TOKEN, count_tokens

__all__ = ["ELLIPSIS", "check_budget", "count_tokens", "cut", "fit_lines"]

ELLIPSIS = "…"


def check_budget(max_context_tokens: int) -> int:
    """`max_context_tokens` as a call's budget: 0 is none; a negative one is InvalidArgument."""
    if max_context_tokens < 0:
        raise InvalidArgument("max_context_tokens", "must be 0 (no budget) or more")
    return max_context_tokens


def fit_lines(lines: Iterable[str], max_tokens: int) -> list[str]:
    """The lines, best first, that fit within `max_tokens` together (0: no budget).

    Whole lines are kept in order while they fit, and the rest are left out, so lines are
    dropped lowest ranked first. When the first line alone is over the budget, it is cut to
    its first `max_tokens - 1` tokens followed by "…" (one token), so a context is never empty
    only because its best hit is long."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = count_tokens(line)
        if max_tokens and used + cost > max_tokens:
            if not kept:
                kept.append(cut(line, max_tokens))
            break
        kept.append(line)
        used += cost
    return kept


def cut(text: str, max_tokens: int) -> str:
    """The start of `text` holding at most `max_tokens - 1` of its tokens, then "…"."""
    if max_tokens <= 0:
        return ""
    keep = max_tokens - 1
    if keep == 0:
        return ELLIPSIS
    end = 0
    for number, match in enumerate(TOKEN.finditer(text), 1):
        end = match.end()
        if number == keep:
            break
    return text[:end].rstrip() + ELLIPSIS
