"""One answer's scores, against values worked out by hand."""

import math

import pytest

from himga.eval.scoring import (
    bleu1,
    bleu_tokens,
    locomo_f1,
    multi_answer_f1,
    normalize_answer,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The cat, and a Dog!", "cat dog"),
        ("Caroline's LGBTQ+ support-group", "carolines lgbtq supportgroup"),
        ("  7 May,   2023. ", "7 may 2023"),
        ("Anna and Andy", "anna andy"),  # only whole words go
    ],
)
def test_normalisation(text: str, normal: str) -> None:
    assert normalize_answer(text) == normal


@pytest.mark.parametrize(
    ("prediction", "gold", "f1"),
    [
        # "the" goes; 2 of 5 predicted tokens are the 2 gold ones: P 0.4, R 1
        ("Caroline went to the support group", "support group", 2 * 0.4 / 1.4),
        # stems: run dog | dog ran -> one shared of two each
        ("running dogs", "the dog ran", 0.5),
        # repeats count once per occurrence on each side: P 1/2, R 1
        ("Paris Paris", "paris", 2 / 3),
        ("a greyhound", "Greyhound.", 1.0),
        ("cats", "dog", 0.0),
        ("", "dog", 0.0),
    ],
)
def test_token_f1(prediction: str, gold: str, f1: float) -> None:
    assert token_f1(prediction, gold) == pytest.approx(f1)


def test_several_answers_average_over_the_gold_parts() -> None:
    # painting: 1, swimming: 0, hiking: 1
    assert multi_answer_f1("hiking, painting", "painting, swimming, hiking") == pytest.approx(2 / 3)
    assert locomo_f1("hiking, painting", "painting, swimming, hiking", 1) == pytest.approx(2 / 3)
    # the same strings as one answer: 2 of 2 predicted, 2 of 3 gold tokens
    assert locomo_f1("hiking, painting", "painting, swimming, hiking", 2) == pytest.approx(0.8)


def test_category_3_scores_the_gold_before_its_semicolon() -> None:
    gold = "Psychology; counseling certification"
    assert locomo_f1("psychology", gold, 3) == 1.0
    # elsewhere the whole gold counts: P 1, R 1/3
    assert locomo_f1("psychology", gold, 4) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("prediction", "score"),
    [
        ("Not mentioned in the conversation", 1.0),
        ("No information available.", 1.0),
        ("That was NOT MENTIONED.", 1.0),
        ("researching adoption agencies", 0.0),
        ("I don't know", 0.0),
    ],
)
def test_category_5_asks_for_a_refusal(prediction: str, score: float) -> None:
    assert locomo_f1(prediction, "researching adoption agencies", 5) == score


def test_bleu_tokens_split_words_punctuation_and_contractions() -> None:
    assert bleu_tokens("Don't know, Caroline's dog.") == [
        "do",
        "n't",
        "know",
        ",",
        "caroline",
        "'s",
        "dog",
        ".",
    ]


@pytest.mark.parametrize(
    ("prediction", "gold", "score"),
    [
        # all 3 predicted tokens match; shorter than the 6-token gold: exp(1 - 6/3)
        ("the cat sat", "the cat sat on the mat", math.exp(-1)),
        # "the" counts once, as often as the gold has it; no penalty when longer
        ("the the the", "the cat", 1 / 3),
        # do n't know . | do not know: 2 of 4
        ("Don't know.", "do not know", 0.5),
        ("7 May 2023", "7 May 2023", 1.0),
        ("x y", "a b", 0.0),
        ("", "a b", 0.0),
    ],
)
def test_bleu1(prediction: str, gold: str, score: float) -> None:
    assert bleu1(prediction, gold) == pytest.approx(score)
