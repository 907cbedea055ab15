"""The EpisodeStore contract, run against every store: in-process, SQLite, and remote (a real
server on 127.0.0.1 over its default store). A store added to the registry joins by itself."""

import base64
import json
import threading
from datetime import timedelta

import pytest

from himga.episodes.base import TOKEN_CHARS, EpisodeFilter, EpisodeStore
from himga.errors import NotFoundError
from himga.records import EpisodeTrace, TaskContext
from himga.storage.commit import CallerGone, Terms, committing
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


def test_a_batch_repeating_an_id_is_refused_naming_the_repeat_and_stores_nothing(
    store: EpisodeStore,
) -> None:
    with pytest.raises(ValueError, match=r"episode(s\[| )2.*repeats.*episode(s\[| )0"):
        store.record_many([episode(1), episode(2), episode(1, "Rename the billing module")])
    with pytest.raises(ValueError, match="repeats"):
        store.record_documents([episode(3).to_dict(), episode(3).to_dict()])
    assert store.list().episodes == []


def test_times_are_kept_and_compared_to_the_microsecond(store: EpisodeStore) -> None:
    # Two episodes within one microsecond: kept at that microsecond, so they are listed with
    # the same time, in the order of equal times (by id), and every filter agrees with it.
    documents = []
    for name, nanos in (("z-first", "100"), ("a-later", "900")):
        document = episode(1).to_dict()
        document["id"] = name
        document["timestamp"] = document["timestamp"].replace("Z", f".000000{nanos}Z")
        documents.append(document)
    store.record_documents(documents)
    listed, _ = store.list_documents()
    assert [(e["id"], e["timestamp"]) for e in listed] == [
        ("z-first", episode(1).to_dict()["timestamp"]),
        ("a-later", episode(1).to_dict()["timestamp"]),
    ]
    at = START + timedelta(hours=1)
    micro = timedelta(microseconds=1)
    for filters, wanted in (
        (EpisodeFilter(since=at), 2),
        (EpisodeFilter(since=at + micro), 0),
        (EpisodeFilter(until=at + micro), 2),
        (EpisodeFilter(until=at), 0),
        (EpisodeFilter(since=at, until=at + micro), 2),
    ):
        assert len(store.list(filters).episodes) == wanted, filters


def test_a_naive_time_in_a_filter_is_refused_naming_the_field(store: EpisodeStore) -> None:
    store.record(episode(1))
    naive = START.replace(tzinfo=None)
    for name in ("since", "until"):
        with pytest.raises(ValueError, match=f"{name}: must be a datetime with a time zone"):
            store.list(EpisodeFilter(**{name: naive}))  # type: ignore[arg-type]


@pytest.mark.parametrize("hours", [-1, 0], ids=["ends-before-it-starts", "empty"])
def test_a_time_range_that_does_not_end_after_it_starts_is_refused(
    store: EpisodeStore, hours: int
) -> None:
    store.record(episode(1))
    since = START + timedelta(hours=1)
    with pytest.raises(ValueError, match="until: must be later than since"):
        store.list(EpisodeFilter(since=since, until=since + timedelta(hours=hours)))


def forged(token: str, **changes: object) -> str:
    """A store's page token with some of its fields changed (its filters' fingerprint kept)."""
    data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    data.update(changes)
    text = json.dumps(data)  # ASCII: a lone surrogate is written \ud800, as a client may
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "changes",
    [
        {"t": 2**70},
        {"t": -(2**70)},
        {"t": True},
        {"t": 1.5},
        {"id": "\ud800"},
        {"id": ["ep-0001"]},
        {"f": None},
        {"extra": 1},
    ],
    ids=repr,
)
def test_a_forged_page_token_is_refused(store: EpisodeStore, changes: dict[str, object]) -> None:
    store.record_many([episode(n) for n in range(3)])
    token = store.list(page_size=1).next_page_token
    with pytest.raises(ValueError, match="page_token: not a token ListEpisodes gave"):
        store.list(page_size=1, page_token=forged(token, **changes))


def test_deeply_nested_page_token_is_refused(store: EpisodeStore) -> None:
    token = base64.urlsafe_b64encode(b"[" * 100_000).decode().rstrip("=")
    with pytest.raises(ValueError, match="page_token"):
        store.list(page_token=token)


class Gone:
    """A caller that goes away after `wanted` checks of whether its write is still wanted."""

    def __init__(self, wanted: int) -> None:
        self.wanted = wanted

    def __call__(self) -> None:
        if self.wanted == 0:
            raise CallerGone("the caller went away")
        self.wanted -= 1


@pytest.mark.parametrize("wanted", range(5))
def test_a_write_whose_caller_goes_is_stored_whole_or_not_at_all(
    local_store: EpisodeStore, wanted: int
) -> None:
    # The caller's terms travel in this process: a server checks its own stores' writes so.
    store = local_store
    batch = [episode(n, f"Tune the cache layer part {n}") for n in range(4)]
    try:
        with committing(Terms(Gone(wanted))):
            store.record_many(batch)
    except CallerGone:
        pass
    listed = {e.id for e in store.list().episodes}
    assert listed in (set(), {e.id for e in batch})
    found = {hit.episode.id for hit in store.search(TaskContext(goal="cache layer"), limit=10).hits}
    assert found == listed  # the index holds what is stored, no more, no less
