"""How himga counts tokens, for context budgets (`max_context_tokens`): one rule, documented so
that any client, and the conformance kit, can repeat it.

Every run of ASCII letters and digits is one token, and so is every other character that is not
white space (a punctuation mark, an accented or CJK letter, an emoji). It needs no model files,
so it works offline and gives the same number in every language. It is not any model's
tokenizer: for English prose it comes close to the BPE tokenizers of current LLMs (a common word
is one token there too), it counts a long or rare word as one token where they may use several,
and a CJK or accented letter as one where they may use one or two. Leave a margin when a
model's exact limit matters. (tiktoken, the usual choice, downloads its vocabulary files on
first use, so it does not work offline; no package that ships a model's vocabulary is a
dependency of himga.)
"""

import re

TOKEN = re.compile(r"[A-Za-z0-9]+|\S")
"""One token: a run of ASCII letters and digits, or any other character but white space."""


def count_tokens(text: str) -> int:
    """How many tokens `text` holds, counted as the module's text says."""
    return len(TOKEN.findall(text))
