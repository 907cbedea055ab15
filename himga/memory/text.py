"""How the keyword memories turn text into index terms: words, minus stopwords, Porter-stemmed.

Every keyword memory indexes and queries with `terms` alone, so they agree on what matches.
Terms are casefolded words (NFKC first, so full-width and ligature forms match their plain
spelling, and Unicode's default-ignorable characters dropped, as its NFKC_Casefold does, so a
soft hyphen or a zero-width joiner does not split a word). A word is a run of letters and digits
with the combining marks written on them: the vowel signs of Devanagari, Tamil or Thai are part
of their words ("दुनिया" is one word, not the letters between its signs). Arabic and Hebrew are
written with their short vowels or without, so those go, with Arabic's tatweel, and Arabic's
variant letters read as one, as Lucene's Arabic normalizer reads them ("الكِتَابُ", "الكتـــاب"
and "الكتاب" are one word).

Han, kana and Hangul, written without spaces between words, are indexed as each character and
each overlapping pair of characters, as Lucene's CJK analyzer does with its unigrams on
("喝咖啡" -> "喝", "喝咖", "咖", "咖啡", "啡"): a word is found inside a sentence, one of one
character ("猫") too, and a question's pairs rank the turns that hold its words whole above
those that only share characters. Thai, Lao, Khmer and Burmese, also written without spaces,
would need a dictionary to split into words; they are indexed in overlapping pairs of letters,
each with the marks written on it ("ครับ" -> "ครั", "รับ"), their letters being no words alone.

English stopwords and single letters (other than Han, kana and Hangul) are dropped, then each
word is reduced to its stem ("adoption agencies" -> ["adopt", "agenc"]). Words of two letters
are kept as they are, as Porter's own implementation does ("us" stays "us").

The stemmer is chosen by the script of the word's first letter (SCRIPT_STEMMERS): the language a
script is most written in, where Snowball has a stemmer for it (Cyrillic: Russian, "книга",
"книги" and "книгу" are one term, and a stress mark goes, "зна́чение" is "значение"; Greek;
Arabic, whose article goes, "الكتاب" is "كتاب"; Devanagari: Hindi; Tamil); Snowball's
implementation of the original Porter algorithm for every other word, Latin-script ones
included, so English text is stemmed as the paper does (a text's language is not guessed).
Another language of a script is stemmed by that script's rules (Ukrainian by Russian's,
Persian by Arabic's), the same way in a question as in what it asks about, so a word still
finds its own form. Snowball keeps the Porter algorithm frozen, so stored indexes do not drift
with its releases; a store whose terms another version made indexes them again (TERMS). The
stemmers are C (PyStemmer): stemming in Python dominated ingest.
"""

import re
import unicodedata
from collections import ChainMap
from collections.abc import Callable, Iterable
from functools import cache
from itertools import chain, pairwise

import Stemmer

# A query longer than this many distinct terms keeps its first ones: a pasted document must not
# turn one lookup into thousands.
MAX_QUERY_TERMS = 64
STEMMER = "porter"
SCRIPT_STEMMERS = {
    "CYRILLIC": "russian",
    "GREEK": "greek",
    "ARABIC": "arabic",
    "DEVANAGARI": "hindi",
    "TAMIL": "tamil",
}
"""Snowball's stemmer for the words of each script (as Unicode names a letter's script) that has
one; STEMMER for the others."""
TERMS = (
    f"{STEMMER} stems, but "
    + ", ".join(f"{name} for {script.title()}" for script, name in sorted(SCRIPT_STEMMERS.items()))
    + "; stopwords; words keep their marks, but Arabic's and Hebrew's vowels; CJK "
    f"by characters and pairs; Thai, Lao, Khmer, Burmese in pairs; Unicode "
    f"{unicodedata.unidata_version}"
)
"""What makes the terms, as a store records it: a store whose terms another method made indexes
its text again when it opens. What a letter or a mark is comes from the running Python's Unicode
database, whose version is named too: a Python of another one indexes again."""


def _class_of(codes: Iterable[int]) -> str:
    """A regular expression's character class body for `codes` (ascending), as ranges."""
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(
        re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges
    )


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), which NFKC_Casefold removes.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]+"
)
# Han (with its radicals, iteration and numeral marks), Hiragana, Katakana and Hangul.
_CJK_CHARS = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
    "\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U00020000-\U0003ffff"
)
# The other scripts written without spaces between words, read in pairs too: the blocks of Thai,
# Lao, Myanmar (with its extensions) and Khmer (with its symbols), marks included.
_SOUTHEAST_CHARS = "\u0e00-\u0eff\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f\u1780-\u17ff\u19e0-\u19ff"
# Arabic and Hebrew are written with their short vowels or without: their vowel signs, Arabic's
# Quranic marks and tatweel (a stroke that only lengthens a word), and Hebrew's points and
# cantillation go, and Arabic's variant letters read as one, as Lucene's Arabic normalizer reads
# them (alef with hamza or madda as alef, alef maksura as yeh, teh marbuta as heh).
_SEMITIC = re.compile("[\u0590-\u05ff\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff]")
_SEMITIC_FOLDS = {
    **dict.fromkeys(range(0x0591, 0x05BE), None),
    **dict.fromkeys((0x05BF, 0x05C1, 0x05C2, 0x05C4, 0x05C5, 0x05C7), None),
    **dict.fromkeys(range(0x0610, 0x061B), None),
    **dict.fromkeys(range(0x064B, 0x0660), None),
    **dict.fromkeys((0x0640, 0x0670), None),
    **dict.fromkeys(range(0x06D6, 0x06EE), None),
    **dict.fromkeys((0x0622, 0x0623, 0x0625, 0x0671), "\u0627"),
    0x0649: "\u064a",
    0x0629: "\u0647",
}


# What reads the words of text that is not ASCII is made on the first such text: reading the
# marks from the Unicode database and compiling these took 40 ms, ten times the rest of this
# module's import.


@cache
def _marks() -> str:
    """The character class body of the combining marks (Unicode category M), from this Python's
    Unicode database: those of the first two planes, as every mark past them is a variation
    selector, which _IGNORABLE removes."""
    return _class_of(c for c in range(0x20000) if unicodedata.category(chr(c))[0] == "M")


@cache
def word_expression() -> str:
    """A regular expression for a word: letters and digits (and "_", as \\w has it, which
    _words turns into a space first) with the combining marks written on them. The marks are
    looked for only past a character that may be one (none is below U+0300): a class of some
    300 ranges, tried at every space, took twice as long as the words themselves on Russian
    text."""
    return f"\\w+(?:(?=[^\\x00-\\u02ff])[{_marks()}]+\\w*)*"


@cache
def _word() -> re.Pattern[str]:
    return re.compile(word_expression())


@cache
def _cjk() -> re.Pattern[str]:
    return re.compile(f"[{_CJK_CHARS}]")


@cache
def _paired() -> re.Pattern[str]:
    """A character of the scripts read in pairs."""
    return re.compile(f"[{_CJK_CHARS}{_SOUTHEAST_CHARS}]")


@cache
def _runs() -> re.Pattern[str]:
    """A run of CJK (its characters taken one by one), of the others read in pairs (taken with
    their marks), or of neither."""
    return re.compile(
        f"([{_CJK_CHARS}]+)|([{_SOUTHEAST_CHARS}]+)|[^{_CJK_CHARS}{_SOUTHEAST_CHARS}]+"
    )


@cache
def _cluster() -> re.Pattern[str]:
    """A letter with the marks written on it."""
    return re.compile(f".[{_marks()}]*", re.DOTALL)


_NOT_ALNUM = bytes(c for c in range(128) if not chr(c).isalnum())
_SPACES = bytes.maketrans(_NOT_ALNUM, b" " * len(_NOT_ALNUM))
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
    """The casefolded words of `text` (the module's text says what a word is)."""
    if text.isascii():
        # The common case, faster than the pattern: for ASCII, NFKC and casefold change
        # nothing that lower() does not.
        return text.encode().translate(_SPACES).decode().lower().split()
    # The ignorable characters go first, so that NFKC composes what they stood between.
    normal = unicodedata.normalize("NFKC", _IGNORABLE.sub("", text)).casefold()
    if _SEMITIC.search(normal):
        normal = normal.translate(_SEMITIC_FOLDS)
    words = _word().findall(normal.replace("_", " "))
    if not _paired().search(normal):
        return words
    return [piece for word in words for piece in _pieces(word)]


def _pieces(word: str) -> list[str]:
    """`word` with its runs of the scripts read in pairs (_paired) as overlapping pairs of
    letters, each with its marks (a lone one as it is), and a CJK run's characters too."""
    if not _paired().search(word):
        return [word]
    pieces: list[str] = []
    for found in _runs().finditer(word):
        cjk, southeast = found.groups()
        if cjk:  # each character, and each pair: "猫" is a word of its own
            pieces.append(cjk[0])
            for a, b in pairwise(cjk):
                pieces += (a + b, b)
            continue
        letters = _cluster().findall(southeast) if southeast else []
        if len(letters) > 1:
            pieces.extend(a + b for a, b in pairwise(letters))
        else:
            pieces.extend(_word().findall(found.group()))  # marks that lost their letter go
    return pieces


def stem_words(words: list[str]) -> list[str]:
    """The stem of each of `words` (casefolded already), by its script's stemmer (the module's
    text); words of one or two letters are kept as they are, as Porter's own implementation (and
    NLTK's) keeps them."""
    stems = list(words)
    by_stemmer: dict[str, list[int]] = {}
    for i, word in enumerate(words):
        if len(word) > 2:
            by_stemmer.setdefault(_stemmer_of(word), []).append(i)
    for name, places in by_stemmer.items():
        given = [words[i] for i in places]
        if name == "russian":  # its stress marks, which learners' texts write and others not
            given = [word.translate(_STRESS) for word in given]
        for i, stem in zip(places, _stemmers(name).stemWords(given), strict=True):
            stems[i] = stem
    return stems


_STRESS = str.maketrans("", "", "\u0300\u0301")
"""Combining grave and acute accents: on Cyrillic, stress marks."""


def _stemmer_of(word: str) -> str:
    """The name of the stemmer of `word`: its first letter's script's, or STEMMER (also for a
    word with no letter, such as a year in Arabic-Indic or Devanagari digits)."""
    if word.isascii():
        return STEMMER
    first = next((c for c in word if c.isalpha()), None)
    if first is None:
        return STEMMER
    return SCRIPT_STEMMERS.get(unicodedata.name(first, "").partition(" ")[0], STEMMER)


@cache
def _stemmers(name: str) -> "Stemmer.Stemmer":
    """Snowball's stemmer `name`, made once, without Snowball's own cache of words, which made
    stemming slower than none (_terms caches instead)."""
    return Stemmer.Stemmer(name, 0)


def _learn(words: set[str]) -> dict[str, str]:
    """The term of each of `words`: "" for a stopword or a single letter (not a digit, not a
    CJK character), a word of two letters as it is, else its stem."""
    listed = list(words)
    learned = dict(zip(listed, stem_words(listed), strict=True))
    for word in listed:
        if len(word) == 1 and not word.isdigit() and (word.isascii() or not _cjk().match(word)):
            learned[word] = ""
    learned.update(dict.fromkeys(words.intersection(STOPWORDS), ""))
    return learned


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, in order of first use, at most MAX_QUERY_TERMS of them."""
    return list(dict.fromkeys(terms(query)))[:MAX_QUERY_TERMS]
