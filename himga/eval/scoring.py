"""How one answer is scored: the LoCoMo authors' F1, with their normalisation and per-category
rules, and BLEU-1.

F1 follows the LoCoMo authors' evaluation code (Maharana et al., ACL 2024;
github.com/snap-research/locomo, task_eval/evaluation.py: `normalize_answer`, `f1_score`, `f1`,
`eval_question_answering`), reimplemented here:

- normalisation: commas removed, lowercased, ASCII punctuation removed, the words a, an, the and
  "and" removed, whitespace collapsed;
- F1 of two strings: the overlap of their Porter-stemmed tokens (counted with repeats),
  2PR / (P + R), 0 when nothing is shared;
- category 1 (several answers): prediction and gold are split at commas; each gold part takes the
  best F1 of any predicted part, and the parts are averaged;
- category 3: only the gold answer's part before its first ";" counts;
- categories 2 and 4 (and any other, LongMemEval's 0 among them): plain F1;
- category 5 (adversarial: asks about something never said): 1 if the answer says "no
  information available" or "not mentioned" (any case), else 0; the gold answer is not used.

The authors stem with NLTK's PorterStemmer, whose default mode adds a few changes to Porter's
rules; this uses the stemmer himga's keyword memories use (himga.memory.text.stem_words: for
English, Snowball's implementation of the original Porter algorithm). Both answers go through
the same stemmer, so F1 moves only where the two stemmers group two words differently.

BLEU-1 is the unigram BLEU the mem0 paper reports for LoCoMo (mem0ai/mem0,
evaluation/metrics/utils.py: NLTK's `sentence_bleu` with weights (1, 0, 0, 0) and smoothing
method 1 over `word_tokenize` of the lowercased strings): the clipped share of predicted tokens
found in the gold answer, times the brevity penalty exp(1 - r/c) when the prediction (c tokens)
is shorter than the gold (r tokens); 0 when no token is shared. Tokens are words and
punctuation marks, with English contractions split as the Penn Treebank does ("don't" ->
"do", "n't"): an approximation of `word_tokenize`, without NLTK and the data it downloads.
"""

import math
import re
import string
from collections import Counter

from himga.memory.text import stem_words

ADVERSARIAL = 5
MULTI_ANSWER = 1
FIRST_PART_ONLY = 3
ABSTENTION_PHRASES = ("no information available", "not mentioned")

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_DROPPED_WORDS = re.compile(r"\b(a|an|the|and)\b")
_BLEU_TOKEN = re.compile(r"\w+(?=n't\b)|n't\b|'(?:s|m|d|ll|re|ve)\b|\w+|[^\w\s]")


def normalize_answer(text: str) -> str:
    """The LoCoMo authors' normalisation of an answer (see the module's docstring)."""
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_DROPPED_WORDS.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """F1 of the stemmed tokens of two normalised strings."""
    predicted = stem_words(normalize_answer(prediction).split())
    expected = stem_words(normalize_answer(gold).split())
    shared = sum((Counter(predicted) & Counter(expected)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(predicted)
    recall = shared / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category 1: the mean over the gold's comma-separated parts of the best F1 of any
    predicted part."""
    predicted = [part.strip() for part in prediction.split(",")]
    expected = [part.strip() for part in gold.split(",")]
    return sum(max(token_f1(p, g) for p in predicted) for g in expected) / len(expected)


def says_not_mentioned(prediction: str) -> bool:
    """Whether an answer declines, as the LoCoMo authors' category-5 rule reads it."""
    lowered = prediction.lower()
    return any(phrase in lowered for phrase in ABSTENTION_PHRASES)


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    """The LoCoMo authors' score of `prediction` for a question of `category`."""
    if category == ADVERSARIAL:
        return 1.0 if says_not_mentioned(prediction) else 0.0
    if category == MULTI_ANSWER:
        return multi_answer_f1(prediction, gold)
    if category == FIRST_PART_ONLY:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


def bleu_tokens(text: str) -> list[str]:
    """Lowercased words and punctuation marks, contractions split (see the module docstring)."""
    return _BLEU_TOKEN.findall(text.lower())


def bleu1(prediction: str, gold: str) -> float:
    """Sentence BLEU-1 of `prediction` against the single reference `gold`."""
    predicted = bleu_tokens(prediction)
    expected = bleu_tokens(gold)
    if not predicted or not expected:
        return 0.0
    clipped = sum((Counter(predicted) & Counter(expected)).values())
    if clipped == 0:
        return 0.0
    c, r = len(predicted), len(expected)
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * clipped / c
