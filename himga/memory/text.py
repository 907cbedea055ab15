"""How the keyword memories turn text into index terms: words, minus stopwords, Porter-stemmed.

Both keyword memories index and query with `terms` alone, so they agree on what matches. Terms
are casefolded runs of letters and digits (NFKC first, so full-width and ligature forms match
their plain spelling); English stopwords and single letters are dropped, then each word is
reduced to its Porter stem ("adoption agencies" -> ["adopt", "agenc"]).
"""

import re
import unicodedata

from himga.memory.porter import stem

# A query longer than this many distinct terms keeps its first ones: a pasted document must not
# turn one lookup into thousands (and FTS5 queries stay small).
MAX_QUERY_TERMS = 64

_WORD = re.compile(r"[^\W_]+")
# word -> its stem, for the words met so far (stemming is the costly step of indexing)
_stems: dict[str, str] = {}
_MAX_CACHED_STEMS = 200_000

# The English stopword list of NLTK's corpus (Porter-era, widely used), plus what the word
# pattern leaves of contractions ("don't" -> "don", "t"). Kept generic on purpose: no words
# chosen from any benchmark's questions.
_STOPWORD_LIST = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now d ll m o re
    ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn
    weren won wouldn
"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order, repeats kept (they count as term frequency)."""
    # NFKC leaves ASCII as it is, and casefold is lower there: the common case skips both.
    text = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    found = []
    for word in _WORD.findall(text):
        term = _stems.get(word)
        if term is None:
            if word in STOPWORDS or (len(word) == 1 and not word.isdigit()):
                continue
            term = stem(word)
            if len(_stems) < _MAX_CACHED_STEMS:
                _stems[word] = term
        found.append(term)
    return found


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, in order of first use, at most MAX_QUERY_TERMS of them."""
    return list(dict.fromkeys(terms(query)))[:MAX_QUERY_TERMS]
