"""Leave-one-conversation-out: each fold chooses on the others only, and the held-out figures
pool into one report."""

from pathlib import Path

import pytest

from himga.cli import main
from himga.data import load_dataset
from himga.eval import RetrievalReport, evaluate_retrieval
from himga.eval.folds import describe, leave_one_out
from himga.memory.keyword import KeywordMemory
from himga.memory.ranking import DEFAULT_METHOD, Method

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"
KS = (1, 5, 10, 50)


def test_pooled_reports_count_every_question_once() -> None:
    samples = load_dataset("locomo", FIXTURE)
    together = evaluate_retrieval(samples, lambda ns, d: KeywordMemory(), KS)
    apart = [evaluate_retrieval([s], lambda ns, d: KeywordMemory(), KS) for s in samples]
    pooled = RetrievalReport.pooled(apart)
    assert pooled.samples == together.samples == len(samples)
    for group in together.ordered_groups():
        assert pooled.questions(group) == together.questions(group) > 0
        for k in KS:
            assert pooled.recall(group, k) == pytest.approx(together.recall(group, k))


def test_with_only_the_default_every_fold_keeps_it() -> None:
    samples = load_dataset("locomo", FIXTURE)
    folds, pooled = leave_one_out(samples, KS, grid=())
    assert [fold.held_out for fold in folds] == [s.sample_id for s in samples]
    assert all(fold.chosen == DEFAULT_METHOD for fold in folds)
    together = evaluate_retrieval(samples, lambda ns, d: KeywordMemory(), KS)
    assert pooled.recall("overall", 10) == pytest.approx(together.recall("overall", 10))


def test_a_fold_chooses_what_does_best_on_the_others() -> None:
    samples = load_dataset("locomo", FIXTURE)
    # Without neighbours and with a tiny k1 nothing changes much; with a window of zero weight
    # and no boost the method is plain BM25 over single turns. Each fold picks one of the grid.
    grid = (Method(near_turns=0), Method(near_weight=0.0, speaker_boost=0.0))
    folds, pooled = leave_one_out(samples, KS, grid=grid)
    for fold in folds:
        assert fold.chosen in (DEFAULT_METHOD, *grid)
        assert fold.report.samples == 1
    assert pooled.samples == len(samples)
    assert describe(DEFAULT_METHOD) == "the default"
    assert describe(Method(near_turns=0)) == "near_turns 0"


def test_one_conversation_cannot_be_left_out() -> None:
    samples = load_dataset("locomo", FIXTURE)
    with pytest.raises(ValueError, match="at least two"):
        leave_one_out(samples[:1], KS)


def test_the_command_prints_each_fold_and_the_pooled_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["eval-retrieval", "--dataset", str(FIXTURE), "--leave-one-out", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("chose ") == 2
    assert "held-out conversations pooled" in out and "overall" in out
