"""Episode ranking, measured: himga's beside plain BM25 over the episodes' JSON and beside Loki
Mode's rules, on one generated episode set (himga.eval.episode_sets), in one run.

For each query: recall@k, the share of the topic's earlier episodes among the first k, and the
reciprocal rank of the episode that matters most (the fix of the bug; the feature's first
episode). Means are given over all queries and per kind of task.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from himga.episodes.inprocess import InProcessEpisodes
from himga.eval.episode_baselines import JsonBM25, LokiRules, recall, reciprocal_rank
from himga.eval.episode_sets import EpisodeSet, Query
from himga.records import TaskContext

Ranker = Callable[[TaskContext, str, int], list[str]]
DEFAULT_KS = (1, 3, 5, 10)


@dataclass(frozen=True, slots=True)
class Scores:
    """The means of one method over one group of queries."""

    queries: int
    recall: dict[int, float]
    mrr: float


def rankers(episode_set: EpisodeSet) -> dict[str, Ranker]:
    """Each method, ready to rank, over the set's episodes."""
    store = InProcessEpisodes()
    store.record_many(episode_set.episodes)

    def himga(task: TaskContext, text: str, limit: int) -> list[str]:
        return [hit.episode.id for hit in store.search(task, text, limit).hits]

    return {
        "himga ranking": himga,
        "BM25 over the episode JSON": JsonBM25(episode_set.episodes).rank,
        "Loki Mode rules": LokiRules(episode_set.episodes).rank,
    }


def evaluate(
    episode_set: EpisodeSet, ks: Sequence[int] = DEFAULT_KS
) -> dict[str, dict[str, Scores]]:
    """method -> group ("all", and each kind of task) -> its scores."""
    deepest = min(max(ks), 100)
    results: dict[str, dict[str, Scores]] = {}
    for name, rank in rankers(episode_set).items():
        ranked = [(q, rank(q.task, q.text, deepest)) for q in episode_set.queries]
        groups = {"all": ranked}
        for kind in sorted({q.kind for q in episode_set.queries}):
            groups[kind] = [(q, r) for q, r in ranked if q.kind == kind]
        results[name] = {group: _scores(pairs, ks) for group, pairs in groups.items()}
    return results


def _scores(pairs: Sequence[tuple[Query, list[str]]], ks: Sequence[int]) -> Scores:
    count = len(pairs)
    return Scores(
        queries=count,
        recall={k: sum(recall(r, q.relevant, k) for q, r in pairs) / count for k in ks},
        mrr=sum(reciprocal_rank(r, q.first) for q, r in pairs) / count,
    )


def format_report(
    episode_set: EpisodeSet, results: dict[str, dict[str, Scores]], ks: Sequence[int]
) -> str:
    """The table `himga eval-episodes` prints."""
    kinds = ", ".join(
        f"{s.queries} {group}"
        for group, s in next(iter(results.values())).items()
        if group != "all"
    )
    lines = [
        f"episode set: seed {episode_set.seed}, {len(episode_set.episodes)} episodes, "
        f"{len(episode_set.queries)} queries ({kinds})",
    ]
    width = max(len(name) for name in results) + 2
    for group in next(iter(results.values())):
        lines += ["", f"{group}:"]
        header = "".join(f"recall@{k}".rjust(11) for k in ks) + "MRR".rjust(8)
        lines.append("method".ljust(width) + header)
        for name, groups in results.items():
            scores = groups[group]
            row = "".join(f"{scores.recall[k]:11.3f}" for k in ks) + f"{scores.mrr:8.3f}"
            lines.append(name.ljust(width) + row)
    return "\n".join(lines)
