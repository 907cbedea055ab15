"""The episode index keeps ranking right through removals: dead slots are never returned,
statistics count the living only, and compacting the arrays changes no answer."""

from himga.episodes import InProcessEpisodes
from himga.episodes.index import EpisodeIndex
from himga.records import TaskContext
from tests.episodes.helpers import episode


def answer(store: InProcessEpisodes, goal: str) -> list[tuple[str, float]]:
    found = store.search(TaskContext(goal=goal, files=["orders/api.py"]), limit=20)
    return [(hit.episode.id, hit.score) for hit in found.hits]


def test_removing_most_episodes_compacts_and_changes_no_answer() -> None:
    churned, fresh = InProcessEpisodes(), InProcessEpisodes()
    goals = ["Add pagination to the orders API", "Fix the orders export", "Tune the cache"]
    kept = [episode(n, goals[n % 3]) for n in range(1500, 1530)]
    churned.record_many([episode(n, goals[n % 3]) for n in range(1500)])
    churned.record_many(kept)
    for n in range(1500):
        churned.delete(f"ep-{n:04d}")
    fresh.record_many(kept)
    index: EpisodeIndex = churned._index
    assert len(index) == 30 and len(index._ids) < 1500  # compacted
    for goal in goals:
        assert answer(churned, goal) == answer(fresh, goal)
        assert answer(fresh, goal)


def test_the_newest_time_follows_removals() -> None:
    store = InProcessEpisodes()
    store.record_many([episode(1, "Tune the cache"), episode(2, "Tune the cache")])
    before = answer(store, "cache")
    store.delete("ep-0002")
    store.record(episode(2, "Tune the cache"))
    assert answer(store, "cache") == before
