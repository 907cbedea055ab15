"""EpisodeIndex: the features of a namespace's episodes in arrays, and the ranking over them.

Both episode stores hold one: the in-process store as its index, the SQLite store rebuilt from
its tables when it opens (no text is stemmed again: the terms are stored). Each episode has a
slot; a replaced or deleted episode's slot is only marked dead, and the arrays are compacted
once the dead outnumber the living. Postings hold one entry per episode and term, with the
term's weighted frequency there (himga.episodes.ranking), so a search is a few vectorised passes
over the postings of its terms and files (numpy), whatever the number of episodes stored.
"""

from array import array
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from himga.episodes import ranking
from himga.episodes.features import Features, Query, directory

Floats = npt.NDArray[np.float64]
_DAY = 86_400.0


class _Postings:
    """Slots and weights of one term, file or folder: one entry per episode."""

    __slots__ = ("slots", "weights")

    def __init__(self) -> None:
        self.slots = array("i")
        self.weights = array("d")


class EpisodeIndex:
    """The live episodes of one namespace, by slot. Not thread-safe: the stores lock."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._ids: list[str | None] = []
        self._slot: dict[str, int] = {}
        self._alive = array("b")
        self._time = array("d")
        self._importance = array("d")
        self._length = array("d")
        self._phase = array("b")
        self._outcome = array("b")
        self._resolved = array("b")
        self._terms: defaultdict[str, _Postings] = defaultdict(_Postings)
        self._error_terms: defaultdict[str, _Postings] = defaultdict(_Postings)
        self._files: defaultdict[str, _Postings] = defaultdict(_Postings)
        self._dirs: defaultdict[str, _Postings] = defaultdict(_Postings)
        self.total_length = 0.0
        self._newest: float | None = None

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._slot

    def add(self, episode: Features) -> None:
        """Index an episode, replacing the one of the same id."""
        self.remove(episode.id)
        slot = len(self._ids)
        weighted: dict[str, float] = defaultdict(float)
        for terms, weight in (
            (episode.goal, ranking.GOAL_WEIGHT),
            (episode.errors, ranking.ERROR_WEIGHT),
            (episode.actions, ranking.ACTION_WEIGHT),
        ):
            for term in terms:
                weighted[term] += weight
        length = sum(weighted.values())
        # Appends written out (not a helper per posting): opening 100k episodes is this loop.
        index, error_terms, files, dirs = self._terms, self._error_terms, self._files, self._dirs
        for term, frequency in weighted.items():
            postings = index[term]
            postings.slots.append(slot)
            postings.weights.append(frequency)
        for term in set(episode.errors):
            postings = error_terms[term]
            postings.slots.append(slot)
            postings.weights.append(1.0)
        for path, weight in episode.files.items():
            postings = files[path]
            postings.slots.append(slot)
            postings.weights.append(weight)
        for folder in {directory(path) for path in episode.files} - {""}:
            postings = dirs[folder]
            postings.slots.append(slot)
            postings.weights.append(1.0)
        self._ids.append(episode.id)
        self._slot[episode.id] = slot
        self._alive.append(1)
        self._time.append(episode.timestamp)
        self._importance.append(episode.importance)
        self._length.append(length)
        self._phase.append(_code(ranking.PHASES, episode.phase))
        self._outcome.append(_code(ranking.OUTCOMES, episode.outcome))
        self._resolved.append(episode.resolved)
        self.total_length += length
        if self._newest is not None:
            self._newest = max(self._newest, episode.timestamp)

    def remove(self, episode_id: str) -> bool:
        """Forget an episode; whether it was indexed."""
        slot = self._slot.pop(episode_id, None)
        if slot is None:
            return False
        self._ids[slot] = None
        self._alive[slot] = 0
        self.total_length -= self._length[slot]
        if self._time[slot] == self._newest:
            self._newest = None
        dead = len(self._ids) - len(self._slot)
        if dead > 1000 and dead > len(self._slot):
            self._compact()
        return True

    def best(self, query: Query, limit: int) -> list[tuple[str, float]]:
        """The best `limit` episodes for `query` as (id, score), best first."""
        live = len(self._slot)
        if not live or limit <= 0 or not (query.terms or query.files):
            return []
        size = len(self._ids)
        # Dead slots are masked out of every posting only when there are any.
        alive = np.frombuffer(self._alive, dtype=np.bool_) if live < size else None
        parts: list[tuple[npt.NDArray[np.int32], Floats]] = []
        weights = self._text(query.terms, alive, live, parts)
        self._touched(query.files, alive, live, parts)
        if not parts:
            return []
        relevance = np.bincount(
            np.concatenate([slots for slots, _ in parts]),
            weights=np.concatenate([part for _, part in parts]),
            minlength=size,
        )
        found = np.flatnonzero(relevance > 0)
        if not len(found):
            return []
        factor = np.asarray(
            [
                ranking.outcome_factor(outcome, False, query.debugging)
                for outcome in ranking.OUTCOMES
            ]
        )[np.frombuffer(self._outcome, dtype=np.int8)[found]]
        if query.debugging:
            resolved = np.frombuffer(self._resolved, dtype=np.bool_)[found]
            share = self._error_share(weights, alive, size)[found]
            factor[resolved] = 1 + (ranking.RESOLVED - 1) * share[resolved]
        if query.phase:
            same = np.frombuffer(self._phase, dtype=np.int8)[found] == _code(
                ranking.PHASES, query.phase
            )
            factor[same] *= 1 + ranking.PHASE_BONUS
        times = np.frombuffer(self._time, dtype=np.float64)
        newest = self._newest_time(times, alive)
        recency = 1.0 / (1.0 + (newest - times[found]) / (_DAY * ranking.RECENCY_DAYS))
        importance = np.frombuffer(self._importance, dtype=np.float64)[found]
        scores = relevance[found] * factor + ranking.TIE_WEIGHT * (importance + recency)
        return self._top(found, scores, times, limit)

    def _newest_time(self, times: Floats, alive: npt.NDArray[np.bool_] | None) -> float:
        """The time of the newest live episode (kept between calls until a removal)."""
        if self._newest is None:
            self._newest = float(times.max() if alive is None else times[alive].max())
        return self._newest

    def _text(
        self,
        terms: Sequence[str],
        alive: npt.NDArray[np.bool_] | None,
        live: int,
        parts: list[tuple[npt.NDArray[np.int32], Floats]],
    ) -> dict[str, float]:
        """Add each term's BM25 part per slot to `parts`; return the idf of each term found."""
        lengths = np.frombuffer(self._length, dtype=np.float64)
        average = self.total_length / live if self.total_length > 0 else 1.0
        found: dict[str, float] = {}
        for term in terms:
            postings = self._terms.get(term)
            if postings is None:
                continue
            slots, frequency = self._live(postings, alive)
            if not len(slots):
                continue
            found[term] = weight = ranking.idf(live, len(slots))
            norm = ranking.K1 * (1 - ranking.B + ranking.B * lengths[slots] / average)
            parts.append((slots, weight * frequency * (ranking.K1 + 1) / (frequency + norm)))
        return found

    def _error_share(
        self, weights: dict[str, float], alive: npt.NDArray[np.bool_] | None, size: int
    ) -> Floats:
        """How much of the query each slot's errors hold: the idf of the query's terms found
        there over the idf of all its terms found anywhere (0 to 1)."""
        total = sum(weights.values())
        held = [
            (slots, np.full(len(slots), weight))
            for term, weight in weights.items()
            if (in_errors := self._error_terms.get(term)) is not None
            for slots in (self._live(in_errors, alive)[0],)
        ]
        if not held or total <= 0:
            return np.zeros(size)
        share = np.bincount(
            np.concatenate([slots for slots, _ in held]),
            weights=np.concatenate([w for _, w in held]),
            minlength=size,
        )
        return share / total

    def _touched(
        self,
        files: Sequence[str],
        alive: npt.NDArray[np.bool_] | None,
        live: int,
        parts: list[tuple[npt.NDArray[np.int32], Floats]],
    ) -> None:
        """Add how much of each file (and its folder) every slot touched, by idf, to `parts`."""
        for path in files:
            for index, path_key, scale in (
                (self._files, path, 1.0),
                (self._dirs, directory(path), ranking.DIR_WEIGHT),
            ):
                postings = index.get(path_key) if path_key else None
                if postings is None:
                    continue
                slots, weights = self._live(postings, alive)
                if len(slots):
                    parts.append((slots, weights * (scale * ranking.idf(live, len(slots)))))

    @staticmethod
    def _live(
        postings: _Postings, alive: npt.NDArray[np.bool_] | None
    ) -> tuple[npt.NDArray[np.int32], Floats]:
        """The slots and weights of a posting list, those of dead slots left out."""
        slots = np.frombuffer(postings.slots, dtype=np.int32)
        weights = np.frombuffer(postings.weights, dtype=np.float64)
        if alive is None:
            return slots, weights
        keep = alive[slots]
        return slots[keep], weights[keep]

    def _top(
        self, found: npt.NDArray[np.intp], scores: Floats, times: Floats, limit: int
    ) -> list[tuple[str, float]]:
        """The best `limit` of `found`: highest score, then newest, then smallest id."""
        if len(found) > limit:
            cut = np.partition(scores, len(scores) - limit)[len(scores) - limit]
            keep = scores >= cut  # every tie at the cut, so that the order below decides
            found, scores = found[keep], scores[keep]
        ranked = sorted(
            zip(scores.tolist(), found.tolist(), strict=True),
            key=lambda item: (-item[0], -times[item[1]], self._ids[item[1]]),
        )
        return [(str(self._ids[slot]), score) for score, slot in ranked[:limit]]

    def _compact(self) -> None:
        """Drop the dead slots: renumber the living, in order, and filter every posting."""
        alive = np.frombuffer(self._alive, dtype=np.bool_)
        renumber = np.cumsum(alive) - 1
        for index in (self._terms, self._error_terms, self._files, self._dirs):
            for key in list(index):
                slots, weights = self._live(index[key], alive)
                if not len(slots):
                    del index[key]
                    continue
                fresh = _Postings()
                fresh.slots = array("i", renumber[slots].astype(np.int32).tobytes())
                fresh.weights = array("d", weights.tobytes())
                index[key] = fresh
        for name in ("_time", "_importance", "_length", "_phase", "_outcome", "_resolved"):
            column: array[float] | array[int] = getattr(self, name)
            kept = np.frombuffer(column, dtype=_DTYPES[column.typecode])[alive]
            setattr(self, name, array(column.typecode, kept.tobytes()))
        living = [episode_id for episode_id in self._ids if episode_id is not None]
        self._ids = list(living)
        self._slot = {episode_id: slot for slot, episode_id in enumerate(living)}
        self._alive = array("b", b"\x01" * len(self._ids))


_DTYPES = {"d": np.float64, "b": np.int8, "i": np.int32}


def _code(values: tuple[str, ...], value: str) -> int:
    """The position of `value` in `values`; 0 (the default) for one not among them."""
    try:
        return values.index(value)
    except ValueError:
        return 0
