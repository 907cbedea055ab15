"""The hybrid method's evaluation (himga.eval.hybrid), over the real default model: each fold
chooses on the others only, and with no dense weight and no month the composition ranks as the
keyword memory does."""

from pathlib import Path

import pytest

from himga.cli import main
from himga.data import load_dataset
from himga.eval import evaluate_retrieval
from himga.eval.hybrid import DEFAULT, Candidate, evaluate, leave_one_out, prepare, ranked
from himga.memory.fusion import Fusion
from himga.memory.keyword import KeywordMemory
from tests.embeddings.models import default_embedder

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"
KS = (1, 5, 10, 50)


@pytest.fixture(scope="module")
def conversations() -> list:
    return [prepare(s, default_embedder(), 100) for s in load_dataset("locomo", FIXTURE)]


def test_without_the_dense_side_it_ranks_as_the_keyword_memory(conversations: list) -> None:
    words = Candidate(Fusion(dense_weight=0.0, neighbour_weight=0.0, date_boost=0.0))
    samples = load_dataset("locomo", FIXTURE)
    keyword = evaluate_retrieval(samples, lambda ns, d: KeywordMemory(), KS)
    composed = evaluate(conversations, words, KS)
    for group in keyword.ordered_groups():
        assert composed.questions(group) == keyword.questions(group) > 0
        for k in KS:
            assert composed.recall(group, k) == keyword.recall(group, k)


def test_with_only_the_default_every_fold_keeps_it(conversations: list) -> None:
    folds, pooled = leave_one_out(conversations, KS, grid=())
    assert [fold.chosen for fold in folds] == [DEFAULT, DEFAULT]
    together = evaluate(conversations, DEFAULT, KS)
    assert pooled.recall("overall", 10) == pytest.approx(together.recall("overall", 10))


def test_a_fold_chooses_from_the_grid_on_the_others(conversations: list) -> None:
    grid = (Candidate(leave_out_names=False), Candidate(Fusion(dense_weight=0.0)))
    folds, pooled = leave_one_out(conversations, KS, grid=grid)
    assert all(fold.chosen in (DEFAULT, *grid) for fold in folds)
    assert pooled.samples == len(conversations)
    with pytest.raises(ValueError, match="at least two"):
        leave_one_out(conversations[:1], KS)


def test_the_command_prints_each_fold_and_the_methods_side_by_side(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["eval-retrieval", "--dataset", str(FIXTURE), "--memory", "hybrid", "--leave-one-out"]
    assert main([*argv, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("chose ") == 2
    for label in ("keyword method alone", "issue's baseline", "hybrid method (the default)"):
        assert label in out


def test_the_evaluation_ranks_as_the_hybrid_memory_does_months_and_all() -> None:
    # What the README's figures were measured with is what a user searches with: the same
    # turns in the same order, for the file's questions and for ones naming a month.
    from dataclasses import replace

    from himga.data.conversation import QAPair
    from himga.memory.hybrid_sqlite import HybridSQLiteMemory

    sample = load_dataset("locomo", FIXTURE)[0]
    dated = [
        QAPair(question=f"What did Ada say about the dog in {month}?", answer="", evidence=["D1:1"])
        for month in ("March 2023", "April 2023", "April", "March 2022")
    ]
    sample = replace(sample, qa_pairs=[*sample.qa_pairs, *dated])
    conversation = prepare(sample, default_embedder(), 100)
    asked = [qa for qa in sample.qa_pairs if qa.evidence]
    assert sum(bool(months) for months in conversation.months) == len(dated)
    with HybridSQLiteMemory() as memory:
        memory.store(
            [(message, session) for session in sample.sessions for message in session.messages]
        )
        for index, qa in enumerate(asked):
            found = [hit.turn_id for hit in memory.search(qa.question, 10)]
            assert ranked(conversation, index, DEFAULT, 10) == found, qa.question
