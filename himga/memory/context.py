"""The context string the keyword memories return from `retrieve`: their best hits, one a line.

Each line reads `[<session date>] <speaker>: <content>` (the seed memory's layout), best hit
first; when the session has no `date_str`, the date is the message's time in UTC to the second
(`2026-12-06T07:12:50Z`: its own timestamp, else its session's), and `unknown` only when it has
neither. `retrieve` gives CONTEXT_HITS hits, `recall` the
hits it answers (at most its `limit`); either way at most CONTEXT_CHARS
characters in all, and, when a call gives a token budget, at most that many tokens (counted by
himga.memory.budget): a hit that would overflow a budget is cut short with "…" if it is the
first, and left out otherwise, with every hit after it, so the context always fits a prompt of
known size and holds the best hits that fit.
"""

import builtins
from collections.abc import Sequence

from himga.memory.base import DEFAULT_LIMIT, BaseMemory, Hit
from himga.memory.budget import check_budget, count_tokens, cut
from himga.memory.filters import MessageFilter
from himga.timeutil import to_utc_isoformat

CONTEXT_HITS = 10
CONTEXT_CHARS = 4000


def format_hit(hit: Hit) -> str:
    """One hit as a context line."""
    return f"[{_date_of(hit)}] {hit.role}: {hit.content}"


def _date_of(hit: Hit) -> str:
    """When a hit was said, as its context line shows it."""
    if hit.date_str:
        return hit.date_str
    if hit.time is None:
        return "unknown"
    return to_utc_isoformat(hit.time.replace(microsecond=0))


def build_context(hits: Sequence[Hit], max_tokens: int = 0, count: int = CONTEXT_HITS) -> str:
    """The context of the best `count` `hits`, within CONTEXT_CHARS characters and, when
    `max_tokens` is not 0, within that many tokens."""
    lines: list[str] = []
    used = tokens = 0
    for hit in hits[: max(count, 0)]:
        line = format_hit(hit).replace("\n", " ")
        cost = len(line) + (1 if lines else 0)
        line_tokens = count_tokens(line) if max_tokens else 0
        over_tokens = bool(max_tokens) and tokens + line_tokens > max_tokens
        if used + cost > CONTEXT_CHARS or over_tokens:
            if not lines:
                first = line if len(line) <= CONTEXT_CHARS else line[: CONTEXT_CHARS - 1] + "…"
                if max_tokens and count_tokens(first) > max_tokens:
                    first = cut(first, max_tokens)  # shorter still: within both budgets
                lines.append(first)
            break
        lines.append(line)
        used += cost
        tokens += line_tokens
    return "\n".join(lines)


class ContextFromHits(BaseMemory):
    """A memory whose `retrieve` context is built from its own `search` hits, searched once."""

    def retrieve(self, query: str) -> str:
        return build_context(self.search(query, CONTEXT_HITS))

    def recall(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        *,
        filter: MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> tuple[str, builtins.list[Hit]]:
        budget = check_budget(max_context_tokens)
        if limit < 1:
            return "", []
        # The context is built from the hits answered, so `limit` bounds both; the default
        # limit gives the context `retrieve` gives.
        hits = self.search(query, limit, filter=filter)
        return build_context(hits, budget, limit), hits
