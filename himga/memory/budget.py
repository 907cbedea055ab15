"""Token budgets for context strings: how tokens are counted, and how a context is made to fit.

The count is himga's own, documented so that any client can repeat it: every run of ASCII
letters and digits is one token, and so is every other character that is not white space
(a punctuation mark, an accented or CJK letter, an emoji). It needs no model files, so it works
offline and gives the same number in every language. It is not any model's tokenizer: for
English prose it comes close to the BPE tokenizers of current LLMs (a common word is one token
there too), it counts a long or rare word as one token where they may use several, and a CJK
or accented letter as one where they may use one or two. Leave a margin when a model's exact
limit matters. (tiktoken, the usual choice, downloads its vocabulary files on first use, so
it does not work offline.)
"""

import re
from collections.abc import Iterable

from himga.errors import InvalidArgument

_TOKEN = re.compile(r"[A-Za-z0-9]+|\S")
ELLIPSIS = "…"


def count_tokens(text: str) -> int:
    """How many tokens `text` holds, counted as the module's text says."""
    return len(_TOKEN.findall(text))


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
    for number, match in enumerate(_TOKEN.finditer(text), 1):
        end = match.end()
        if number == keep:
            break
    return text[:end].rstrip() + ELLIPSIS
