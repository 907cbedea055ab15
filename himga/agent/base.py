"""BaseAgent: answers questions about a conversation from what its memory recalls of it.

The seed API's agent (section 5.3): it holds a memory and a language model, ingests a sample's
sessions in order, and answers a question with the model, from the context the memory's
`retrieve` returns. `_build_messages` is the seam a researcher overrides to ask differently; the
default puts the retrieve string into the prompt of himga.llm.qa_prompt exactly as it came.

Answering is split in two, so that an evaluation can keep the memory on one thread and the model
calls concurrent: `prepare` asks the memory and builds the prompt, `respond` calls the model.
`answer` does both.
"""

import time
from collections.abc import Iterable
from dataclasses import dataclass

from himga.data.conversation import Session
from himga.llm.base import ChatMessage, Completion, LLMClient
from himga.llm.qa_prompt import qa_messages
from himga.memory.base import BaseMemory

# A short phrase is asked for; the LoCoMo authors gave their models 32 tokens.
ANSWER_TOKENS = 100


@dataclass(frozen=True, slots=True)
class Prompt:
    """A question made ready for the model: the memory's context and the messages built on it."""

    question: str
    context: str
    messages: list[ChatMessage]
    retrieve_seconds: float


@dataclass(frozen=True, slots=True)
class Answer:
    """The model's answer to a prompt, and the call that produced it."""

    prompt: Prompt
    text: str
    completion: Completion


class BaseAgent:
    """An agent with one memory and one language model."""

    def __init__(
        self,
        memory: BaseMemory,
        llm: LLMClient,
        *,
        max_tokens: int = ANSWER_TOKENS,
        temperature: float | None = 0.0,
    ) -> None:
        if not isinstance(memory, BaseMemory):
            raise TypeError(f"memory must be a BaseMemory, got {type(memory).__name__}")
        if not isinstance(llm, LLMClient):
            raise TypeError(f"llm must be an LLMClient (himga.llm), got {type(llm).__name__}")
        self.memory = memory
        self.llm = llm
        self.max_tokens = max_tokens
        self.temperature = temperature

    def reset(self) -> None:
        """Forget every conversation (the memory's `reset`)."""
        self.memory.reset()

    def ingest(self, sessions: Iterable[Session]) -> int:
        """Store every message of `sessions`, in order; returns how many. Each session goes to
        the memory in one `ingest_many` call (one transaction, or one request to a server)."""
        count = 0
        for session in sessions:
            count += self.memory.ingest_many((message, session) for message in session.messages)
        return count

    def prepare(self, question: str, question_date: str = "") -> Prompt:
        """Ask the memory about `question` and build the prompt on what it recalls."""
        started = time.perf_counter()
        context = self.memory.retrieve(question)
        elapsed = time.perf_counter() - started
        if not isinstance(context, str):
            raise TypeError(
                f"{type(self.memory).__name__}.retrieve returned {type(context).__name__}, not str"
            )
        messages = self._build_messages(question, context, question_date)
        return Prompt(question, context, messages, elapsed)

    def respond(self, prompt: Prompt) -> Answer:
        """The model's answer to a prepared prompt (safe to call from several threads)."""
        completion = self.llm.complete(
            prompt.messages, max_tokens=self.max_tokens, temperature=self.temperature
        )
        return Answer(prompt, completion.text.strip(), completion)

    def answer(self, question: str, question_date: str = "") -> Answer:
        """`respond(prepare(question))`: the answer to one question."""
        return self.respond(self.prepare(question, question_date))

    def _build_messages(
        self, question: str, context: str, question_date: str = ""
    ) -> list[ChatMessage]:
        """The prompt for `question`: `context` (the memory's retrieve string) put in as it is,
        in the layout of himga.llm.qa_prompt. Override to ask differently."""
        return qa_messages(question, context, question_date)
