"""Index terms: what the keyword memories match on."""

import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.data import Message, Session
from himga.memory import text as text_module
from himga.memory.keyword import KeywordMemory
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
        # Arabic and Hebrew with their short vowels, or without; Arabic's variant letters
        ("الكِتَابُ", "الكتاب"),
        ("الكتـــاب", "الكتاب"),  # tatweel
        ("أختي", "اختي"),
        ("مدرسة", "مدرسه"),
        ("שָׁלוֹם", "שלום"),
        # inflected forms, by the stemmer of the word's script
        ("книга", "книгу"),
        ("ёлки", "елка"),
        ("σπίτι", "σπίτια"),
        ("الكتاب", "كتاب"),  # Arabic's article
        ("بالكتاب", "كتاب"),
        ("зна\u0301чение", "значения"),  # a stress mark
        ("लड़के", "लड़कों"),
        ("புத்தகம்", "புத்தகங்கள்"),
    ],
)
def test_forms_of_a_word_share_terms(a: str, b: str) -> None:
    assert terms(a) == terms(b)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("running café Straße", ["run", "café", "strass"]),  # Latin script: Porter's
        ("книгаbook", ["книгаbook"]),  # the script of its first letter: Russian's, no ending
        ("lëtzebuergesch книги", ["lëtzebuergesch", "книг"]),
    ],
)
def test_a_words_first_letter_chooses_its_stemmer(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_an_inflected_question_finds_its_turn() -> None:
    memory = KeywordMemory()
    session = Session(session_id="s1")
    said = ["Вчера я купила новую книгу", "Мы ходили в театр", "اشتريت الكتاب أمس"]
    memory.ingest_many(
        (Message(role="Mei", content=content, turn_id=f"D1:{i}"), session)
        for i, content in enumerate(said)
    )
    assert [hit.turn_id for hit in memory.search("Какие книги ты купила?")][:1] == ["D1:0"]
    assert [hit.turn_id for hit in memory.search("كتاب")][:1] == ["D1:2"]


def test_punctuation_and_underscores_split_words() -> None:
    assert terms("de-stress, re_use; e-mail!") == ["de", "stress", "us", "mail"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # vowel signs and viramas are part of the word, not breaks in it
        ("स्वागत है", ["स्वागत", "है"]),
        ("வணக்கம் உலகம்", ["வணக்கம்", "உலகம்"]),
        ("স্বাগতম", ["স্বাগতম"]),
        ("e\u0301te\u0301", ["été"]),  # decomposed accents: NFKC composes them
        ("зна\u0301чение", ["значен"]),  # a stress mark on Cyrillic: in the word, then gone
        ("\u0301 ok", ["ok"]),  # a mark on no letter is no word
        # default-ignorable characters do not split a word (Unicode's NFKC_Casefold drops them)
        ("co\u00adoperate", ["cooper"]),
        ("caf\u00ade\u0301", ["café"]),  # and NFKC composes what one stood between
        ("کتاب\u200cها", ["کتاب"]),  # one word (then stemmed)
        # Han, kana and Hangul by each character and each overlapping pair
        ("喝咖啡", ["喝", "喝咖", "咖", "咖啡", "啡"]),
        ("テキスト", ["テ", "テキ", "キ", "キス", "ス", "スト", "ト"]),
        ("학교에서", ["학", "학교", "교", "교에", "에", "에서", "서"]),
        ("iPhone手机, 茶", ["iphon", "手", "手机", "机", "茶"]),
        ("漢\u0301字", ["漢", "字"]),  # a mark of no CJK letter is no term
        # numbers in other scripts' digits: words with no letter, kept as they are
        ("عام ٢٠٢٣", ["عام", "٢٠٢٣"]),
        ("१२३ रुपये", ["१२३", "रुपय"]),
        ("১২৩ টাকা", ["১২৩", "টাকা"]),
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
        ("我昨天买了一只猫，它叫小白。", "猫"),  # a word of one character
        ("ฉันชอบกินข้าวผัดมาก", "ข้าวผัด"),
        ("ខ្ញុំចូលចិត្តអានសៀវភៅ", "សៀវភៅ"),
        ("ຂ້ອຍມັກກິນເຂົ້າໜຽວ", "ເຂົ້າໜຽວ"),
        ("मैं २०२३ में दिल्ली आया", "२०२३"),
    ],
)
def test_a_word_is_found_inside_a_sentence_of_its_script(stored: str, asked: str) -> None:
    assert query_terms(asked) and set(query_terms(asked)) <= set(terms(stored))


CHAT = [  # full-width punctuation, as Chinese is written
    "我的车坏了，明天去修。",
    "我的工作最近很忙。",
    "我昨天买了一只猫，它叫小白。",
    "我的朋友下周来北京。",
]


def test_a_question_in_chinese_ranks_the_turn_that_holds_its_words() -> None:
    # Written without spaces, the question shares no pair but the common "我的" with its
    # answer's turn, only words of one character ("猫", "叫"): those are terms too.
    memory = KeywordMemory()
    session = Session(session_id="s1", date_str="8 May, 2023")
    for i, content in enumerate(CHAT):
        memory.ingest(Message(role="Mei", content=content, turn_id=f"D1:{i}"), session)
    question = "我的猫叫什么名字？"
    assert [hit.turn_id for hit in memory.search(question)][:1] == ["D1:2"]


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
