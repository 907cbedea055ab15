"""Each turn's cell (himga.memory._ranking.cells), which the ranking core reads in a large store in
place of four columns: Windows keeps every cell equal to what the columns say through adds,
holes, deletes and corrections, and the core ranks with cells exactly as without them, refusing
cells that would take it outside its arrays."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from himga.memory import _ranking
from himga.memory.ranking import DEFAULT_METHOD, Method, rank
from himga.memory.windows import Windows
from tests.memory.in_order import walked_in_order_from

# The cell's layout, as _ranking.c defines it: the reader's side of that definition.
IN_ORDER, LENGTH_SHIFT, LENGTH_ESCAPE, SPEAKER_SHIFT, SPEAKER_ESCAPE = 16, 5, 2047, 16, 65535


def _expected_cell(windows: Windows, number: int) -> int:
    """The cell of turn `number` as the columns of `windows` say it should be."""
    near = windows.method.near_turns
    counted, in_order = [], True
    for links, step in ((windows._before, -1), (windows._after, 1)):
        other, count = number, 0
        while count < near and links[other] >= 0:
            other = links[other]
            count += 1
            in_order &= other == number + step * count
        counted.append(count)
    length, speaker = windows._windows[number], windows._speakers[number]
    return (
        counted[0]
        | counted[1] << 2
        | (IN_ORDER if in_order else 0)
        | (length if 0 <= length < LENGTH_ESCAPE else LENGTH_ESCAPE) << LENGTH_SHIFT
        | (speaker if 0 <= speaker < SPEAKER_ESCAPE else SPEAKER_ESCAPE) << SPEAKER_SHIFT
    )


def _assert_cells_current(windows: Windows) -> None:
    cells = windows._cells
    assert cells is not None and len(cells) == windows.end
    for number in range(windows.end):
        assert cells[number] == _expected_cell(windows, number), number


TURN = st.tuples(st.integers(0, 3), st.integers(0, 3000), st.sampled_from("abc"))
"""A new turn: its session, own length and speaker."""


def _split(turns: list[tuple[int, int, str]]) -> tuple[list[int], list[int], list[str]]:
    """Turns as the columns Windows.add and replace take: sessions, lengths, speakers."""
    return [t[0] for t in turns], [t[1] for t in turns], [t[2] for t in turns]


def _written(data: st.DataObject, near: int, check: bool = False) -> Windows:
    """Windows after a random run of writes: interleaved sessions, holes, deletes, corrections;
    with `check`, every cell is held to the columns after each write."""
    windows = Windows(Method(near_turns=near))
    for _ in range(data.draw(st.integers(0, 12))):
        step = data.draw(st.sampled_from(["add", "skip", "remove", "replace"]))
        if step == "add":
            turns = data.draw(st.lists(TURN, max_size=8))
            windows.add(*_split(turns))
        elif step == "skip":
            windows.skip_to(windows.end + data.draw(st.integers(0, 4)))
        elif step == "remove":
            windows.remove(data.draw(st.sets(st.integers(0, 60), max_size=6)))
        else:
            stored = [n for n in range(windows.end) if windows.holds(n)]
            if not stored:
                continue
            chosen = data.draw(st.sets(st.sampled_from(stored), max_size=4))
            moved = [data.draw(TURN) for _ in chosen]
            windows.replace(list(chosen), *_split(moved))
        if check:
            _assert_cells_current(windows)
    return windows


@settings(max_examples=300, deadline=None)
@given(data=st.data(), near=st.integers(0, 3))
def test_every_cell_says_what_the_columns_say_after_any_writes(
    data: st.DataObject, near: int
) -> None:
    _written(data, near, check=True)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), near=st.integers(0, 3))
def test_the_core_ranks_with_cells_exactly_as_with_the_columns(
    data: st.DataObject, near: int
) -> None:
    windows = _written(data, near)
    stored = [n for n in range(windows.end) if windows.holds(n)]
    assume(stored)  # a ranking needs a stored turn for its postings
    postings = [
        array("i", sorted(data.draw(st.lists(st.sampled_from(stored), min_size=1, max_size=12))))
        for _ in range(data.draw(st.integers(1, 3)))
    ]
    named = bytes(data.draw(st.lists(st.integers(0, 1), min_size=3, max_size=3)))
    limit = data.draw(st.integers(1, 12))
    columns = (windows._before, windows._after, windows._windows, windows._speakers)
    statistics = (windows.count, windows.total_length, limit, windows.method)
    with walked_in_order_from(0):  # cells are read where windows are walked in order
        with_cells = rank(postings, *columns, named, *statistics, None, windows._cells)
        without = rank(postings, *columns, named, *statistics, None, None)
    assert with_cells == without


def test_windows_wider_than_a_cell_holds_keep_no_cells() -> None:
    windows = Windows(Method(near_turns=_ranking.CELL_MOST_NEAR + 1))
    windows.add([0, 0], [1, 1], ["a", "a"])
    assert windows._cells is None
    assert [turn for turn, _ in windows.best([array("i", [0])], [], 10)] == [0, 1]


def _columns(count: int, length: int, speaker: int) -> dict[str, array[int]]:
    """`count` turns of one session, each of window length `length`, said by `speaker`."""
    return {
        "before": array("i", range(-1, count - 1)),
        "after": array("i", [*range(1, count), -1]),
        "lengths": array("i", [length] * count),
        "speakers": array("i", [speaker] * count),
    }


def _cells_of(columns: dict[str, array[int]], near: int = 2) -> array[int]:
    count = len(columns["before"])
    made = array("I", bytes(4 * count))
    _ranking.cells(
        made,
        array("i", range(count)),
        columns["before"],
        columns["after"],
        columns["lengths"],
        columns["speakers"],
        near,
    )
    return made


def _ranked(columns: dict[str, array[int]], named: bytes, cells: array[int] | None) -> object:
    count = len(columns["before"])
    args = (columns["before"], columns["after"], columns["lengths"], columns["speakers"])
    postings = [array("i", [1, 1, 3]), array("i", [2])]
    total = sum(columns["lengths"])
    return rank(postings, *args, named, count, total, 10, DEFAULT_METHOD, None, cells)


@pytest.mark.usefixtures("both_ways")
@pytest.mark.parametrize(
    ("length", "speaker"),
    [
        (3, 0),
        (LENGTH_ESCAPE - 1, SPEAKER_ESCAPE - 1),
        (LENGTH_ESCAPE, SPEAKER_ESCAPE),
        (50_000, 70_000),
    ],
)
def test_a_length_or_speaker_past_a_cells_bits_ranks_as_without_cells(
    length: int, speaker: int
) -> None:
    columns = _columns(5, length, speaker)
    named = bytearray(speaker + 1)
    named[speaker] = 1
    for asked in (bytes(named), b"\x00"):
        assert _ranked(columns, asked, _cells_of(columns)) == _ranked(columns, asked, None)


def test_cells_that_reach_past_the_columns_are_refused_not_followed() -> None:
    columns = _columns(4, 1, 0)
    cells = _cells_of(columns)
    cells[3] |= 3 << 2  # the last turn's window said to reach three turns past it
    with walked_in_order_from(0), pytest.raises(ValueError, match="window link"):
        _ranking.rank(
            [array("i", [3])], columns["before"], columns["after"], columns["lengths"],
            columns["speakers"], b"\x00", 4, 4, 10, 2, 1.0, 0.5, 1.2, 0.75, 1.0, None, None,
            cells,
        )  # fmt: skip


def test_bad_cells_are_refused_by_name() -> None:
    columns = _columns(4, 1, 0)
    args = (
        [array("i", [1])], columns["before"], columns["after"], columns["lengths"],
        columns["speakers"], b"\x00", 4, 4, 10,
    )  # fmt: skip
    weights = (1.0, 0.5, 1.2, 0.75, 1.0, None, None)
    with pytest.raises(ValueError, match="fewer than len"):
        _ranking.rank(*args, 2, *weights, array("I", [0, 0]))
    with pytest.raises(TypeError, match="array\\('I'\\)"):
        _ranking.rank(*args, 2, *weights, array("i", [0] * 4))
    with pytest.raises(ValueError, match="near_turns up to 3"):
        _ranking.rank(*args, 4, *weights, _cells_of(columns))
    made = array("I", bytes(16))
    rest = (columns["before"], columns["after"], columns["lengths"], columns["speakers"])
    with pytest.raises(ValueError, match="not a turn number"):
        _ranking.cells(made, array("i", [4]), *rest, 2)
    with pytest.raises(ValueError, match="near_turns 0 to 3"):
        _ranking.cells(made, array("i", [0]), *rest, 4)
    broken = array("i", columns["after"])
    broken[1] = 9
    with pytest.raises(ValueError, match="link names no turn"):
        _ranking.cells(made, array("i", [1]), columns["before"], broken, *rest[2:], 2)
    with pytest.raises(ValueError, match="fewer entries than cells"):
        _ranking.cells(array("I", bytes(20)), array("i", [0]), *rest, 2)
