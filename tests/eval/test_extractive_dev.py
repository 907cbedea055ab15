"""The whole loop without a key: the extractive reader over the LoCoMo development file.

The development file sits beside the checkout (`../shared/data/locomo/locomo-dev.json`, or
HIMGA_LOCOMO_PATH); the run takes about two seconds a memory.
"""

import os
from pathlib import Path

import pytest

from himga.agent import BaseAgent
from himga.data import Sample, load_dataset
from himga.eval import ALL, OVERALL, compute_metrics, run_eval
from himga.llm import get_client
from himga.llm.extractive import best_sentence
from himga.memory.registry import open_memory

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def dev_samples() -> list[Sample]:
    path = Path(os.environ.get("HIMGA_LOCOMO_PATH") or "")
    if not path.is_file():
        path = REPO.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
    if not path.is_file():
        pytest.skip("the LoCoMo development file is not beside this checkout")
    return load_dataset("locomo", path)


def test_a_memory_shows_its_worth_without_a_key(dev_samples: list[Sample]) -> None:
    reader = get_client("extractive")
    f1 = {}
    questions = sum(len(s.qa_pairs) for s in dev_samples)
    for name in ["null", "naive", "keyword"]:
        memory = open_memory(name, name, None)
        results = run_eval(dev_samples, agent=BaseAgent(memory=memory, llm=reader))
        assert len(results) == questions
        # the reader answered from what the memory recalled, and nothing else
        for result in results[::25]:
            assert result.prediction == best_sentence(result.question, result.context)
        metrics = compute_metrics(results)
        assert metrics[ALL].questions == questions
        f1[name] = metrics
    null, naive, keyword = f1["null"], f1["naive"], f1["keyword"]
    # with nothing recalled the reader declines everything: every adversarial question "right"
    assert null["category 5"].f1 == 1.0
    assert all(r < 1.0 for r in [naive["category 5"].f1, keyword["category 5"].f1])
    # a memory that recalls the right turns makes the questions answerable
    assert keyword[OVERALL].f1 > 2 * naive[OVERALL].f1 > 0
    assert naive[OVERALL].f1 > null[OVERALL].f1
