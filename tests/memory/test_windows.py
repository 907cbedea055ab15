"""Windows.links holds, for every turn number, what holds and beside answer for one turn: what
the hybrid fusion in C reads of each candidate (tests/memory/test_fusion_core.py)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from himga.memory.windows import NO_SESSION, Windows


@settings(max_examples=200, deadline=None)
@given(
    sessions=st.lists(st.integers(0, 3), min_size=1, max_size=30),
    gap=st.integers(0, 5),
    removed=st.sets(st.integers(0, 40)),
)
def test_links_say_what_holds_and_beside_say(
    sessions: list[int], gap: int, removed: set[int]
) -> None:
    windows = Windows()
    first = len(sessions) // 2
    windows.add(sessions[:first], [3] * first, ["a"] * first)
    windows.skip_to(windows.end + gap)  # numbers that hold no turn
    rest = sessions[first:]
    windows.add(rest, [2] * len(rest), ["b"] * len(rest))
    windows.remove([n for n in removed if windows.holds(n)])
    session_of, before, after = windows.links()
    assert len(session_of) == len(before) == len(after) == windows.end
    for number in range(windows.end):
        assert (session_of[number] != NO_SESSION) == windows.holds(number)
        if windows.holds(number):
            assert (before[number], after[number]) == windows.beside(number)
