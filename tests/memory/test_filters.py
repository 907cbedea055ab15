"""Filters: one definition (MessageFilter.matches), which the keyword memories' predicate over
turn numbers (Facets.selector) and the selection their ranking core applies (Facets.selection)
follow exactly; page tokens; what a filter refuses."""

from array import array
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.memory.facets import Facets
from himga.memory.filters import EVERYTHING, MessageFilter, deletion
from himga.memory.paging import decode, encode
from himga.memory.times import micros
from himga.memory.windows import Windows

T0 = datetime(2024, 1, 1, tzinfo=UTC)
SESSIONS = ["s1", "s2", "s3"]
ROLES = ["Ada", "Bo"]
PAIRS = st.dictionaries(st.sampled_from(["user", "kind"]), st.sampled_from(["a", "b"]), max_size=2)
TURN = st.tuples(
    st.sampled_from(SESSIONS),
    st.sampled_from(ROLES),
    st.none() | st.integers(0, 10),
    PAIRS,
)
HOURS = st.none() | st.integers(0, 10)
FILTER = st.builds(
    lambda sessions, roles, after, before, pairs: MessageFilter(
        sessions,
        roles,
        None if after is None else T0 + timedelta(hours=after),
        None
        if before is None or (after is not None and before <= after)
        else T0 + timedelta(hours=before),
        pairs,
    ),
    st.lists(st.sampled_from([*SESSIONS, "s9"]), max_size=2),
    st.lists(st.sampled_from([*ROLES, "Cy"]), max_size=2),
    HOURS,
    HOURS,
    PAIRS,
)


def hour(offset: int | None) -> int | None:
    return None if offset is None else micros(T0 + timedelta(hours=offset))


@settings(deadline=None)
@given(st.lists(TURN, max_size=20), st.sets(st.integers(0, 19)), FILTER)
def test_the_selector_answers_as_the_definition(
    turns: list[tuple[str, str, int | None, dict[str, str]]],
    deleted: set[int],
    chosen: MessageFilter,
) -> None:
    windows, facets = Windows(), Facets()
    windows.add([t[0] for t in turns], [1] * len(turns), [""] * len(turns))
    facets.add(range(len(turns)), [t[1] for t in turns], [hour(t[2]) for t in turns],
               [t[3] for t in turns])  # fmt: skip
    windows.remove(deleted)
    allowed = facets.selector(chosen, windows)
    for number, (session, role, offset, pairs) in enumerate(turns):
        want = number not in deleted and chosen.matches(session, role, hour(offset), pairs)
        assert allowed(number) is want


@settings(deadline=None)
@given(st.lists(TURN, min_size=1, max_size=20), st.sets(st.integers(0, 19)), FILTER)
def test_the_selection_the_ranking_core_applies_answers_as_the_definition(
    turns: list[tuple[str, str, int | None, dict[str, str]]],
    deleted: set[int],
    chosen: MessageFilter,
) -> None:
    """Every stored turn holds the query's one term, so a search with a limit of all of them
    returns exactly the turns the C core lets through: those `matches` selects."""
    windows, facets = Windows(), Facets()
    windows.add([t[0] for t in turns], [1] * len(turns), [""] * len(turns))
    facets.add(range(len(turns)), [t[1] for t in turns], [hour(t[2]) for t in turns],
               [t[3] for t in turns])  # fmt: skip
    windows.remove(deleted)
    postings = [array("i", [n for n in range(len(turns)) if n not in deleted])]
    found = windows.best(postings, {"word"}, len(turns), facets.selection(chosen, windows))
    want = {
        number
        for number, (session, role, offset, pairs) in enumerate(turns)
        if number not in deleted and chosen.matches(session, role, hour(offset), pairs)
    }
    assert {number for number, _ in found} == want


def test_a_message_without_a_time_never_matches_a_time_range() -> None:
    assert MessageFilter(roles=["Ada"]).matches("s", "Ada", None, {})
    assert not MessageFilter(after=T0).matches("s", "Ada", None, {})
    assert not MessageFilter(before=T0).matches("s", "Ada", None, {})
    start = micros(T0)
    assert MessageFilter(after=T0).matches("s", "Ada", start, {})
    assert not MessageFilter(before=T0).matches("s", "Ada", start, {})  # before is strict


def test_a_filter_refuses_what_makes_no_sense() -> None:
    with pytest.raises(ValueError, match=r"filter\.before"):
        MessageFilter(after=T0, before=T0)
    with pytest.raises(ValueError, match=r"filter\.after"):
        MessageFilter(after=datetime(2024, 1, 1))  # no time zone
    with pytest.raises(ValueError, match="session_ids and roles are lists"):
        MessageFilter(session_ids="s1")
    assert not EVERYTHING and MessageFilter(metadata={"k": "v"})


def test_a_delete_must_name_something() -> None:
    assert deletion(["a"], None) == (frozenset({"a"}), EVERYTHING)
    for ids, chosen in (((), None), ([], MessageFilter())):
        with pytest.raises(ValueError, match="ids"):
            deletion(ids, chosen)
    with pytest.raises(ValueError, match="ids"):
        deletion("abc", None)


@pytest.mark.parametrize("number", [0, 1, 41, 2**40])
def test_a_page_token_holds_a_position(number: int) -> None:
    assert decode(encode(number)) == number
    assert decode("") == -1


@pytest.mark.parametrize("token", ["x", "cDE6", encode(1) + "A", "cDI6MQ", "cDE6LTE", "cDE6MDE"])
def test_a_token_no_listing_made_is_refused_naming_page_token(token: str) -> None:
    with pytest.raises(ValueError, match="page_token"):
        decode(token)
