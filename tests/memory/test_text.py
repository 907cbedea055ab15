"""Index terms: what the keyword memories match on."""

import sys
import unicodedata

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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # vowel signs and viramas are part of the word, not breaks in it
        ("दुनिया में आपका स्वागत है", ["दुनिया", "में", "आपका", "स्वागत", "है"]),
        ("வணக்கம் உலகம்", ["வணக்கம்", "உலகம்"]),
        ("স্বাগতম", ["স্বাগতম"]),
        ("e\u0301te\u0301", ["été"]),  # decomposed accents: NFKC composes them
        ("зна\u0301чение", ["зна\u0301чение"]),  # noqa: RUF001 (a stress mark on Cyrillic)
        ("\u0301 ok", ["ok"]),  # a mark on no letter is no word
        # default-ignorable characters do not split a word (Unicode's NFKC_Casefold drops them)
        ("co\u00adoperate", ["cooper"]),
        ("caf\u00ade\u0301", ["café"]),  # and NFKC composes what one stood between
        ("می\u200cخواهم", ["میخواهم"]),  # noqa: RUF001 (Persian letters, not Latin)
        # Han, kana and Hangul in overlapping pairs; a lone character stands for itself
        ("我喜欢喝咖啡", ["我喜", "喜欢", "欢喝", "喝咖", "咖啡"]),
        ("日本語のテキスト", ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]),
        ("학교에서 공부해요", ["학교", "교에", "에서", "공부", "부해", "해요"]),
        ("iPhone手机, 茶", ["iphon", "手机", "茶"]),
        ("漢\u0301字", ["漢", "字"]),  # a mark of no CJK letter is no term
        # Thai, Lao, Khmer, Burmese: in pairs too, each letter with the marks written on it
        ("ครับ", ["ครั", "รับ"]),
        ("မင်္ဂလာပါ", ["မင်္", "င်္ဂ", "ဂလာ", "လာပါ"]),
    ],
)
def test_words_of_every_script_are_whole(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


@pytest.mark.parametrize(
    ("stored", "asked"),
    [
        ("मैंने आज नई किताब पढ़ी", "किताब"),
        ("我昨天在北京喝了咖啡", "咖啡"),
        ("東京で寿司を食べました", "寿司"),
        ("저는 학교에서 한국어를 공부해요", "한국어"),
        ("ฉันชอบกินข้าวผัดมาก", "ข้าวผัด"),
        ("ខ្ញុំចូលចិត្តអានសៀវភៅ", "សៀវភៅ"),
        ("ຂ້ອຍມັກກິນເຂົ້າໜຽວ", "ເຂົ້າໜຽວ"),
    ],
)
def test_a_word_is_found_inside_a_sentence_of_its_script(stored: str, asked: str) -> None:
    assert query_terms(asked) and set(query_terms(asked)) <= set(terms(stored))


def test_every_mark_past_the_first_two_planes_is_ignorable() -> None:
    # text.py reads the marks of the first two planes only, trusting this.
    later = [
        c for c in range(0x20000, sys.maxunicode + 1) if unicodedata.category(chr(c))[0] == "M"
    ]
    assert later and all(terms(f"ab{chr(c)}cd") == ["abcd"] for c in later)


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
