"""Windows.besides answers for many turns what holds and beside answer for one."""

from hypothesis import given, settings
from hypothesis import strategies as st

from himga.memory.windows import Windows


def one_at_a_time(windows: Windows, numbers: list[int]) -> tuple[list[int], list[int], list[int]]:
    inside = [i for i, n in enumerate(numbers) if windows.holds(n)]
    return (
        inside,
        [windows.beside(numbers[i])[0] for i in inside],
        [windows.beside(numbers[i])[1] for i in inside],
    )


@settings(max_examples=200, deadline=None)
@given(
    sessions=st.lists(st.integers(0, 3), min_size=1, max_size=30),
    gap=st.integers(0, 5),
    removed=st.sets(st.integers(0, 40)),
    asked=st.lists(st.integers(-3, 45), max_size=12),
)
def test_besides_answers_as_holds_and_beside_do(
    sessions: list[int], gap: int, removed: set[int], asked: list[int]
) -> None:
    windows = Windows()
    first = len(sessions) // 2
    windows.add(sessions[:first], [3] * first, ["a"] * first)
    windows.skip_to(windows.end + gap)  # numbers that hold no turn
    rest = sessions[first:]
    windows.add(rest, [2] * len(rest), ["b"] * len(rest))
    windows.remove([n for n in removed if windows.holds(n)])
    inside, before, after = windows.besides(asked)
    assert (list(inside), list(before), list(after)) == one_at_a_time(windows, asked)


def test_besides_of_one_turn_and_of_none() -> None:
    windows = Windows()
    windows.add(["s", "s", "t"], [1, 1, 1], ["a", "a", "a"])
    assert [list(found) for found in windows.besides([1])] == [[0], [0], [-1]]
    assert [list(found) for found in windows.besides([])] == [[], [], []]
    assert [list(found) for found in windows.besides([7, -1])] == [[], [], []]
