"""The BaseMemory contract, run against every memory the registry knows, in-process and remote.

Each registry memory runs three times: made by its factory in this process, as a RemoteMemory
over a real server on 127.0.0.1 that opens the namespace with that memory, and as an
AsyncRemoteMemory over the same server. A memory added to the
registry joins this suite by itself. The seed's five contracts come first, then what users rely
on beyond them: what was ingested is found, namespaces are isolated, and concurrent ingests from
several threads lose nothing.
"""

import itertools
import re
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from himga.data.conversation import Message, Session
from himga.kinds import Keeps
from himga.memory.base import BaseMemory, Hit
from himga.memory.budget import count_tokens
from himga.memory.filters import MessageFilter
from himga.memory.registry import memory_kind, memory_names, open_memory
from himga.memory.times import message_time, micros
from himga.service import RemoteMemory
from himga.storage.place import Place
from himga.storage.postgres import recorded_memory
from tests.conftest import HTTP_PORTS
from tests.http.connect_stub import ConnectStub
from tests.memory.sync_over_async import SyncOverAsync

# Memories that keep nothing by design; every other memory must find what it stored. New
# memories are taken to store, so one that silently does not fails here until listed.
NON_STORING = {"null"}
# Memories that find by meaning too: a search also returns turns that share no word with the
# query (their nearest by meaning), after or among those that do.
BY_MEANING = {"hybrid"}
# Memories whose context lines are the seed example's own: `[<date_str or unknown>]`, the time of
# a message in a session without date_str left unsaid.
SEED_LINES = {"naive"}

# Each registry memory in process, through RemoteMemory, through AsyncRemoteMemory (run by
# SyncOverAsync, which waits for each of its coroutines), and through RemoteMemory's calls sent
# over the server's HTTP port (Connect) instead of gRPC.
MEMORIES = [
    pytest.param((name, way), id=f"{way}-{name}")
    for name in memory_names()
    for way in ("local", "remote", "async", "http")
]
# A memory that keeps namespaces where the server does runs over the session's database too,
# in this process and through the server over it.
MEMORIES += [
    pytest.param((name, way), id=f"{way}-{name}")
    for name in memory_names()
    if memory_kind(name).keeps is Keeps.DATA_DIRECTORY_OR_DATABASE
    for way in ("database-local", "database-remote")
]


def over_http(target: str, namespace: str, memory: str) -> RemoteMemory:
    """A RemoteMemory whose calls go over the HTTP port of the server at `target`."""
    remote = RemoteMemory(target, namespace, memory=memory)
    remote._stub = ConnectStub(HTTP_PORTS[target], "MemoryService")  # type: ignore[assignment]
    return remote


@dataclass
class Kind:
    """One kind of memory under test: `new()` makes one in a fresh namespace."""

    new: Callable[[], BaseMemory]
    stores: bool
    by_meaning: bool = False
    dates_by_time: bool = True


@pytest.fixture(params=MEMORIES)
def kind(
    request: pytest.FixtureRequest,
    place_of: Callable[[str], Place],
    server_of: Callable[[str], str],
) -> Iterator[Kind]:
    """Memories of one kind; in-process ones share one place (a data directory, or the
    session's database), as a server's do."""
    name, way = request.param
    made: list[BaseMemory] = []

    def new() -> BaseMemory:
        namespace = f"contract-{uuid.uuid4().hex}"
        if way == "local":
            memory = open_memory(name, namespace, place_of(name))
            made.append(memory)
            return memory
        if way == "database-local":
            database = request.getfixturevalue("database")
            recorded_memory(database, namespace, name)  # as the server's opener records it
            memory = open_memory(name, namespace, database)
            made.append(memory)
            return memory
        if way == "database-remote":
            memory = RemoteMemory(
                request.getfixturevalue("postgres_memory_server"), namespace, memory=name
            )
            made.append(memory)
            return memory
        if way == "http":
            memory = over_http(server_of(name), namespace, name)
            made.append(memory)
            return memory
        client = RemoteMemory if way == "remote" else SyncOverAsync
        memory = client(server_of(name), namespace, memory=name)
        made.append(memory)
        return memory

    yield Kind(
        new,
        stores=name not in NON_STORING,
        by_meaning=name in BY_MEANING,
        dates_by_time=name not in SEED_LINES,
    )
    for memory in made:
        memory.close()


_words = ("".join(letters) for letters in itertools.product("bcdfghjklmnpqrstvwxz", repeat=4))


def unique_word() -> str:
    """A made-up word no other message of the run holds (letters only: tokenisers keep it)."""
    return "quo" + next(_words)


def said(word: str, turn_id: str = "D1:1", session_id: str = "s1") -> tuple[Message, Session]:
    """A message holding `word`, in a dated session."""
    return (
        Message(
            role="Caroline", content=f"I keep thinking about {word} these days.", turn_id=turn_id
        ),
        Session(session_id=session_id, date_str="1:56 pm on 8 May, 2023"),
    )


# The seed's five contracts.


def test_empty_query_returns_a_string(kind: Kind) -> None:
    memory = kind.new()
    assert memory.retrieve("") == ""
    memory.ingest(*said(unique_word()))
    assert isinstance(memory.retrieve(""), str)


def test_reset_forgets_everything_ingested(kind: Kind) -> None:
    memory = kind.new()
    words = [unique_word() for _ in range(5)]
    for i, word in enumerate(words):
        memory.ingest(*said(word, turn_id=f"D1:{i}"))
    memory.reset()
    for word in words:
        assert memory.retrieve(word) == ""
        assert memory.search(word) == []
    assert memory.retrieve(" ".join(words)) == ""


def test_memory_works_after_reset(kind: Kind) -> None:
    memory = kind.new()
    old, new = unique_word(), unique_word()
    memory.ingest(*said(old))
    memory.reset()
    memory.ingest(*said(new, turn_id="D2:1"))
    assert old not in memory.retrieve(old)
    if kind.stores:
        assert new in memory.retrieve(new)


def test_instances_are_independent(kind: Kind) -> None:
    first, second = kind.new(), kind.new()
    word = unique_word()
    first.ingest(*said(word))
    assert second.retrieve(word) == ""
    assert second.search(word) == []
    second.reset()
    if kind.stores:
        assert word in first.retrieve(word)


@pytest.mark.parametrize(
    "query",
    ["", "   ", "hiking", "What did Caroline say?", '"unbalanced (quote* AND OR NOT:', "王小明 🌤️"],
)
def test_retrieve_returns_a_str(kind: Kind, query: str) -> None:
    memory = kind.new()
    memory.ingest(*said(unique_word()))
    assert type(memory.retrieve(query)) is str


# Beyond the seed.


def test_retrieve_after_ingest_finds_the_content(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    memory.ingest(*said(unique_word(), turn_id="D1:1"))
    memory.ingest(*said(word, turn_id="D1:2", session_id="s2"))
    if kind.stores:
        assert word in memory.retrieve(word)
    else:
        assert memory.retrieve(word) == ""


# Messages in scripts that write marks on their letters or no spaces between their words, each
# with a word of it to ask for.
SCRIPTS = [
    ("मैंने आज पुस्तकालय से नई किताब ली", "किताब"),
    ("நேற்று கடற்கரையில் நண்பர்களுடன் நடந்தேன்", "கடற்கரையில்"),
    ("我昨天在北京喝了一杯咖啡", "咖啡"),
    ("我昨天买了一只猫，它叫小白。", "猫"),  # noqa: RUF001 (a word of one character)
    ("週末に東京で寿司を食べました", "寿司"),
    ("저는 요즘 한국어를 공부해요", "한국어를"),
    ("Вчера мы ходили в театр", "театр"),
    ("เมื่อวานฉันไปตลาดน้ำกับแม่", "ตลาดน้ำ"),
]


def test_a_word_finds_its_message_in_every_script(kind: Kind) -> None:
    memory = kind.new()
    session = Session(session_id="s1", date_str="1:56 pm on 8 May, 2023")
    memory.ingest_many(
        (Message(role="Mei", content=content, turn_id=f"D1:{i}"), session)
        for i, (content, _) in enumerate(SCRIPTS)
    )
    for i, (_, word) in enumerate(SCRIPTS):
        found = [hit.turn_id for hit in memory.search(word, limit=3)]
        if not kind.stores:
            assert found == []
        elif kind.by_meaning:  # among the turns nearest by meaning (the model's: English-first)
            assert f"D1:{i}" in found, word
        else:
            assert found[:1] == [f"D1:{i}"], word


def test_search_and_recall_keep_their_limit_and_agree(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    count = memory.ingest_many(said(word, turn_id=f"D1:{i}") for i in range(15))
    assert count == 15
    hits = memory.search(word, limit=4)
    # A memory that stores finds all 15 and gives exactly the 4 asked for; one that stores
    # nothing has none to give.
    assert len(hits) == (4 if kind.stores else 0)
    assert all(isinstance(hit, Hit) for hit in hits)
    context, recalled = memory.recall(word, limit=4)
    assert recalled == hits
    # The context is built from the hits answered: `limit` bounds both.
    assert len(context.splitlines()) == len(hits)
    assert all(hit.content in context for hit in hits)
    assert memory.recall(word)[0] == memory.retrieve(word)  # the default limit: as retrieve
    assert memory.search(word, limit=0) == []
    assert memory.recall(word, limit=0) == ("", [])
    for hit in hits:
        assert (hit.role, hit.session_id, hit.date_str) == (
            "Caroline",
            "s1",
            "1:56 pm on 8 May, 2023",
        )
        assert word in hit.content


def test_concurrent_ingest_loses_nothing(kind: Kind) -> None:
    memory = kind.new()
    threads, per_thread = 8, 25
    words = [[unique_word() for _ in range(per_thread)] for _ in range(threads)]

    def ingest_all(thread: int) -> None:
        for i, word in enumerate(words[thread]):
            memory.ingest(*said(word, turn_id=f"D{thread}:{i}", session_id=f"s{thread}"))

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(ingest_all, range(threads)))  # re-raises any thread's error
    if kind.stores:
        missing = [w for row in words for w in row if w not in memory.retrieve(w)]
        assert missing == []


# The whole memory API: ids and corrections, times, deletes, filters, budgets, listings. Every
# storing memory keeps each promise exactly; NullMemory keeps them as a memory holding nothing.

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def conversation(word: str) -> list[tuple[Message, Session]]:
    """Twelve turns in three sessions (s1, s2 interleaved, then s3), by two speakers, each
    holding `word`, with times an hour apart (own timestamps in s1, the session's in s2, the
    date_str's in s3) and metadata on every other turn."""
    sessions = {
        "s1": Session(session_id="s1"),
        "s2": Session(session_id="s2", timestamp=T0 + timedelta(days=1)),
        "s3": Session(session_id="s3", date_str="9:15 am on 3 March, 2024"),
    }
    items = []
    for i in range(12):
        session = ["s1", "s2"][i % 2] if i < 8 else "s3"
        fields: dict[str, object] = {
            "role": ["Caroline", "Melanie"][i % 3 % 2],
            "content": f"{word} turn {i} {'painting' if i % 4 == 0 else 'hiking'}",
            "turn_id": f"T{i}",
        }
        if session == "s1":
            fields["timestamp"] = T0 + timedelta(hours=i)
        if i % 2 == 0:
            fields["metadata"] = {"user": ["u1", "u2"][i % 4 // 2], "kind": "chat"}
        items.append((Message.model_validate(fields), sessions[session]))
    return items


def answers(memory: BaseMemory, query: str, **options: object) -> list[tuple[str, float]]:
    """(id, score) of every hit for `query` (up to 100), best first."""
    return [(h.turn_id, h.score) for h in memory.search(query, 100, **options)]  # type: ignore[arg-type]


def listed(memory: BaseMemory, page_size: int = 5, **options: object) -> list[str]:
    """The ids of every message a listing gives, page after page."""
    ids: list[str] = []
    token = ""
    while True:
        page = memory.list(page_size=page_size, page_token=token, **options)  # type: ignore[arg-type]
        assert len(page.messages) <= page_size
        ids += [stored.id for stored in page.messages]
        if not page.next_page_token:
            return ids
        token = page.next_page_token


def test_every_message_has_an_id_returned_in_order(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    message, session = said(word)
    ids = memory.store([(message, session), (Message(role="Ada", content=word), session)])
    assert ids[0] == "D1:1" and re.fullmatch("[0-9a-f]{32}", ids[1])
    if kind.stores:
        assert sorted(h.turn_id for h in memory.search(word)) == sorted(ids)
        assert listed(memory) == ids


def test_storing_an_id_again_replaces_the_message_in_its_place(kind: Kind) -> None:
    memory, fresh = kind.new(), kind.new()
    old, new = unique_word(), unique_word()
    items = conversation(old)
    memory.store(items)
    corrected = Message(role="Ada", content=f"{new} corrected", turn_id="T5")
    memory.ingest(corrected, items[5][1])
    for query in (old, f"{old} turn 5", new):
        assert items[5][0].content not in [h.content for h in memory.search(query, 100)]
    assert [h.content for h in memory.search(new, 1)] == (
        [corrected.content] if kind.stores else []
    )
    # Exactly as if the corrected message had been stored in the first place.
    fresh.store([*items[:5], (corrected, items[5][1]), *items[6:]])
    for query in (old, new, f"{old} painting", "Caroline hiking"):
        assert answers(memory, query) == answers(fresh, query)
    if kind.stores:
        assert listed(memory) == [f"T{i}" for i in range(12)]


def test_in_one_batch_the_last_of_an_id_wins_at_the_place_of_the_first(kind: Kind) -> None:
    memory = kind.new()
    first, last = unique_word(), unique_word()
    one, two = Session(session_id="s1"), Session(session_id="s2")  # no neighbours in common
    ids = memory.store(
        [
            (Message(role="Ada", content=first, turn_id="A"), one),
            (Message(role="Ada", content=f"{first} {last} between", turn_id="B"), two),
            (Message(role="Bo", content=last, turn_id="A"), one),
        ]
    )
    assert ids == ["A", "B", "A"]
    found = [(h.turn_id, h.content) for h in memory.search(first)]
    if kind.by_meaning:  # A is found by meaning alone now, as what it says now
        assert found[0] == ("B", f"{first} {last} between") and ("A", first) not in found
    else:
        assert [turn_id for turn_id, _ in found] == (["B"] if kind.stores else [])
    if kind.stores:
        assert {h.turn_id: h.role for h in memory.search(last)} == {"A": "Bo", "B": "Ada"}
        assert listed(memory) == ["A", "B"]


def test_a_message_has_its_own_time_else_its_sessions_else_its_date_str(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    items = conversation(word)
    unreadable = Session(session_id="s4", date_str="the day after the party")
    items.append((Message(role="Ada", content=f"{word} turn 12", turn_id="T12"), unreadable))
    memory.store(items)  # a date_str that says no time fails nothing
    times = {h.turn_id: h.time for h in memory.search(word, 100)}
    if kind.stores:
        assert times["T0"] == T0 and times["T2"] == T0 + timedelta(hours=2)
        assert times["T1"] == times["T3"] == T0 + timedelta(days=1)
        assert times["T8"] == datetime(2024, 3, 3, 9, 15, tzinfo=UTC)
        assert times["T12"] is None
        stored = {s.id: s for s in memory.list(page_size=100).messages}
        assert stored["T0"].message() == items[0][0]
        assert stored["T1"].session() == items[1][1].model_copy(update={"messages": []})
        assert stored["T0"].metadata == {"user": "u1", "kind": "chat"}
        assert stored["T8"].time == times["T8"] and stored["T12"].date_str == unreadable.date_str
    else:
        assert times == {}


def test_the_context_dates_a_message_by_its_session_else_by_its_time(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    at = datetime(2026, 12, 6, 7, 12, 50, 250_000, tzinfo=UTC)
    memory.store(
        [
            (Message(role="Ada", content=f"{word} timed", timestamp=at), Session(session_id="s1")),
            (
                Message(role="Ada", content=f"{word} dated", timestamp=at),
                Session(session_id="s2", date_str="1:56 pm on 8 May, 2023"),
            ),
            (Message(role="Ada", content=f"{word} undated"), Session(session_id="s3")),
        ]
    )
    lines = set(memory.retrieve(word).splitlines())
    if not kind.stores:
        assert lines == set()
        return
    timed = "2026-12-06T07:12:50Z" if kind.dates_by_time else "unknown"
    assert lines == {
        f"[{timed}] Ada: {word} timed",
        f"[1:56 pm on 8 May, 2023] Ada: {word} dated",
        f"[unknown] Ada: {word} undated",
    }


def test_delete_by_ids_sessions_or_time_counts_and_forgets(kind: Kind) -> None:
    memory, fresh = kind.new(), kind.new()
    word = unique_word()
    items = conversation(word)
    memory.store(items)
    gone = {"T3", "T4"}
    assert memory.delete(["T3", "T4", "never-stored"]) == (2 if kind.stores else 0)
    assert memory.delete(["T3"]) == 0  # deleting what is not there is not an error
    assert memory.delete(filter=MessageFilter(session_ids=["s3"])) == (4 if kind.stores else 0)
    gone |= {"T8", "T9", "T10", "T11"}
    hour = timedelta(hours=1)
    in_range = MessageFilter(after=T0 + hour, before=T0 + 3 * hour)  # T2 (T1 is in s2: a day on)
    assert memory.delete(filter=in_range) == (1 if kind.stores else 0)
    gone.add("T2")
    both = MessageFilter(session_ids=["s2"])
    assert memory.delete(["T0", "T1"], filter=both) == (1 if kind.stores else 0)  # T1 only
    gone.add("T1")
    kept = [item for item in items if item[0].turn_id not in gone]
    fresh.store(kept)
    for query in (word, f"{word} painting", "Melanie hiking"):
        assert answers(memory, query) == answers(fresh, query)
        assert not {h for h, _ in answers(memory, query)} & gone
    if kind.stores:
        assert listed(memory) == [m.turn_id for m, _ in kept]


def test_a_delete_that_names_nothing_is_refused_and_deletes_nothing(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    memory.store(conversation(word))
    for call in (
        lambda: memory.delete(),
        lambda: memory.delete([]),
        lambda: memory.delete(filter=MessageFilter()),
    ):
        with pytest.raises(ValueError, match="ids"):
            call()
    assert len(memory.search(word, 100)) == (12 if kind.stores else 0)


def test_namespaces_never_see_each_others_deletes(kind: Kind) -> None:
    one, other = kind.new(), kind.new()
    word = unique_word()
    one.store(conversation(word))
    other.store(conversation(word))
    assert one.delete(filter=MessageFilter(session_ids=["s1", "s2", "s3"])) == (
        12 if kind.stores else 0
    )
    assert len(other.search(word, 100)) == (12 if kind.stores else 0)


FILTERS = {
    "session": MessageFilter(session_ids=["s2"]),
    "sessions": MessageFilter(session_ids=["s1", "s3", "no-such-session"]),
    "role": MessageFilter(roles=["Melanie"]),
    "after": MessageFilter(after=T0 + timedelta(hours=4)),
    "before": MessageFilter(before=T0 + timedelta(hours=4)),
    "range": MessageFilter(after=T0 + timedelta(hours=2), before=T0 + timedelta(days=400)),
    "metadata": MessageFilter(metadata={"user": "u2"}),
    "metadata pairs": MessageFilter(metadata={"user": "u1", "kind": "chat"}),
    "everything": MessageFilter(roles=["Caroline"], session_ids=["s1"], metadata={"kind": "chat"}),
    "nothing": MessageFilter(roles=["nobody"]),
}


def matching(items: list[tuple[Message, Session]], chosen: MessageFilter) -> set[str]:
    """The ids of `items` that `chosen` selects, by MessageFilter.matches (the definition)."""
    found = set()
    for message, session in items:
        time = message_time(message, session)
        stamp = None if time is None else micros(time)
        if chosen.matches(session.session_id, message.role, stamp, message.metadata):
            found.add(str(message.turn_id))
    return found


@pytest.mark.parametrize("name", FILTERS)
def test_a_filter_is_never_ignored(kind: Kind, name: str) -> None:
    memory = kind.new()
    word = unique_word()
    items = conversation(word)
    memory.store(items)
    chosen = FILTERS[name]
    allowed = matching(items, chosen)
    everything = answers(memory, word)
    # Exactly the hits of the unfiltered search that match, with the same scores; the limit
    # is filled from them.
    assert answers(memory, word, filter=chosen) == [h for h in everything if h[0] in allowed]
    top = [h for h in everything if h[0] in allowed][:3]
    assert [(h.turn_id, h.score) for h in memory.search(word, 3, filter=chosen)] == top
    context, hits = memory.recall(word, 3, filter=chosen)
    assert [(h.turn_id, h.score) for h in hits] == top
    contents = {m.turn_id: m.content for m, _ in items}
    for turn_id in contents.keys() - allowed:
        assert contents[turn_id] not in context
    if kind.stores and allowed:
        assert contents[top[0][0]] in context
    assert sorted(listed(memory, 4, filter=chosen)) == (sorted(allowed) if kind.stores else [])


@pytest.mark.parametrize("budget", [1, 2, 5, 12, 30, 1000])
def test_the_context_never_exceeds_its_token_budget(kind: Kind, budget: int) -> None:
    memory = kind.new()
    word = unique_word()
    memory.store(conversation(word))
    whole, hits = memory.recall(word, 10)
    context, budgeted_hits = memory.recall(word, 10, max_context_tokens=budget)
    assert count_tokens(context) <= budget
    assert budgeted_hits == hits  # the budget is the context's, not the hits'
    lines = context.splitlines()
    if kind.stores:
        # Whole hits, the lowest ranked left out first; the best one cut short if alone too long.
        assert lines, "a budget never empties a context that has hits"
        whole_lines = whole.splitlines()
        if lines[-1] in whole_lines:
            assert set(lines) <= set(whole_lines)
        else:
            assert lines[-1].endswith("…") and len(lines) == 1
        if count_tokens(whole) <= budget:
            assert context == whole
    else:
        assert context == ""
    with pytest.raises(ValueError, match="max_context_tokens"):
        memory.recall(word, max_context_tokens=-1)


def test_listing_gives_every_message_once_whatever_happens_between_pages(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    items = conversation(word)
    memory.store(items)
    seen: list[str] = []
    page = memory.list(page_size=5)
    seen += [s.id for s in page.messages]
    # Between pages: new messages, a correction of a message listed and of one not yet, a
    # delete of one not yet listed.
    memory.store([(Message(role="Ada", content=f"{word} new", turn_id="N1"), items[0][1])])
    memory.ingest(Message(role="Ada", content="corrected", turn_id="T1"), items[1][1])
    memory.ingest(Message(role="Ada", content="corrected", turn_id="T9"), items[9][1])
    memory.delete(["T7"])
    while page.next_page_token:
        page = memory.list(page_size=5, page_token=page.next_page_token)
        seen += [s.id for s in page.messages]
    if kind.stores:
        assert seen[:11] == [f"T{i}" for i in range(12) if i != 7]
        assert seen[11:] in ([], ["N1"])  # a message stored after the first page may be listed
    else:
        assert seen == []
    for token in ("not a token", "cDE6", "%%%"):
        with pytest.raises(ValueError, match="page_token"):
            memory.list(page_token=token)
    with pytest.raises(ValueError, match="page_size"):
        memory.list(page_size=0)
