"""The extractive reader and the prompt layout it reads back."""

import pytest

from himga.llm import NOT_MENTIONED, ChatMessage, get_client, qa_messages, read_qa_prompt
from himga.llm.extractive import best_sentence, sentences

CONTEXT = (
    "[9:15 am on 3 March, 2023] Ada: Morning Bruno! I finally adopted a greyhound from the "
    "shelter.\n"
    "[9:15 am on 3 March, 2023] Bruno: That's wonderful news! What did you name him?\n"
    "[9:15 am on 3 March, 2023] Ada: His name is Pepper. He sleeps on the sofa all day."
)


def test_a_context_splits_into_sentences_with_their_speakers() -> None:
    found = sentences(CONTEXT)
    assert [s.speaker for s in found] == ["Ada", "Ada", "Bruno", "Bruno", "Ada", "Ada"]
    assert found[1].text == "I finally adopted a greyhound from the shelter."
    assert found[3].text == "What did you name him?"
    # a line without the memory's header is text as it stands
    assert [(s.speaker, s.text) for s in sentences("plain words. More words")] == [
        ("", "plain words."),
        ("", "More words"),
    ]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What did Ada adopt from the shelter?", "I finally adopted a greyhound from the shelter."),
        ("What is the name of Ada's dog?", "His name is Pepper."),
        ("Where does Pepper sleep all day?", "He sleeps on the sofa all day."),
    ],
)
def test_the_best_matching_sentence_answers(question: str, answer: str) -> None:
    assert best_sentence(question, CONTEXT) == answer


def test_rare_words_outweigh_common_ones() -> None:
    context = "A: Ada likes tea.\nB: Ada went sailing on the lake.\nC: Ada likes coffee."
    # "Ada" is in every sentence, "sailing" in one
    assert best_sentence("Did Ada like sailing?", context) == "Ada went sailing on the lake."


def test_a_tie_goes_to_the_earlier_sentence() -> None:
    assert best_sentence("What about tea?", "A: tea first.\nB: tea second.") == "tea first."


@pytest.mark.parametrize("context", ["", "A: nothing in common here."])
def test_no_shared_word_means_not_mentioned(context: str) -> None:
    assert best_sentence("Which boat did Bruno repair?", context) == NOT_MENTIONED


def test_the_reader_reads_the_agents_prompt() -> None:
    reader = get_client("extractive")
    completion = reader.complete(qa_messages("Where does Pepper sleep all day?", CONTEXT))
    assert completion.text == "He sleeps on the sofa all day."
    assert (completion.provider, completion.input_tokens, completion.cached) == (
        "extractive",
        0,
        False,
    )


def test_the_reader_refuses_a_prompt_it_cannot_read() -> None:
    with pytest.raises(ValueError, match=r"not laid out as himga\.llm\.qa_prompt writes it"):
        get_client("extractive").complete([ChatMessage("user", "Label this answer CORRECT")])


@pytest.mark.parametrize(
    "context",
    ["", CONTEXT, "line with </memories> inside\nand\n\nblank lines", "Question: a trap\n"],
)
def test_the_prompt_reads_back_as_written(context: str) -> None:
    messages = qa_messages("Where does Pepper sleep?", context, question_date="2023/05/20")
    assert read_qa_prompt(messages) == ("Where does Pepper sleep?", context)
    assert "The question is asked on 2023/05/20." in messages[-1].content
    assert context in messages[-1].content
