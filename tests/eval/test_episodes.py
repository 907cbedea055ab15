"""`himga eval-episodes`: the generated sets are valid, seeded and answerable; the baselines
follow their rules; the report compares the three methods in one run."""

import json
from datetime import timedelta

import pytest

from himga.cli import main
from himga.eval.episode_baselines import JsonBM25, LokiRules, recall, reciprocal_rank
from himga.eval.episode_sets import generate
from himga.eval.episodes import evaluate
from himga.records import TaskContext
from tests.episodes.helpers import episode


def test_a_seed_gives_the_same_set_and_another_seed_another() -> None:
    def dump(seed: int) -> str:
        made = generate(seed, topics=60, queries=20)
        return json.dumps([e.to_dict() for e in made.episodes]) + repr(made.queries)

    assert dump(3) == dump(3)
    assert dump(3) != dump(4)


def test_every_episode_is_valid_and_every_query_answerable() -> None:
    made = generate(5, topics=120, queries=40)
    ids = {e.id for e in made.episodes}
    assert len(ids) == len(made.episodes)
    assert all(e.validate() == [] for e in made.episodes)
    assert {q.kind for q in made.queries} == {"debugging", "implementation"}
    for query in made.queries:
        assert query.first in query.relevant <= ids
        assert query.task.validate() == []


def test_loki_rules_score_goal_words_and_phase_and_read_only_the_newest() -> None:
    episodes = [
        episode(1, "Fix the cache layer", phase="VERIFY"),
        episode(2, "Fix the cache layer and the cache keys"),
        episode(3, "Document the cache"),
    ]
    rules = LokiRules(episodes)
    task = TaskContext(goal="fix cache layer", phase="VERIFY")
    # ep-1: 3 goal words + "verify" in its phase (0.5) beats ep-2's 3; ep-3 has "cache" only.
    assert rules.rank(task, "", 10) == ["ep-0001", "ep-0002", "ep-0003"]
    many = [episode(n, "Tune the cache") for n in range(2100)]
    assert len(LokiRules(many).rank(TaskContext(goal="cache"), "", 5000)) == 2000


def test_loki_recency_boost_favours_the_newer_of_equals() -> None:
    old, new = episode(1, "Tune the cache"), episode(2, "Tune the cache")
    new.timestamp = old.timestamp + timedelta(days=20)
    assert LokiRules([old, new]).rank(TaskContext(goal="cache"), "", 2)[0] == "ep-0002"


def test_json_bm25_reads_the_whole_document() -> None:
    episodes = [episode(1, "Tune the cache", modified=("src/zebra.py",)), episode(2, "Tune")]
    assert JsonBM25(episodes).rank(TaskContext(goal="zebra"), "", 5) == ["ep-0001"]


def test_the_measures() -> None:
    assert reciprocal_rank(["a", "b", "c"], "b") == 0.5
    assert reciprocal_rank(["a"], "z") == 0.0
    assert recall(["a", "b", "c"], frozenset({"b", "z"}), 2) == 0.5


def test_himga_ranks_the_episode_that_matters_better_than_the_baselines() -> None:
    results = evaluate(generate(11, topics=200, queries=60), (1, 5))
    mrr = {name: groups["all"].mrr for name, groups in results.items()}
    assert mrr["himga ranking"] > mrr["BM25 over the episode JSON"]
    assert mrr["himga ranking"] > mrr["Loki Mode rules"]


def test_the_command_prints_every_method_for_every_group(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["eval-episodes", "--topics", "60", "--queries", "20", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "seed 2" in out
    for group in ("all:", "debugging:", "implementation:"):
        assert group in out
    for method in ("himga ranking", "BM25 over the episode JSON", "Loki Mode rules"):
        assert out.count(method) == 3
