"""Fusion: how the hybrid memory merges the keyword method's ranking with the dense (embedding)
one into a single ranked list.

The caller (the hybrid memory) ranks the query's words with the keyword method
(himga.memory.ranking) to `Fusion.keyword_depth` hits, embeds `dense_query(query, speakers)`,
asks the vector index for the `Fusion.dense_depth` nearest turns, for the cosine of each keyword
hit and for the mean and standard deviation of the query's cosine over every stored turn
(VectorIndex.stats), and hands all of it to `fuse`. Every turn is embedded as
`passage(role, content)`: the speaker's name and what was said.

Who and what. The keyword method already answers "who": a turn said by a person the query
names counts twice (himga.memory.ranking). The dense side is there for "what": the meaning of
the words. e5 weighs a name heavily, so a question that names a person, embedded as it is,
ranks high every turn that names or addresses them, whatever it is about. `dense_query`
therefore removes the names of the speakers the query names before it is embedded; on the
LoCoMo development conversations this lifts the fused recall@10 by about 0.02 and category 5
(adversarial) by about 0.08, on each of the three (README, Figures: `make eval-retrieval-loo
MEMORY=hybrid`).

The method (`Fusion()`):

    score(turn) = keyword / scale  +  w * z  +  w * n * max(z of its neighbours)
    scale = max(best keyword, c * full match)

and that score plus d times its magnitude for a turn said in a month the query names (below),

where `keyword` is the turn's keyword score (0 for a turn the keyword side did not return),
`best keyword` the first hit's, `full match` what a turn holding each of the query's terms
once would score in this store (the sum of their idf over the N turns the ranking counts,
himga.memory.derived.full_match; a term no turn holds counts with n = 0), c the coverage
(0.5), z = (cosine - mean) / standard deviation the turn's
dense score on the scale of every stored turn (so a query whose best cosine is barely above
the rest adds little, and one that stands out adds a lot), w the dense weight (0.2) and n the
neighbour weight (0.25). The neighbours are the turns beside it in its session (an answer is
often the reply to the turn that matches): a neighbour counts only where the dense side
returned its cosine. The candidates are the turns either side returned.

The month. A candidate said in a month the query names (himga.memory.months: "What did Maria
donate in December 2023?"; a turn's time is its own timestamp, else its session's) gains d
times its score's magnitude, d the date boost (1: a positive score doubles, like the keyword
method's boost for a named speaker, and a negative one rises to 0; not tuned): it never lowers
a turn. It only reorders the candidates both sides found, so it costs nothing on either side's
search. On the LoCoMo development file, leaving one conversation out, it raised held-out
recall@10 from 0.826 to 0.848 and @50 from 0.936 to 0.940 (category 5 0.875 / 0.991 to 0.884 /
1.000), every fold at recall@10 and none lower at @50, with 40 of the 495 questions naming a
month; d = 0.5 and 2 gave 0.848 too, so it is a plateau, not a fit (doubling the positive
scores only, leaving the negative ones, gave the same figures).

How w, n and c were chosen (README, "Recall of the hybrid kind"; himga.eval.hybrid; the figures
of this paragraph and the next were measured before the month was added): by leaving one
LoCoMo development conversation out, over dense weights 0.1 to 0.35, neighbour weights 0, 0.25
and 0.5 and the names in or out of the embedded query; every fold chose names out and a
neighbour weight of 0.25, and dense weights from 0.15 to 0.25. Dev recall is flat in w from
0.15 to 0.35 (on the whole file (0.15, 0.25) scores 0.837 / 0.937 against 0.835 / 0.936 for
the default), so 0.2, the folds' middle, is kept. Without the coverage below a larger w
answered more questions that share no word with their answer (tests/meaning/: 10 of 31 in the
top 5 at 0.2, 20 at 0.3), but at 0.3 a store of near-identical turns differing by one made-up
word lost the exact one-word lookup to the dense side (tests/memory/test_contract.py), so the
default stays at 0.2.

The coverage c. Dividing by the best hit alone makes a best hit that shares one incidental
word with the question count 1.0, as much as a turn holding every word asked, and the dense
side cannot outweigh it; with the scale at least c times the full match, such a hit counts as
the partial match it is, while one holding most of the question's weight (an exact lookup, in
a store of any size: both sides of the max grow with the store's idf) is scaled by itself, so
the memory contract's exact one-word lookups in small stores hold (a constant scale lost
them). At w = 0.2, n = 0.25, dev recall@10 / @50 is exactly the same for c = 0, 0.25 and 0.5
(0.835 / 0.937, category 5 0.884 / 0.991): the dev questions nearly all share most of their
weight with their evidence, so the dev file cannot tell those apart; the meaning questions
can (tests/meaning/, in the top 5: 10 of 31 at c = 0, 16 at 0.25, 23 at 0.5), so c is 0.5,
and the folds search c 0, 0.25 and 0.5 beside it (held out: 0.826 / 0.936, category 5 0.875 /
0.991). Beyond 0.5 dev recall falls (c = 1: 0.826 at recall@10) and the meaning count no
longer rises (23 at 1); a grid holding c up to 1 had the folds choose c = 1 with w = 0.15 for
two conversations and held-out category 5 fall to 0.866 at recall@10, which is why it stops
at 0.5 (a range fixed after that whole-file sweep: said so in README).

`Fusion(kind="ranks")` is the issue's baseline instead, weighted reciprocal rank:

    score(turn) = (1 - w) / (k + keyword rank) + w / (k + dense rank)

with ranks counted from 1 (a turn absent from a list gets nothing from it), w = 0.3, k = 10.

Ties go to the smaller row key (the earlier turn), as in the keyword ranking. Everything here
is vectorised over the candidates (at most keyword_depth + dense_depth turns, and the
neighbours of each); nothing loops over the stored messages. `_scores` is the method's
definition; the hybrid memory has the same scores computed in C (himga.memory._fusion, given
the turns' `Links`), to the bit (tests/memory/test_fusion_core.py): its forty-odd calls into
numpy took 0.36 ms of a hybrid Retrieve at 100k messages, after the query's embedding has
emptied the caches, and the fusion takes 0.095 ms with the C (benchmarks/README.md, "The hybrid
Retrieve").
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

import numpy as np

from himga.errors import InvalidArgument
from himga.memory import _fusion
from himga.memory.ranking import is_named
from himga.memory.text import query_terms, terms, word_expression


@cache
def _word() -> re.Pattern[str]:
    """A word, as himga.memory.text reads them, and an English possessive after it
    ("Caroline's"); made when first asked, as text's word is."""
    return re.compile(word_expression() + r"(?:['\u2019]s\b)?")


_SPACES = re.compile(r"\s+")


def passage(role: str, content: str) -> str:
    """The text a message is embedded as: `speaker: content`, or the content alone when the
    message names no speaker."""
    role = role.strip()
    return f"{role}: {content}" if role else content


def dense_query(query: str, speakers: Iterable[str]) -> str:
    """The text a query is embedded as: `query` without the names of the speakers it names.

    `speakers`: the speaker keys of the turns stored (himga.memory.ranking.speaker_key, as the
    keyword index holds them); a speaker is named as the keyword method says (every term of
    their name is among the query's). A word goes when its term is one of a named speaker's, a
    possessive "'s" with it. A query that would be left with no word is kept whole."""
    keys = list(speakers)
    if not keys:  # the common case: no speaker named, nothing to read the query for
        return query
    asked = set(query_terms(query))
    named = {term for key in keys if is_named(key, asked) for term in key.split(" ")}
    if not named:
        return query
    kept: list[str] = []
    start = 0
    for match in _word().finditer(query):
        word_terms = terms(match.group().removesuffix("'s").removesuffix("\u2019s"))
        if word_terms and all(term in named for term in word_terms):
            kept.append(query[start : match.start()])
            start = match.end()
    kept.append(query[start:])
    stripped = _SPACES.sub(" ", "".join(kept)).strip()
    return stripped if _word().search(stripped) else query


@dataclass(frozen=True, slots=True)
class Fusion:
    """The method's parameters (the text above). `keyword_depth` and `dense_depth`: how many
    hits the caller asks of each side; `dense_weight`: w; `neighbour_weight`: n; `coverage`: c;
    `date_boost`: d; `rank_constant`: k of the baseline; `kind`: "scores" (the method) or
    "ranks" (the baseline). Out-of-range values are InvalidArgument naming the parameter."""

    keyword_depth: int = 100
    dense_depth: int = 100
    dense_weight: float = 0.2
    neighbour_weight: float = 0.25
    rank_constant: float = 10.0
    kind: Literal["scores", "ranks"] = "scores"
    coverage: float = 0.5
    date_boost: float = 1.0

    def __post_init__(self) -> None:
        for name in ("keyword_depth", "dense_depth"):
            if getattr(self, name) < 1:
                raise InvalidArgument(name, "must be 1 or more")
        for name in ("dense_weight", "neighbour_weight", "rank_constant", "coverage", "date_boost"):
            if not 0 <= getattr(self, name) < math.inf:
                raise InvalidArgument(name, "must be a finite number, 0 or more")
        if self.kind == "ranks" and not self.dense_weight <= 1:
            raise InvalidArgument("dense_weight", "must be from 0 to 1 for reciprocal ranks")
        if self.kind not in ("scores", "ranks"):
            raise InvalidArgument("kind", 'must be "scores" or "ranks"')


DEFAULT_FUSION = Fusion()
BASELINE = Fusion(dense_weight=0.3, rank_constant=10.0, kind="ranks")
"""The issue's simple fusion, kept to be measured beside the method."""


Around = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
"""The neighbours of all the fused candidates at once: given the candidates' keys (sorted), a
candidate's index for each neighbour and that neighbour's key (any order)."""


@dataclass(frozen=True, slots=True)
class Links:
    """Where each turn sits in its session, by turn number (Windows.links): its session's number
    (-1: no turn) and the turns just before and after it (-1: none), int32. Given to
    `fuse_arrays` in place of an Around, the method's scores are computed in C
    (himga.memory._fusion), each candidate's neighbours read from these as Windows.holds and
    Windows.beside tell them, to the same bits as `_scores`."""

    sessions: array[int]
    before: array[int]
    after: array[int]


Dated = Callable[[np.ndarray], np.ndarray]
"""Which of the fused candidates were said in a month the query names: given the candidates'
keys (sorted), a boolean mask of them (himga.memory.months.said_in over their times)."""


def fuse(
    keyword: Sequence[tuple[int, float]],
    dense: Sequence[tuple[int, float]],
    dense_stats: tuple[float, float],
    neighbours: Callable[[int], Sequence[int]],
    fusion: Fusion = DEFAULT_FUSION,
    limit: int = 10,
    full_match: float = 0.0,
    dated: Dated | None = None,
) -> list[tuple[int, float]]:
    """The fused ranking, (row key, score) best first, at most `limit` of them.

    `keyword`: the keyword method's hits (row key, score), best first; `dense`: (row key,
    cosine) of the nearest turns and of the keyword hits (any order; a key given twice keeps
    its first cosine; nan cosines, turns without a vector, are left out, so they count by words
    alone); `dense_stats`: the mean and standard deviation of the query's cosine over every
    stored vector; `neighbours(key)`: the keys of the turns beside `key` in its session, as the
    request's filters admit them; `full_match`: what a turn holding each of the query's terms
    once would score by words in this store (himga.memory.derived.full_match); `dated`: which
    candidates were said in a month the query names (None: the query names none)."""
    keyword_keys, keyword_scores = pairs(keyword)
    dense_keys, cosines = pairs(dense)
    return fuse_arrays(
        keyword_keys, keyword_scores, dense_keys, cosines, dense_stats, _each(neighbours),
        fusion, limit, full_match, dated,
    )  # fmt: skip


def fuse_arrays(
    keyword_keys: np.ndarray,
    keyword_scores: np.ndarray,
    dense_keys: np.ndarray,
    cosines: np.ndarray,
    dense_stats: tuple[float, float],
    around: Around | Links,
    fusion: Fusion = DEFAULT_FUSION,
    limit: int = 10,
    full_match: float = 0.0,
    dated: Dated | None = None,
) -> list[tuple[int, float]]:
    """`fuse` of both sides given as arrays (int64 keys, float64 scores and cosines, as
    `pairs` makes them), the neighbours of every candidate looked up at once by `around`: what
    the hybrid memory calls, with no list of pairs made on the way. With `around` the turns'
    Links, the method's scores are computed in C (the same scores, to the bit)."""
    if limit <= 0:
        return []
    if fusion.kind == "scores" and isinstance(around, Links):
        candidates, scores = _in_c(
            keyword_keys, keyword_scores, dense_keys, cosines, dense_stats, around, fusion,
            full_match,
        )  # fmt: skip
        return _best(candidates, scores, fusion, limit, dated)
    keyword_keys, keyword_scores = _keyword(keyword_keys, keyword_scores)
    dense_keys, cosines = _dense(dense_keys, cosines)
    candidates = np.union1d(keyword_keys, dense_keys)
    if candidates.size == 0:
        return []
    if fusion.kind == "ranks":
        scores = _reciprocal_ranks(candidates, keyword_keys, dense_keys, cosines, fusion)
    else:
        assert not isinstance(around, Links)  # scored in C above
        scores = _scores(
            candidates, keyword_keys, keyword_scores, dense_keys, cosines, dense_stats,
            around, fusion, full_match,
        )  # fmt: skip
    return _best(candidates, scores, fusion, limit, dated)


def _best(
    candidates: np.ndarray, scores: np.ndarray, fusion: Fusion, limit: int, dated: Dated | None
) -> list[tuple[int, float]]:
    """The best `limit` candidates by their scores (a month's turns boosted by the method),
    best first, ties to the smaller key."""
    if candidates.size == 0:
        return []
    if fusion.kind == "scores" and dated is not None and fusion.date_boost:
        boosted = dated(candidates)
        scores[boosted] += fusion.date_boost * np.abs(scores[boosted])
    return _fusion.best(  # as np.lexsort((candidates, -scores))[:limit] orders them
        np.ascontiguousarray(candidates, dtype=np.int64),
        np.ascontiguousarray(scores, dtype=np.float64),
        limit,
    )


def _in_c(
    keyword_keys: np.ndarray,
    keyword_scores: np.ndarray,
    dense_keys: np.ndarray,
    cosines: np.ndarray,
    dense_stats: tuple[float, float],
    links: Links,
    fusion: Fusion,
    full_match: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates and their scores by the method, from himga.memory._fusion."""
    mean, deviation = dense_stats
    keys, scores = _fusion.scores(
        np.ascontiguousarray(keyword_keys, dtype=np.int64),
        np.ascontiguousarray(keyword_scores, dtype=np.float64),
        np.ascontiguousarray(dense_keys, dtype=np.int64),
        np.ascontiguousarray(cosines, dtype=np.float64),
        float(mean), float(deviation), links.sessions, links.before, links.after,
        fusion.dense_weight, fusion.neighbour_weight, fusion.coverage, float(full_match),
    )  # fmt: skip
    return np.frombuffer(keys, dtype=np.int64), np.frombuffer(scores, dtype=np.float64)


def _scores(
    candidates: np.ndarray,
    keyword_keys: np.ndarray,
    keyword_scores: np.ndarray,
    dense_keys: np.ndarray,
    cosines: np.ndarray,
    dense_stats: tuple[float, float],
    around: Around,
    fusion: Fusion,
    full_match: float,
) -> np.ndarray:
    scores = np.zeros(candidates.size)
    if keyword_keys.size:
        best = max(float(keyword_scores.max()), fusion.coverage * full_match)
        if best > 0:
            np.add.at(scores, np.searchsorted(candidates, keyword_keys), keyword_scores / best)
    mean, deviation = dense_stats
    if dense_keys.size == 0 or not deviation > 0:
        return scores  # no vector, or all alike: words alone
    weight = fusion.dense_weight
    z = (cosines - mean) / deviation
    at = np.searchsorted(candidates, dense_keys)
    found = candidates[np.minimum(at, candidates.size - 1)] == dense_keys
    scores[at[found]] += weight * z[found]
    if fusion.neighbour_weight > 0:
        # Every candidate's neighbours, then their z looked up in the dense side's keys at once
        # (a maximum, so the order of the pairs does not matter).
        owners, others = around(candidates)
        if others.size:
            place = np.searchsorted(dense_keys, others)
            known = dense_keys[np.minimum(place, dense_keys.size - 1)] == others
            best_beside = np.full(candidates.size, -np.inf)
            np.maximum.at(best_beside, owners[known], z[place[known]])
            has = np.isfinite(best_beside)
            scores[has] += weight * fusion.neighbour_weight * best_beside[has]
    return scores


def _reciprocal_ranks(
    candidates: np.ndarray,
    keyword_keys: np.ndarray,
    dense_keys: np.ndarray,
    cosines: np.ndarray,
    fusion: Fusion,
) -> np.ndarray:
    scores = np.zeros(candidates.size)
    k = fusion.rank_constant
    weight = fusion.dense_weight
    if keyword_keys.size:
        ranks = np.arange(1, keyword_keys.size + 1, dtype=np.float64)
        scores[np.searchsorted(candidates, keyword_keys)] += (1 - weight) / (k + ranks)
    if dense_keys.size:
        # Best cosine first; ties to the smaller key.
        order = np.lexsort((dense_keys, -cosines))
        ranks = np.empty(order.size)
        ranks[order] = np.arange(1, order.size + 1)
        scores[np.searchsorted(candidates, dense_keys)] += weight / (k + ranks)
    return scores


def pairs(found: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(key, score) pairs as `fuse_arrays` takes them: int64 keys and float64 scores."""
    keys = np.fromiter((key for key, _ in found), dtype=np.int64, count=len(found))
    scores = np.fromiter((score for _, score in found), dtype=np.float64, count=len(found))
    return keys, scores


def _each(neighbours: Callable[[int], Sequence[int]]) -> Around:
    """`neighbours` of one key at a time as an Around."""

    def around(candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        owners: list[int] = []
        beside: list[int] = []
        for index, key in enumerate(candidates.tolist()):
            for other in neighbours(key):
                owners.append(index)
                beside.append(other)
        return np.asarray(owners, dtype=np.intp), np.asarray(beside, dtype=np.int64)

    return around


def _keyword(keys: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keyword side's keys, each once (its first place), best first, and their scores."""
    _, first = np.unique(keys, return_index=True)
    first.sort()
    return keys[first], scores[first]


def _dense(keys: np.ndarray, cosines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The dense side's keys, each once (its first cosine), sorted, and their cosines, nan
    left out."""
    keep = ~np.isnan(cosines)
    keys, cosines = keys[keep], cosines[keep]
    keys, first = np.unique(keys, return_index=True)
    return keys, cosines[first]
