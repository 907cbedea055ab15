"""Token budgets: the documented count, and contexts cut to fit by whole lines."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.memory.budget import check_budget, count_tokens, cut, fit_lines


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("   \n\t", 0),
        ("hello", 1),
        ("Hello, world!", 4),
        ("[1:56 pm on 8 May, 2023] Caroline: I went", 15),
        ("don't", 3),
        ("café", 2),
        ("今天天气", 4),
        ("🌤️", 2),  # the emoji and its variation selector
    ],
)
def test_the_count_is_the_documented_one(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


@settings(deadline=None)
@given(st.lists(st.text(max_size=40), max_size=8), st.integers(0, 60))
def test_fitted_lines_keep_the_budget_and_the_best_lines(lines: list[str], budget: int) -> None:
    lines = [line.replace("\n", " ") for line in lines]
    kept = fit_lines(lines, budget)
    if budget == 0:
        assert kept == lines
        return
    assert count_tokens("\n".join(kept)) <= budget
    whole = [line for line in kept if line in lines]
    assert kept[: len(whole)] == lines[: len(whole)]  # a prefix: the lowest ranked go first
    if len(whole) < len(kept):  # only the best line, alone and too long, is cut
        assert len(kept) == 1 and kept[0].endswith("…") and count_tokens(lines[0]) > budget


def test_a_cut_keeps_the_first_tokens_and_ends_in_an_ellipsis() -> None:
    assert cut("one two three four", 3) == "one two…"
    assert cut("one two three four", 1) == "…"
    assert cut("one two", 0) == ""


def test_a_negative_budget_is_refused() -> None:
    assert check_budget(0) == 0
    with pytest.raises(ValueError, match="max_context_tokens"):
        check_budget(-1)
