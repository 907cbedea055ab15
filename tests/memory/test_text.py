"""Index terms: what the keyword memories match on."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.memory import text as text_module
from himga.memory.text import MAX_QUERY_TERMS, query_terms, terms, terms_of


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
        ("us", "us"),  # two letters: kept as they are
        ("42", "42"),
    ],
)
def test_words_are_porter_stemmed_as_the_paper_does(word: str, expected: str) -> None:
    assert terms(word) == [expected]


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=60)
ASCII = st.text(st.characters(codec="ascii"), max_size=60)


@given(st.lists(TEXT | ASCII, max_size=8))
def test_a_batch_has_the_terms_of_its_texts_one_by_one(texts: list[str]) -> None:
    assert terms_of(texts) == [terms(text) for text in texts]


@given(ASCII)
def test_ascii_text_has_the_terms_the_unicode_path_finds(text: str) -> None:
    # A non-ASCII single letter (dropped) sends the same words down the general path.
    assert terms(text) == terms(text + " \u00e9")


def test_a_full_word_cache_changes_no_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "Walking the dogs, 42 cats and a Café"
    expected = terms(text)
    monkeypatch.setattr(text_module, "_terms", {})
    monkeypatch.setattr(text_module, "_MAX_CACHED_WORDS", 0)
    assert terms_of([text, text]) == [expected, expected]
    assert text_module._terms == {}  # nothing cached past the bound
