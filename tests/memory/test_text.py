"""Index terms: what the keyword memories match on."""

import pytest

from himga.memory.porter import stem
from himga.memory.text import MAX_QUERY_TERMS, query_terms, terms


def test_stopwords_and_single_letters_go_numbers_stay() -> None:
    assert terms("What did I say about the 3 boats and a dog?") == ["sai", "3", "boat", "dog"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("adoption agencies", "adopted agency"),
        ("painting", "paints"),
        ("Running", "runs"),
        ("\uff22\uff2f\uff21\uff34", "boat"),  # full-width letters: NFKC
        ("STRASSE", "straße"),  # casefold
        ("café", "CAFÉ"),
    ],
)
def test_forms_of_a_word_share_terms(a: str, b: str) -> None:
    assert terms(a) == terms(b)


def test_punctuation_and_underscores_split_words() -> None:
    assert terms("de-stress, re_use; e-mail!") == ["de", "stress", "us", "mail"]


def test_query_terms_are_distinct_in_order_and_capped() -> None:
    assert query_terms("boat dog boat boats") == ["boat", "dog"]
    many = " ".join(f"word{i}" for i in range(MAX_QUERY_TERMS * 3))
    assert query_terms(many) == [f"word{i}" for i in range(MAX_QUERY_TERMS)]
    assert query_terms("") == [] and query_terms("the of and ?!") == []


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("cats", "cat"),
        ("feed", "feed"),
        ("agreed", "agre"),
        ("plastered", "plaster"),
        ("motoring", "motor"),
        ("hopping", "hop"),
        ("filing", "file"),
        ("happy", "happi"),
        ("relational", "relat"),
        ("generalization", "gener"),
        ("hopefulness", "hope"),
        ("adjustment", "adjust"),
        ("controlling", "control"),
        ("electrical", "electr"),
        ("is", "is"),
    ],
)
def test_porter_stems_as_the_paper_does(word: str, expected: str) -> None:
    assert stem(word) == expected
