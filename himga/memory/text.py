"""How the keyword memories turn text into index terms: words, minus stopwords, Porter-stemmed.

Every keyword memory indexes and queries with `terms` alone, so they agree on what matches. Terms
are casefolded runs of letters and digits (NFKC first, so full-width and ligature forms match
their plain spelling); English stopwords and single letters are dropped, then each word is
reduced to its Porter stem ("adoption agencies" -> ["adopt", "agenc"]). Words of two letters
are kept as they are, as Porter's own implementation does ("us" stays "us").

The stemmer is Snowball's implementation of the original Porter algorithm (PyStemmer), which
Snowball keeps frozen, so stored indexes do not drift with its releases. It is C: stemming in
Python dominated ingest.
"""

import re
import unicodedata
from collections import ChainMap
from collections.abc import Callable, Iterable
from itertools import chain

import Stemmer

# A query longer than this many distinct terms keeps its first ones: a pasted document must not
# turn one lookup into thousands.
MAX_QUERY_TERMS = 64
STEMMER = "porter"

_WORD = re.compile(r"[^\W_]+")
_NOT_ALNUM = bytes(c for c in range(128) if not chr(c).isalnum())
_SPACES = bytes.maketrans(_NOT_ALNUM, b" " * len(_NOT_ALNUM))
# Snowball's own cache of words made stemming slower than none; _terms caches instead.
_stemmer = Stemmer.Stemmer(STEMMER, 0)
# word -> its term, or "" for a word that is dropped, for the words met so far
_terms: dict[str, str] = {}
_MAX_CACHED_WORDS = 200_000

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
    return terms_of([text])[0]


def terms_of(texts: Iterable[str]) -> list[list[str]]:
    """The terms of each text, as `terms` gives them; a batch stems its new words at once."""
    known = _terms
    words = [_words(text) for text in texts]
    found: list[list[str]] = []
    try:
        for each in words:
            found.append(list(filter(None, map(known.__getitem__, each))))
    except KeyError:
        # A word not met before: learn the new words of the rest of the batch in one go. The
        # cache only grows (threads share it), and stops growing at _MAX_CACHED_WORDS.
        rest = words[len(found) :]
        learned = _learn(set(chain.from_iterable(rest)).difference(known))
        lookup: Callable[[str], str] = ChainMap(learned, known).__getitem__
        if len(known) + len(learned) <= _MAX_CACHED_WORDS:
            known.update(learned)
            lookup = known.__getitem__
        found.extend(list(filter(None, map(lookup, each))) for each in rest)
    return found


def _words(text: str) -> list[str]:
    """The casefolded words of `text`: its runs of letters and digits."""
    if text.isascii():
        # The common case, faster than the pattern: for ASCII, NFKC and casefold change
        # nothing that lower() does not.
        return text.encode().translate(_SPACES).decode().lower().split()
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def stem_words(words: list[str]) -> list[str]:
    """The Porter stem of each of `words` (casefolded already); words of one or two letters are
    kept as they are, as Porter's own implementation (and NLTK's) keeps them."""
    return [
        word if len(word) <= 2 else stem
        for word, stem in zip(words, _stemmer.stemWords(words), strict=True)
    ]


def _learn(words: set[str]) -> dict[str, str]:
    """The term of each of `words`: "" for a stopword or a single letter, a word of two letters
    as it is, else its stem."""
    listed = list(words)
    learned = dict(zip(listed, stem_words(listed), strict=True))
    for word in listed:
        if len(word) == 1 and not word.isdigit():
            learned[word] = ""
    learned.update(dict.fromkeys(words.intersection(STOPWORDS), ""))
    return learned


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, in order of first use, at most MAX_QUERY_TERMS of them."""
    return list(dict.fromkeys(terms(query)))[:MAX_QUERY_TERMS]
