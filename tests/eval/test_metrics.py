"""compute_metrics: the groups, and their means against values worked out by hand."""

import math

import pytest

from himga.eval import ALL, OVERALL, Verdict, compute_metrics, format_table
from himga.llm import Completion
from tests.eval.results import result

RESULTS = [
    # category 1, gold parts hiking (1) and painting (0): F1 0.5;
    # BLEU-1: 1 token, matched, against 3 (hiking , painting): exp(1 - 3)
    result(1, "hiking, painting", "hiking"),
    # F1 1; BLEU-1 1
    result(2, "7 May 2023", "7 May 2023"),
    # category 5: declines, 1; no BLEU-1, not judged
    result(5, "researching adoption agencies", "Not mentioned in the conversation"),
    # F1 1 ("a" goes); BLEU-1: 1 of 2 tokens, longer than the gold: 0.5
    result(4, "greyhound", "a greyhound"),
    # nothing shared: 0, 0
    result(4, "dog", "cats"),
]


def verdict(correct: bool | None) -> Verdict:
    return Verdict(correct, "reply", Completion("reply", "test", "judge"))


VERDICTS = [verdict(True), verdict(False), None, verdict(True), verdict(None)]


def test_groups_and_their_order() -> None:
    metrics = compute_metrics(RESULTS, VERDICTS)
    assert list(metrics) == [OVERALL, "category 1", "category 2", "category 4", "category 5", ALL]
    assert metrics[OVERALL].questions == 4  # category 5 left out
    assert metrics[ALL].questions == 5


def test_f1_means() -> None:
    metrics = compute_metrics(RESULTS)
    assert metrics[OVERALL].f1 == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    assert metrics[ALL].f1 == pytest.approx((0.5 + 1 + 1 + 1 + 0) / 5)
    assert metrics["category 4"].f1 == pytest.approx(0.5)
    assert metrics["category 5"].f1 == 1.0


def test_bleu1_means_leave_category_5_out() -> None:
    metrics = compute_metrics(RESULTS)
    expected = (math.exp(-2) + 1 + 0.5 + 0) / 4
    assert metrics[OVERALL].bleu1 == pytest.approx(expected)
    assert metrics[ALL].bleu1 == pytest.approx(expected)
    assert metrics["category 5"].bleu1 is None


def test_judge_accuracy_counts_the_labelled_answers() -> None:
    metrics = compute_metrics(RESULTS, VERDICTS)
    # labelled: True, False, True; the fifth reply had no label
    assert (metrics[OVERALL].judge_accuracy, metrics[OVERALL].judged) == (pytest.approx(2 / 3), 3)
    assert metrics["category 4"].judge_accuracy == 1.0
    assert metrics["category 5"].judge_accuracy is None
    assert compute_metrics(RESULTS)[OVERALL].judge_accuracy is None


def test_unnumbered_categories_group_by_name() -> None:
    metrics = compute_metrics(
        [
            result(0, "6", "6 days", category_name="temporal-reasoning"),
            result(0, "a greyhound", "greyhound", category_name="single-session-user"),
        ]
    )
    assert list(metrics) == [OVERALL, "single-session-user", "temporal-reasoning", ALL]
    assert metrics["temporal-reasoning"].f1 == pytest.approx(2 / 3)


def test_verdicts_must_match_the_results() -> None:
    with pytest.raises(ValueError, match="one verdict per result: got 2 for 5 results"):
        compute_metrics(RESULTS, VERDICTS[:2])


def test_the_summary_reads_plainly() -> None:
    overall = compute_metrics(RESULTS, VERDICTS)[OVERALL]
    assert str(overall) == ("4 questions, F1 0.625, BLEU-1 0.409, judge accuracy 0.667 (3 judged)")


def test_the_table_puts_runs_side_by_side() -> None:
    table = format_table(
        {"null": compute_metrics(RESULTS[:2]), "keyword": compute_metrics(RESULTS, VERDICTS)}
    ).splitlines()
    assert table[0].split() == ["null", "keyword"]
    assert table[1].split() == ["group", "n", "F1", "BLEU-1", "judge", "F1", "BLEU-1", "judge"]
    rows = {line[:10].strip(): line[10:].split() for line in table[2:]}
    # where the runs hold different questions, each run's count is shown
    assert rows["category 4"] == ["0/2", "-", "-", "-", "0.500", "0.250", "1.000"]
    assert rows["category 1"] == ["1", "0.500", "0.135", "-", "0.500", "0.135", "1.000"]
    assert rows["overall"] == ["2/4", "0.750", "0.568", "-", "0.625", "0.409", "0.667"]
