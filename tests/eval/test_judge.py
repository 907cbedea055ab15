"""The judge: its prompt, how its reply is read, and a batch against the stand-in server."""

import pytest

from himga.eval import batch_judge
from himga.eval.judge import JUDGE_PROMPT, judge_messages, parse_verdict
from himga.llm import LLMCallError, LLMConfigError, RetryPolicy, get_client
from tests.eval.results import result
from tests.llm.fake_server import API_KEY, FakeLLMServer


@pytest.mark.parametrize(
    ("reply", "correct"),
    [
        ('It names the same dog. {"label": "CORRECT"}', True),
        ('Different city.\n```json\n{"label": "WRONG"}\n```', False),
        ('{"label":"correct"}', True),
        # no JSON: the last label in capitals, which the prompt asks the judge to end with
        ("The answer is not correct, so: WRONG", False),
        ("Same date in another form. CORRECT", True),
        # the JSON label wins over words in the explanation
        ('WRONG would be harsh; it is the same topic. {"label": "CORRECT"}', True),
        ("I cannot tell.", None),
        ("", None),
    ],
)
def test_a_reply_is_read_for_its_label(reply: str, correct: bool | None) -> None:
    assert parse_verdict(reply) is correct


def test_the_prompt_is_mem0s_with_the_answer_filled_in() -> None:
    [message] = judge_messages("Where did Ada go?", "the lake", "She went sailing on the lake.")
    assert message.role == "user"
    assert "label an answer to a question as 'CORRECT' or 'WRONG'" in message.content
    assert "Question: Where did Ada go?\nGold answer: the lake\n" in message.content
    assert "Generated answer: She went sailing on the lake.\n" in message.content
    assert 'in a json format with the key as "label"' in JUDGE_PROMPT


def test_a_batch_is_judged_through_the_provider(llm_server: FakeLLMServer) -> None:
    llm_server.reply = lambda prompt: (
        'Same. {"label": "CORRECT"}' if "greyhound" in prompt else '{"label": "WRONG"}'
    )
    llm = get_client("openai", "gpt-test", api_key=API_KEY, base_url=llm_server.url + "/v1")
    results = [
        result(1, "a greyhound", "greyhound", question="What did Ada adopt?"),
        result(5, "LGBTQ+ individuals", "Not mentioned in the conversation"),
        result(2, "7 May 2023", "June", question="When?"),
    ]
    verdicts = batch_judge(results, llm=llm, concurrency=2)
    first, adversarial, third = verdicts
    assert first is not None and first.correct is True
    assert adversarial is None  # category 5 is not judged
    assert third is not None and third.correct is False
    prompts = [r.prompt() for r in llm_server.calls("/v1/chat/completions")]
    assert len(prompts) == 2
    assert any("Gold answer: a greyhound\nGenerated answer: greyhound\n" in p for p in prompts)
    assert first.call.model == "gpt-test" and first.call.input_tokens > 0
    assert first.to_dict()["label"] == "CORRECT"


def test_a_judge_that_keeps_failing_stops_the_batch(llm_server: FakeLLMServer) -> None:
    llm = get_client(
        "openai",
        "gpt-test",
        api_key=API_KEY,
        base_url=llm_server.url + "/v1",
        retry=RetryPolicy(attempts=2, base_delay=0.001),
        cache=False,
    )
    llm_server.fail_next(500, times=10)
    with pytest.raises(LLMCallError, match="HTTP 500"):
        batch_judge([result(1, "a", "b")] * 3, llm=llm, concurrency=1)


def test_the_extractive_reader_cannot_judge_and_says_what_to_pass() -> None:
    with pytest.raises(LLMConfigError, match=r"extractive reader cannot judge.*pass a model's"):
        batch_judge([result(1, "a", "b")], llm=get_client("extractive"))
