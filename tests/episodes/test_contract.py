"""The EpisodeStore contract, run against every store: in-process, SQLite, and remote (a real
server on 127.0.0.1 over its default store). A store added to the registry joins by itself."""

import threading
from datetime import timedelta

import pytest

from himga.episodes.base import TOKEN_CHARS, EpisodeFilter, EpisodeStore
from himga.errors import NotFoundError
from himga.records import EpisodeTrace, TaskContext
from tests.episodes.conftest import NewStore
from tests.episodes.helpers import START, episode


def without_access(document: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in document.items() if k not in ("access_count", "last_accessed")}


def test_get_returns_the_episode_recorded_with_its_access_counted(store: EpisodeStore) -> None:
    recorded = episode(1, error=("test_failure", "assert 1 == 2", "fixed the off-by-one"))
    recorded.git_commit = "abc123"
    store.record(recorded)
    first = store.get("ep-0001")
    second = store.get("ep-0001")
    assert without_access(first.to_dict()) == without_access(recorded.to_dict())
    assert (first.access_count, second.access_count) == (1, 2)
    assert first.last_accessed is not None and second.last_accessed >= first.last_accessed


def test_listing_does_not_count_an_access(store: EpisodeStore) -> None:
    recorded = episode(1)
    store.record(recorded)
    assert [e.to_dict() for e in store.list().episodes] == [recorded.to_dict()]


def test_a_missing_episode_is_not_found(store: EpisodeStore) -> None:
    with pytest.raises(NotFoundError):
        store.get("ep-none")


def test_recording_an_id_again_replaces_it(store: EpisodeStore) -> None:
    store.record(episode(1, "Add pagination to the orders API"))
    store.record(episode(1, "Rename the billing module", modified=("billing/core.py",), read=()))
    assert [e.goal for e in store.list().episodes] == ["Rename the billing module"]
    found = store.search(TaskContext(goal="pagination orders"))
    assert found.hits == []


def test_an_invalid_episode_is_refused_naming_the_field_and_nothing_is_stored(
    store: EpisodeStore,
) -> None:
    bad = episode(2)
    bad.goal = ""
    with pytest.raises(ValueError, match="goal"):
        store.record(bad)
    with pytest.raises(ValueError, match="importance"):
        store.record_many([episode(3), episode(4, importance=1.5)])
    assert store.list().episodes == []


def test_an_invalid_wire_form_is_refused_naming_its_path(store: EpisodeStore) -> None:
    good, bad = episode(1).to_dict(), episode(2).to_dict()
    bad["tokens_used"] = -1
    with pytest.raises(ValueError, match="tokens_used"):
        store.record_documents([good, bad])
    assert store.list().episodes == []


def test_record_many_stores_all_and_counts_them(store: EpisodeStore) -> None:
    assert store.record_many([episode(n) for n in range(5)]) == 5
    assert len(store.list().episodes) == 5


def test_delete_is_idempotent_and_forgets(store: EpisodeStore) -> None:
    store.record_many([episode(1, "Fix the flaky payments test"), episode(2)])
    assert store.delete("ep-0001") is True
    assert store.delete("ep-0001") is False
    assert [e.id for e in store.list().episodes] == ["ep-0002"]
    assert store.search(TaskContext(goal="flaky payments test")).hits == []
    with pytest.raises(NotFoundError):
        store.get("ep-0001")


def test_listing_is_newest_first_and_pages_through_everything_once(store: EpisodeStore) -> None:
    store.record_many([episode(n) for n in (3, 1, 4, 5, 9, 2, 6)])
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = store.list(page_size=2, page_token=token)
        seen += [e.id for e in page.episodes]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert seen == [f"ep-{n:04d}" for n in (9, 6, 5, 4, 3, 2, 1)]
    assert pages == 4


def test_equal_times_are_ordered_by_id_descending(store: EpisodeStore) -> None:
    twins = [episode(1), episode(1)]
    twins[1].id = "ep-0001b"
    store.record_many(twins)
    first = store.list(page_size=1)
    second = store.list(page_size=1, page_token=first.next_page_token)
    assert [first.episodes[0].id, second.episodes[0].id] == ["ep-0001b", "ep-0001"]
    assert second.next_page_token == ""


@pytest.mark.parametrize(
    ("filters", "wanted"),
    [
        (EpisodeFilter(task_id="shared"), {2, 3}),
        (EpisodeFilter(agent="reviewer"), {3}),
        (EpisodeFilter(phase="VERIFY"), {4}),
        (EpisodeFilter(outcome="failure"), {2}),
        (EpisodeFilter(since=START + timedelta(hours=2), until=START + timedelta(hours=4)), {2, 3}),
        (EpisodeFilter(file="billing/invoice.py"), {1, 4}),
        (EpisodeFilter(file="./billing/invoice.py", task_id="task-4"), {4}),
        (EpisodeFilter(agent="nobody"), set()),
    ],
)
def test_every_filter_is_honoured(
    store: EpisodeStore, filters: EpisodeFilter, wanted: set[int]
) -> None:
    store.record_many(
        [
            episode(1, modified=("billing/invoice.py",)),
            episode(2, task_id="shared", outcome="failure"),
            episode(3, task_id="shared", agent="reviewer"),
            episode(4, phase="VERIFY", read=("billing/invoice.py",)),
            episode(5),
        ]
    )
    assert {int(e.id[3:]) for e in store.list(filters).episodes} == wanted


def test_a_bad_or_foreign_page_token_is_refused(store: EpisodeStore) -> None:
    store.record_many([episode(n) for n in range(3)])
    token = store.list(page_size=1).next_page_token
    with pytest.raises(ValueError, match="page_token"):
        store.list(page_token="not-a-token")
    with pytest.raises(ValueError, match="page_token"):
        store.list(EpisodeFilter(agent="coder"), page_token=token)


@pytest.mark.parametrize(
    "arguments", [{"page_size": 1001}, {"limit": 101}, {"max_context_tokens": -1}]
)
def test_arguments_out_of_range_are_refused(store: EpisodeStore, arguments: dict[str, int]) -> None:
    name = next(iter(arguments))
    with pytest.raises(ValueError, match=name):
        if name == "page_size":
            store.list(page_size=arguments[name])
        else:
            store.search(TaskContext(goal="anything"), **arguments)


def corpus() -> list[EpisodeTrace]:
    return [
        episode(1, "Add pagination to the orders API"),
        episode(
            2,
            "Fix the login redirect loop",
            modified=("auth/session.py",),
            read=("auth/views.py",),
            error=("test_failure", "redirect loop in test_login", "clear the stale session key"),
        ),
        episode(
            3,
            "Investigate the login redirect loop",
            outcome="failure",
            modified=(),
            read=("auth/views.py",),
            error=("test_failure", "redirect loop in test_login", ""),
        ),
        episode(4, "Speed up the report export", modified=("reports/export.py",)),
        episode(5, "Document the billing module", modified=("docs/billing.md",)),
    ]


def test_search_finds_an_episode_by_its_files_alone(store: EpisodeStore) -> None:
    store.record_many(corpus())
    found = store.search(TaskContext(goal="zzz unrelated words", files=["reports/export.py"]))
    assert [hit.episode.id for hit in found.hits] == ["ep-0004"]


def test_search_ranks_by_words_best_first_and_counts_access(store: EpisodeStore) -> None:
    store.record_many(corpus())
    found = store.search(TaskContext(goal="orders API pagination"), limit=3)
    assert found.hits[0].episode.id == "ep-0001"
    assert found.hits[0].episode.access_count == 1
    assert "Add pagination to the orders API" in found.context
    scores = [hit.score for hit in found.hits]
    assert scores == sorted(scores, reverse=True)
    assert store.get("ep-0001").access_count == 2


def test_for_a_debugging_task_the_resolved_episode_comes_first(store: EpisodeStore) -> None:
    store.record_many(corpus())
    task = TaskContext(goal="Fix the login redirect loop again", files=["auth/views.py"])
    found = store.search(task)
    assert [hit.episode.id for hit in found.hits[:2]] == ["ep-0002", "ep-0003"]
    assert "clear the stale session key" in found.context


def test_search_honours_the_limit_and_finds_nothing_unrelated(store: EpisodeStore) -> None:
    store.record_many([episode(n, f"Tune the cache layer part {n}") for n in range(8)])
    assert len(store.search(TaskContext(goal="cache layer"), limit=3).hits) == 3
    assert len(store.search(TaskContext(goal="cache layer")).hits) == 5  # the default
    assert store.search(TaskContext(goal="kubernetes helm chart")).hits == []
    assert store.search(TaskContext(goal="kubernetes helm chart")).context == ""


@pytest.mark.parametrize("budget", [1, 5, 20, 60, 400])
def test_the_context_never_exceeds_its_budget(store: EpisodeStore, budget: int) -> None:
    store.record_many(corpus())
    task = TaskContext(goal="Fix the login redirect loop", files=["auth/views.py"])
    found = store.search(task, "redirect loop in test_login", max_context_tokens=budget)
    assert 0 < len(found.context) <= budget * TOKEN_CHARS
    assert found.hits  # the budget limits the context, not the hits


def test_stores_of_two_namespaces_are_isolated(new_store: NewStore) -> None:
    one, other = new_store(), new_store()
    one.record(episode(1, "Migrate the scheduler to cron syntax"))
    assert other.list().episodes == []
    assert other.search(TaskContext(goal="scheduler cron syntax")).hits == []
    with pytest.raises(NotFoundError):
        other.get("ep-0001")
    assert other.delete("ep-0001") is False
    assert [e.id for e in one.list().episodes] == ["ep-0001"]


def test_concurrent_records_lose_nothing(store: EpisodeStore) -> None:
    def record(first: int) -> None:
        for n in range(first, first + 10):
            store.record(episode(n))

    threads = [threading.Thread(target=record, args=(10 * t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.list(page_size=100).episodes) == 40
