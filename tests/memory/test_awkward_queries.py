"""Queries users (and pasted text) really send: no memory may raise on them."""

from collections.abc import Iterator

import pytest

from himga.data import Message, Session
from himga.memory.base import BaseMemory
from himga.memory.keyword import KeywordMemory
from himga.memory.naive import SimpleKeywordMemory
from himga.memory.sqlite import SQLiteKeywordMemory

AWKWARD = [
    "",
    "   \t\n",
    "the of and is a",  # only stopwords
    "?!.,;:…—()[]{}",  # only punctuation
    '"',
    '"greyhound',
    "*",
    "grey*",
    "NEAR",
    "NEAR(greyhound sofa, 2)",
    "own:greyhound",
    ":",
    "(",
    "greyhound)",
    "-",
    "-greyhound",
    "AND",
    "OR",
    "NOT",
    "greyhound AND OR NOT sofa",
    "^greyhound",
    "{own near}: greyhound",
    "王小明 🌤️ Ünïcödé",
    "\x00\x01 control\x7f",
    "\ud800",  # a lone surrogate
    "greyhound " * 20_000,
    "x" * 1_000_000,  # a 1 MB word
    "".join(f"w{i} " for i in range(150_000)),  # 1 MB of distinct words
]


@pytest.fixture(params=["naive", "keyword", "sqlite"])
def memory(request: pytest.FixtureRequest) -> Iterator[BaseMemory]:
    made: BaseMemory = {
        "naive": SimpleKeywordMemory,
        "keyword": KeywordMemory,
        "sqlite": SQLiteKeywordMemory,
    }[request.param]()
    session = Session(session_id="s1", date_str="3 March, 2023")
    made.ingest(
        Message(role="Ada", content="My greyhound sleeps on the sofa.", turn_id="D1:1"), session
    )
    made.ingest(Message(role="Bruno", content="王小明 likes sunny days 🌤️", turn_id="D1:2"), session)
    yield made
    if isinstance(made, SQLiteKeywordMemory):
        made.close()


@pytest.mark.parametrize("query", AWKWARD, ids=lambda q: repr(q[:24]) + f"[{len(q)}]")
def test_awkward_queries_never_raise(memory: BaseMemory, query: str) -> None:
    assert isinstance(memory.retrieve(query), str)
    hits = memory.search(query)
    assert isinstance(hits, list) and len(hits) <= 10
    context, recalled = memory.recall(query, 3)
    assert isinstance(context, str) and isinstance(recalled, list)


@pytest.mark.parametrize(
    "query",
    ['"greyhound', "grey* greyhound", "NEAR(greyhound sofa)", "own:greyhound", "-greyhound)"],
)
@pytest.mark.parametrize("memory_class", [KeywordMemory, SQLiteKeywordMemory])
def test_query_syntax_is_taken_as_words(memory_class: type[BaseMemory], query: str) -> None:
    """FTS5 operators in a query are plain words to the keyword memories: the turn is found."""
    memory = memory_class()
    session = Session(session_id="s1")
    memory.ingest(Message(role="Ada", content="My greyhound sleeps on the sofa."), session)
    assert "greyhound sleeps" in memory.retrieve(query)


@pytest.mark.parametrize("memory_class", [KeywordMemory, SQLiteKeywordMemory])
def test_unicode_words_are_found(memory_class: type[BaseMemory]) -> None:
    memory = memory_class()
    memory.ingest(Message(role="Chen", content="王小明 Ünïcödé"), Session(session_id="s1"))
    assert memory.search("ünïcödé")[0].content == "王小明 Ünïcödé"
    assert memory.search("王小明")[0].content == "王小明 Ünïcödé"
