"""BaseAgent: what it gives the memory, and what it puts in the model's prompt."""

from pathlib import Path

import pytest

from himga.agent import BaseAgent
from himga.data import Message, Session, load_dataset
from himga.llm import ChatMessage, get_client
from himga.memory import KeywordMemory, NullMemory
from himga.memory.base import BaseMemory
from himga.service import RemoteMemory
from tests.llm.fake_server import API_KEY, FakeLLMServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"
QUESTION = "What did Ada adopt from the shelter?"


class Recording(BaseMemory):
    """Remembers what it was given, in order, and recalls a fixed line."""

    def __init__(self) -> None:
        self.ingested: list[str] = []
        self.queries: list[str] = []
        self.resets = 0

    def ingest(self, message: Message, session: Session) -> None:
        self.ingested.append(f"{session.session_id}/{message.turn_id}")

    def retrieve(self, query: str) -> str:
        self.queries.append(query)
        return "[today] Ada: I adopted a greyhound."

    def reset(self) -> None:
        self.resets += 1


def anthropic(server: FakeLLMServer) -> BaseAgent:
    llm = get_client("anthropic", "claude-test", api_key=API_KEY, base_url=server.url)
    return BaseAgent(memory=KeywordMemory(), llm=llm)


def test_sessions_are_ingested_in_order() -> None:
    memory = Recording()
    sample = load_dataset("locomo", FIXTURE)[0]
    agent = BaseAgent(memory=memory, llm=get_client("extractive"))
    count = agent.ingest(sample.sessions)
    expected = [f"{s.session_id}/{m.turn_id}" for s in sample.sessions for m in s.messages]
    assert memory.ingested == expected
    assert count == len(expected) > 0


def test_the_prompt_carries_what_the_memory_recalls(llm_server: FakeLLMServer) -> None:
    agent = anthropic(llm_server)
    agent.ingest(load_dataset("locomo", FIXTURE)[0].sessions)
    context = agent.memory.retrieve(QUESTION)
    assert "greyhound" in context
    answer = agent.answer(QUESTION)
    [call] = llm_server.calls("/v1/messages")
    prompt = call.body["messages"][-1]["content"]
    assert f"<memories>\n{context}\n</memories>" in prompt
    assert f"Question: {QUESTION}" in prompt
    assert answer.prompt.context == context
    # the stand-in answers with the first line recalled
    assert answer.text == context.splitlines()[0]
    assert answer.completion.input_tokens > 0


def test_an_empty_memory_gives_an_empty_context(llm_server: FakeLLMServer) -> None:
    llm = get_client("anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url)
    answer = BaseAgent(memory=NullMemory(), llm=llm).answer(QUESTION)
    assert "<memories>\n\n</memories>" in llm_server.calls("/v1/messages")[0].prompt()
    assert answer.text == "Not mentioned in the conversation"


def test_build_messages_is_the_seam(llm_server: FakeLLMServer) -> None:
    class Terse(BaseAgent):
        def _build_messages(
            self, question: str, context: str, question_date: str = ""
        ) -> list[ChatMessage]:
            return [ChatMessage("user", f"Notes: {context}\nQ: {question}")]

    memory = Recording()
    llm = get_client("anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url)
    Terse(memory=memory, llm=llm).answer(QUESTION)
    [call] = llm_server.calls("/v1/messages")
    assert call.body["messages"] == [
        {"role": "user", "content": f"Notes: [today] Ada: I adopted a greyhound.\nQ: {QUESTION}"}
    ]
    assert memory.queries == [QUESTION]


def test_a_remote_memory_is_just_another_memory(
    llm_server: FakeLLMServer, memory_server: str
) -> None:
    llm = get_client("anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url)
    with RemoteMemory(memory_server, "agent-remote") as memory:
        agent = BaseAgent(memory=memory, llm=llm)
        agent.reset()
        agent.ingest(load_dataset("locomo", FIXTURE)[0].sessions)
        answer = agent.answer(QUESTION)
        assert "greyhound" in answer.prompt.context
        assert answer.prompt.context == memory.retrieve(QUESTION)
    assert answer.prompt.context in llm_server.calls("/v1/messages")[0].prompt()


def test_reset_resets_the_memory() -> None:
    memory = Recording()
    BaseAgent(memory=memory, llm=get_client("extractive")).reset()
    assert memory.resets == 1


def test_the_agent_checks_what_it_is_given() -> None:
    with pytest.raises(TypeError, match="memory must be a BaseMemory"):
        BaseAgent(memory="not a memory", llm=get_client("extractive"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="llm must be an LLMClient"):
        BaseAgent(memory=NullMemory(), llm=object())  # type: ignore[arg-type]
