"""The context string the keyword memories return from `retrieve`: their best hits, one a line.

Each line reads `[<session date>] <speaker>: <content>` (the seed memory's layout; `[unknown]`
when the session has no date), best hit first. At most CONTEXT_HITS hits and CONTEXT_CHARS
characters in all: a hit that would overflow the budget is cut short with "…" if it is the
first, and left out otherwise, so the context always fits a prompt of known size.
"""

from collections.abc import Sequence

from himga.memory.base import DEFAULT_LIMIT, BaseMemory, Hit

CONTEXT_HITS = 10
CONTEXT_CHARS = 4000


def format_hit(hit: Hit) -> str:
    """One hit as a context line."""
    return f"[{hit.date_str or 'unknown'}] {hit.role}: {hit.content}"


def build_context(hits: Sequence[Hit]) -> str:
    """The context of the best CONTEXT_HITS `hits`, within CONTEXT_CHARS characters."""
    lines: list[str] = []
    used = 0
    for hit in hits[:CONTEXT_HITS]:
        line = format_hit(hit).replace("\n", " ")
        cost = len(line) + (1 if lines else 0)
        if used + cost > CONTEXT_CHARS:
            if not lines:
                lines.append(line[: CONTEXT_CHARS - 1] + "…")
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)


class ContextFromHits(BaseMemory):
    """A memory whose `retrieve` context is built from its own `search` hits, searched once."""

    def retrieve(self, query: str) -> str:
        return build_context(self.search(query, CONTEXT_HITS))

    def recall(self, query: str, limit: int = DEFAULT_LIMIT) -> tuple[str, list[Hit]]:
        hits = self.search(query, max(limit, CONTEXT_HITS))
        return build_context(hits), hits[: max(limit, 0)]
