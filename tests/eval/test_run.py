"""run_eval: samples kept apart, every question answered and recorded, model calls bounded."""

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from himga.agent import BaseAgent
from himga.data import Message, QAPair, Sample, Session, load_dataset
from himga.eval import run_eval
from himga.llm import ChatMessage, Completion, LLMCallError, LLMClient, get_client
from himga.memory import KeywordMemory
from himga.memory.base import BaseMemory
from tests.llm.fake_server import API_KEY, FakeLLMServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"


class Journal(BaseMemory):
    """Writes down every call, and recalls what it was last given."""

    def __init__(self, delay: float = 0.0) -> None:
        self.events: list[str] = []
        self.last = ""
        self.delay = delay

    def ingest(self, message: Message, session: Session) -> None:
        self.events.append(f"ingest {message.turn_id}")
        self.last = message.content

    def retrieve(self, query: str) -> str:
        time.sleep(self.delay)
        self.events.append(f"retrieve {query}")
        return self.last

    def reset(self) -> None:
        self.events.append("reset")
        self.last = ""


class Slow(LLMClient):
    """Answers after `seconds`, counting how many calls are in flight at once."""

    provider = "test"
    model = "slow"

    def __init__(self, seconds: float, fail_after: int | None = None) -> None:
        self.seconds = seconds
        self.fail_after = fail_after
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.calls = 0

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float | None = 0.0,
    ) -> Completion:
        with self.lock:
            self.calls += 1
            if self.fail_after is not None and self.calls > self.fail_after:
                raise LLMCallError("the provider refused")
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        return Completion("answer", self.provider, self.model)


def sample(name: str, questions: int) -> Sample:
    session = Session(
        session_id="s1",
        messages=[
            Message(role="A", content=f"{name} turn {i}", turn_id=f"{name}:{i}") for i in (1, 2)
        ],
        date_str="1 May 2023",
    )
    qa = [
        QAPair(f"{name} question {i}", f"gold {i}", [f"{name}:1"], 1 + i % 5)
        for i in range(questions)
    ]
    return Sample(sample_id=name, sessions=[session], qa_pairs=qa)


def test_each_sample_starts_from_a_reset_memory() -> None:
    memory = Journal()
    agent = BaseAgent(memory=memory, llm=get_client("extractive"))
    run_eval([sample("a", 2), sample("b", 1)], agent=agent)
    assert memory.events == [
        "reset",
        "ingest a:1",
        "ingest a:2",
        "retrieve a question 0",
        "retrieve a question 1",
        "reset",
        "ingest b:1",
        "ingest b:2",
        "retrieve b question 0",
    ]


def test_every_question_is_answered_and_recorded(llm_server: FakeLLMServer) -> None:
    llm = get_client("anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url)
    samples = load_dataset("locomo", FIXTURE)
    memory = KeywordMemory()
    results = run_eval(samples, agent=BaseAgent(memory=memory, llm=llm))
    pairs = [(s, i, qa) for s in samples for i, qa in enumerate(s.qa_pairs)]
    assert len(results) == len(pairs) == len(llm_server.calls("/v1/messages"))
    prompts = {r.prompt() for r in llm_server.calls("/v1/messages")}
    for result, (s, index, qa) in zip(results, pairs, strict=True):
        assert (result.sample_id, result.index, result.question) == (
            s.sample_id,
            index,
            qa.question,
        )
        assert (result.category, result.category_name) == (qa.category, qa.category_name)
        assert (result.answer, result.evidence) == (qa.answer, qa.evidence)
        # the context the agent saw is in the prompt the model got, and the model's answer is kept
        assert any(f"<memories>\n{result.context}\n</memories>" in p for p in prompts)
        assert (
            result.prediction
            == (result.context.splitlines() or ["Not mentioned in the conversation"])[0]
        )
        assert result.call.provider == "anthropic" and result.call.input_tokens > 0
        assert result.call.latency_seconds > 0 and result.retrieve_seconds >= 0
    assert sum(bool(r.context) for r in results) > len(results) // 2
    record = results[0].to_dict()
    assert record["call"]["model"] == "claude-test"
    assert set(record) >= {"question", "category", "answer", "prediction", "evidence", "context"}


def test_a_second_run_is_answered_from_the_cache(llm_server: FakeLLMServer) -> None:
    samples = load_dataset("locomo", FIXTURE)
    for _ in range(2):
        llm = get_client("anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url)
        results = run_eval(samples, agent=BaseAgent(memory=KeywordMemory(), llm=llm))
    assert len(llm_server.calls("/v1/messages")) == len(results)
    assert all(r.call.cached for r in results)


def test_model_calls_run_concurrently_within_the_bound() -> None:
    llm = Slow(0.05)
    results = run_eval(
        [sample("a", 8), sample("b", 8)], agent=BaseAgent(memory=Journal(), llm=llm), concurrency=3
    )
    assert len(results) == 16
    assert llm.most == 3


def test_a_call_that_fails_for_good_stops_the_run() -> None:
    llm = Slow(0.0, fail_after=1)
    samples = [sample(str(i), 5) for i in range(10)]
    with pytest.raises(LLMCallError, match="refused"):
        run_eval(samples, agent=BaseAgent(memory=Journal(delay=0.002), llm=llm), concurrency=2)
    assert llm.calls < 50


def test_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        run_eval([], agent=BaseAgent(memory=Journal(), llm=get_client("extractive")), concurrency=0)
