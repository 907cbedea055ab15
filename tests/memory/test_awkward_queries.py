"""Queries users (and pasted text) really send, over every registered memory: none raises, and
each finds the turn its words name (nothing when it names none)."""

import uuid
from collections.abc import Callable, Iterator

import pytest

from himga.data import Message, Session
from himga.memory.base import BaseMemory
from himga.memory.keyword import KeywordMemory
from himga.memory.registry import memory_names, open_memory
from himga.memory.sqlite import SQLiteKeywordMemory
from himga.memory.text import query_terms
from himga.storage.place import Place

GREYHOUND, SUNNY = "D1:1", "D1:2"
# Each query users (and pasted text) really send, with the turn a keyword search must rank first
# (None: no word of it is stored, so nothing is found).
AWKWARD: list[tuple[str, str | None]] = [
    ("", None),
    ("   \t\n", None),
    ("the of and is a", None),  # only stopwords
    ("?!.,;:…—()[]{}", None),  # only punctuation
    ('"', None),
    ('"greyhound', GREYHOUND),
    ("*", None),
    ("grey*", None),
    ("NEAR", None),
    ("NEAR(greyhound sofa, 2)", GREYHOUND),
    ("own:greyhound", GREYHOUND),
    (":", None),
    ("(", None),
    ("greyhound)", GREYHOUND),
    ("-", None),
    ("-greyhound", GREYHOUND),
    ("AND", None),
    ("OR", None),
    ("NOT", None),
    ("greyhound AND OR NOT sofa", GREYHOUND),
    ("^greyhound", GREYHOUND),
    ("{own near}: greyhound", GREYHOUND),
    ("王小明 🌤️ Ünïcödé", SUNNY),
    ("\x00\x01 control\x7f", None),
    ("\ud800", None),  # a lone surrogate
    ("greyhound " * 20_000, GREYHOUND),
    ("x" * 1_000_000, None),  # a 1 MB word
    ("".join(f"w{i} " for i in range(150_000)), None),  # 1 MB of distinct words
]
SAID = {
    GREYHOUND: ("Ada", "My greyhound sleeps on the sofa."),
    SUNNY: ("Bruno", "王小明 likes sunny days 🌤️"),
}
NON_STORING = {"null"}
"""Memories that keep nothing: they find nothing."""
WHOLE_WORDS = {"naive"}
"""Memories that match a query's whitespace-separated words as they are (the seed's example):
a stored word given whole finds its turn; they have no stemming or punctuation rules to hold."""
BY_MEANING = {"hybrid"}
"""Memories that rank by meaning beside words: a query with a word in it finds the turns nearest
in meaning even when no word of it is stored; one with none (stopwords, punctuation) finds
nothing, as by words."""


@pytest.fixture(params=memory_names())
def memory(
    request: pytest.FixtureRequest, place_of: Callable[[str], Place]
) -> Iterator[tuple[str, BaseMemory]]:
    name = request.param
    made = open_memory(name, f"awkward-{uuid.uuid4().hex}", place_of(name))
    session = Session(session_id="s1", date_str="3 March, 2023")
    for turn_id, (role, content) in SAID.items():
        made.ingest(Message(role=role, content=content, turn_id=turn_id), session)
    yield name, made
    made.close()


@pytest.mark.parametrize(
    ("query", "first"),
    [pytest.param(q, first, id=repr(q[:24]) + f"[{len(q)}]") for q, first in AWKWARD],
)
def test_awkward_queries_find_what_they_name_and_never_raise(
    memory: tuple[str, BaseMemory], query: str, first: str | None
) -> None:
    name, memory_ = memory
    hits = [hit.turn_id for hit in memory_.search(query)]
    if name in NON_STORING:
        assert hits == []
    elif name in WHOLE_WORDS:
        assert set(hits) <= set(SAID)
        named = {t for t, (_, content) in SAID.items() if set(query.split()) & set(content.split())}
        assert named <= set(hits)
    elif name in BY_MEANING and first is None and query_terms(query):
        assert set(hits) <= set(SAID)
    else:
        assert hits[:1] == ([first] if first else [])
    context = memory_.retrieve(query)
    assert (SAID[hits[0]][1] in context) if hits else context == ""
    recalled_context, recalled = memory_.recall(query, 3)
    assert [hit.turn_id for hit in recalled] == hits[:3]
    assert recalled_context == context


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
