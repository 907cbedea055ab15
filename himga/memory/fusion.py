"""Fusion: how the hybrid memory merges the keyword method's ranking with the dense (embedding)
one into a single ranked list.

The caller (the hybrid memory) ranks the query's words with the keyword method
(himga.memory.ranking) to `Fusion.keyword_depth` hits, asks the vector index for the
`Fusion.dense_depth` nearest turns and for the cosine of each keyword hit, and hands both here.
Every turn is embedded as `passage(role, content)`: the speaker's name and what was said, so a
question that names the person finds their turns by meaning too.

This first version is the issue's baseline, weighted reciprocal rank:

    score(turn) = (1 - w) / (k + keyword rank) + w / (k + dense rank)

with ranks counted from 1 in each list (a turn absent from a list gets nothing from it), w the
dense weight (0.3) and k = 10. Ties go to the smaller row key (the earlier turn), as in the
keyword ranking.

Everything here is vectorised over the candidates (at most keyword_depth + dense_depth turns);
nothing loops over the stored messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from himga.errors import InvalidArgument


def passage(role: str, content: str) -> str:
    """The text a message is embedded as: `speaker: content`, or the content alone when the
    message names no speaker."""
    role = role.strip()
    return f"{role}: {content}" if role else content


@dataclass(frozen=True, slots=True)
class Fusion:
    """The method's parameters. `keyword_depth` and `dense_depth`: how many hits the caller
    asks of each side; `dense_weight`: w above; `rank_constant`: k above. Out-of-range values
    are InvalidArgument naming the parameter."""

    keyword_depth: int = 100
    dense_depth: int = 100
    dense_weight: float = 0.3
    rank_constant: float = 10.0

    def __post_init__(self) -> None:
        for name in ("keyword_depth", "dense_depth"):
            if getattr(self, name) < 1:
                raise InvalidArgument(name, "must be 1 or more")
        if not 0 <= self.dense_weight <= 1:
            raise InvalidArgument("dense_weight", "must be from 0 to 1")
        if not self.rank_constant >= 0:
            raise InvalidArgument("rank_constant", "must be 0 or more")


DEFAULT_FUSION = Fusion()


def fuse(
    keyword: Sequence[tuple[int, float]],
    dense: Sequence[tuple[int, float]],
    dense_stats: tuple[float, float],
    neighbours: Callable[[int], Sequence[int]],
    fusion: Fusion = DEFAULT_FUSION,
    limit: int = 10,
) -> list[tuple[int, float]]:
    """The fused ranking, (row key, score) best first, at most `limit` of them.

    `keyword`: the keyword method's hits (row key, score), best first; `dense`: (row key,
    cosine) of the nearest turns and of the keyword hits (any order; a key given twice keeps
    its first cosine; nan cosines, turns without a vector, are left out); `dense_stats`: the
    mean and standard deviation of the query's cosine over every stored vector;
    `neighbours(key)`: the keys of the turns beside `key` in its session, as the request's
    filters admit them."""
    if limit <= 0:
        return []
    keyword_keys = np.fromiter((key for key, _ in keyword), dtype=np.int64, count=len(keyword))
    dense_keys, cosines = _dense(dense)
    candidates = np.union1d(keyword_keys, dense_keys)
    if candidates.size == 0:
        return []
    scores = np.zeros(candidates.size)
    k = fusion.rank_constant
    weight = fusion.dense_weight
    if keyword_keys.size:
        _, first = np.unique(keyword_keys, return_index=True)
        keys = keyword_keys[np.sort(first)]  # best first, each once
        ranks = np.arange(1, keys.size + 1, dtype=np.float64)
        np.add.at(scores, np.searchsorted(candidates, keys), (1 - weight) / (k + ranks))
    if dense_keys.size:
        # Best cosine first; ties to the smaller key.
        order = np.lexsort((dense_keys, -cosines))
        ranks = np.empty(order.size)
        ranks[order] = np.arange(1, order.size + 1)
        scores[np.searchsorted(candidates, dense_keys)] += weight / (k + ranks)
    best = np.lexsort((candidates, -scores))[:limit]
    return [(int(candidates[i]), float(scores[i])) for i in best]


def _dense(dense: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The dense side's keys, each once (its first cosine), and their cosines, nan left out."""
    keys = np.fromiter((key for key, _ in dense), dtype=np.int64, count=len(dense))
    cosines = np.fromiter((cosine for _, cosine in dense), dtype=np.float64, count=len(dense))
    keep = ~np.isnan(cosines)
    keys, cosines = keys[keep], cosines[keep]
    keys, first = np.unique(keys, return_index=True)
    return keys, cosines[first]
