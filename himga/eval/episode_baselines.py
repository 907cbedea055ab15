"""The rankings `himga eval-episodes` compares himga's with, each over the same episodes.

- `JsonBM25`: BM25 over each episode's whole JSON (its wire form), with the keyword method's
  terms and idf, the query being the task's goal, free text and files: what a generic search
  engine would do with the documents as they are.
- `LokiRules`: Loki Mode's episodic keyword scoring, reimplemented from its documentation and
  the description of `memory/retrieval.py` (no code of it is used): the query is the goal,
  "phase: P" and "files: a, b, c" (the first three files) split on whitespace; each episode
  scores 1 for every query word found in its lower-cased goal and 0.5 for every one in its
  phase; episodes scoring 0 are dropped; the score is weighted by 0.7 + 0.3 * importance (the
  task-type weight of the episodic collection is the same for every episode, so it cannot change
  the order), then boosted by up to 10% for episodes less than 30 days old; at most the 2,000
  newest episodes are read.
"""

import json
import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from himga.memory.ranking import K1, B, idf
from himga.memory.text import query_terms, terms
from himga.records import EpisodeTrace, TaskContext

LOKI_SCAN_MAX_EPISODES = 2000


class JsonBM25:
    """BM25 over every episode's JSON."""

    def __init__(self, episodes: Sequence[EpisodeTrace]) -> None:
        self._ids = [e.id for e in episodes]
        self._counts = [Counter(terms(json.dumps(e.to_dict()))) for e in episodes]
        self._lengths = [sum(c.values()) for c in self._counts]
        self._average = sum(self._lengths) / max(len(self._lengths), 1)
        self._df: Counter[str] = Counter()
        for counts in self._counts:
            self._df.update(counts.keys())

    def rank(self, task: TaskContext, text: str, limit: int) -> list[str]:
        wanted = query_terms(" ".join([task.goal, text, *task.files]))
        total = len(self._ids)
        scored = []
        for number, counts in enumerate(self._counts):
            norm = K1 * (1 - B + B * self._lengths[number] / self._average)
            score = sum(
                idf(total, self._df[t]) * counts[t] * (K1 + 1) / (counts[t] + norm)
                for t in wanted
                if t in counts
            )
            if score > 0:
                scored.append((-score, number))
        return [self._ids[number] for _, number in sorted(scored)[:limit]]


class LokiRules:
    """Loki Mode's episodic keyword scoring, as the module's text describes it."""

    def __init__(self, episodes: Sequence[EpisodeTrace]) -> None:
        # Newest first, as its scan walks date folders; at most the cap are read.
        newest = sorted(episodes, key=lambda e: e.timestamp, reverse=True)
        self._episodes = newest[:LOKI_SCAN_MAX_EPISODES]
        # "Now" is just after the newest episode, so that the run does not depend on the clock.
        self._now = (newest[0].timestamp if newest else datetime.now()) + timedelta(days=1)

    def rank(self, task: TaskContext, text: str, limit: int) -> list[str]:
        parts = [task.goal]
        if task.phase:
            parts.append(f"phase: {task.phase}")
        if task.files:
            parts.append(f"files: {', '.join(task.files[:3])}")
        keywords = [word.lower() for word in " ".join(parts).split()]
        scored = []
        for order, episode in enumerate(self._episodes):
            goal = episode.goal.lower()
            phase = episode.phase.lower()
            base = sum(1.0 for k in keywords if k in goal)
            base += sum(0.5 for k in keywords if k in phase)
            if base <= 0:
                continue
            score = base * (0.7 + 0.3 * float(episode.importance))
            age = (self._now - episode.timestamp).total_seconds() / 86400
            if 0 <= age < 30:
                score *= 1 + 0.1 * (1 - age / 30)
            scored.append((-score, order, episode.id))
        return [episode_id for _, _, episode_id in sorted(scored)[:limit]]


def reciprocal_rank(ranked: Sequence[str], wanted: str) -> float:
    """1 / the rank of `wanted` in `ranked` (0 when absent)."""
    return next((1 / (i + 1) for i, e in enumerate(ranked) if e == wanted), 0.0)


def recall(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """The share of `relevant` among the first k of `ranked`."""
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else math.nan
