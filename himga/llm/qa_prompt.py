"""The prompt that asks a model a question about a conversation, from what a memory recalls.

`BaseAgent` (himga.agent) writes it; the extractive reader (himga.llm.extractive) reads it back,
which is why it lives here, below both. It is two messages:

system:  SYSTEM_PROMPT
user:    What the memory recalls of the conversation for this question:
         <memories>
         {the string the memory's retrieve() returned, exactly}
         </memories>

         [The question is asked on {question_date}.]      (when the dataset gives the date)
         Answer the question below in a short phrase, ... reply exactly: Not mentioned in the
         conversation

         Question: {question}
         Short answer:

The instructions follow the LoCoMo authors' QA prompt ("write an answer in the form of a short
phrase ... Answer with exact words from the context whenever possible", with dates taken from
the sessions for questions about time), and ask for NOT_MENTIONED when the memories do not hold
the answer: the phrase the LoCoMo authors' scoring looks for in answers to the adversarial
questions (category 5) about things never said.
"""

import re
from collections.abc import Sequence

from himga.llm.base import ChatMessage

NOT_MENTIONED = "Not mentioned in the conversation"
MEMORIES_OPEN = "<memories>"
MEMORIES_CLOSE = "</memories>"

SYSTEM_PROMPT = (
    "You answer questions about a long conversation between people, using only what a memory "
    "of that conversation recalls. Do not guess beyond it."
)
INSTRUCTIONS = (
    "Answer the question below in a short phrase, using the exact words of the memories "
    "whenever possible. For a question about time, answer with the date worked out from the "
    'dates of the sessions (for example, "yesterday" said on 8 May 2023 is 7 May 2023). If '
    f"the memories do not hold the answer, reply exactly: {NOT_MENTIONED}"
)

_LAYOUT = re.compile(
    re.escape(MEMORIES_OPEN)
    + r"\n(?P<context>.*)\n"
    + re.escape(MEMORIES_CLOSE)
    + r"\n.*\nQuestion: (?P<question>.*)\nShort answer:\s*\Z",
    re.DOTALL,
)


def qa_messages(question: str, context: str, question_date: str = "") -> list[ChatMessage]:
    """The prompt asking `question` from `context` (put in as it is)."""
    dated = f"The question is asked on {question_date}.\n" if question_date else ""
    user = (
        "What the memory recalls of the conversation for this question:\n"
        f"{MEMORIES_OPEN}\n{context}\n{MEMORIES_CLOSE}\n\n"
        f"{dated}{INSTRUCTIONS}\n\n"
        f"Question: {_one_line(question)}\nShort answer:"
    )
    return [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", user)]


def read_qa_prompt(messages: Sequence[ChatMessage]) -> tuple[str, str]:
    """The (question, context) of a prompt laid out by `qa_messages`; ValueError otherwise."""
    users = [m for m in messages if m.role == "user"]
    match = _LAYOUT.search(users[-1].content) if users else None
    if match is None:
        raise ValueError(
            "the prompt is not laid out as himga.llm.qa_prompt writes it: its last user "
            f"message needs {MEMORIES_OPEN}...{MEMORIES_CLOSE}, then 'Question: ...' and "
            "'Short answer:' (an agent whose _build_messages writes another prompt needs a model)"
        )
    return match.group("question"), match.group("context")


def _one_line(text: str) -> str:
    return " ".join(text.split())
