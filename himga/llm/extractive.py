"""The extractive reader: answers with the sentence of the context that best matches the
question. No model, no key, no cost; a floor for what a memory's context makes answerable.

It reads the prompt `BaseAgent` writes (himga.llm.qa_prompt) back into question and context.
The context is split into lines, a line that starts like a memory's context line
(`[date] speaker: text`, himga.memory.context) into its speaker and text, and the text into
sentences. Each sentence is scored by the question terms it shares (the keyword memories' own
terms: himga.memory.text), each weighted by its idf over the context's sentences (Lucene's form,
himga.memory.ranking.idf); the speaker's name counts as part of the sentence, since questions name
whom they ask about. The best sentence wins, the earliest on a tie (memories put their best hit
first). When no sentence shares a term with the question, it answers NOT_MENTIONED.
"""

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from himga.llm.base import ChatMessage, Completion, LLMClient
from himga.llm.qa_prompt import NOT_MENTIONED, read_qa_prompt
from himga.memory.ranking import idf
from himga.memory.text import query_terms, terms_of

# `[1:56 pm on 8 May, 2023] Caroline: text`: an optional date in brackets, then an optional
# speaker (a short run without a colon or bracket) and ": ".
_HEADER = re.compile(r"^\s*(?:\[(?P<date>[^\]]*)\]\s*)?(?:(?P<speaker>[^:\[\]]{1,60}):\s+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of the context, with the speaker of its line ("" if none)."""

    speaker: str
    text: str


def sentences(context: str) -> list[Sentence]:
    """The sentences of a context, in order."""
    found: list[Sentence] = []
    for line in context.splitlines():
        header = _HEADER.match(line)
        speaker = (header.group("speaker") or "").strip() if header else ""
        body = line[header.end() :] if header else line
        for part in _SENTENCE_END.split(body.strip()):
            if part.strip():
                found.append(Sentence(speaker, part.strip()))
    return found


def best_sentence(question: str, context: str) -> str:
    """The sentence of `context` that best matches `question`; NOT_MENTIONED if none shares a
    term with it."""
    asked = set(query_terms(question))
    candidates = sentences(context)
    if not asked or not candidates:
        return NOT_MENTIONED
    held = [
        asked.intersection(found) for found in terms_of(f"{s.speaker} {s.text}" for s in candidates)
    ]
    rows_with: dict[str, int] = {}
    for shared in held:
        for term in shared:
            rows_with[term] = rows_with.get(term, 0) + 1
    weight = {term: idf(len(candidates), n) for term, n in rows_with.items()}
    best, best_score = -1, 0.0
    for index, shared in enumerate(held):
        score = sum(weight[term] for term in shared)
        if score > best_score:
            best, best_score = index, score
    return candidates[best].text if best >= 0 else NOT_MENTIONED


class ExtractiveReader(LLMClient):
    """An LLMClient that reads instead of generating: `get_client("extractive")`."""

    def __init__(self) -> None:
        self.provider = "extractive"
        self.model = "best-sentence"

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float | None = 0.0,
    ) -> Completion:
        """The best sentence for the prompt's question; ValueError for a prompt it cannot read
        (a judge's, or one another `_build_messages` wrote)."""
        started = time.perf_counter()
        question, context = read_qa_prompt(messages)
        answer = best_sentence(question, context)
        return Completion(
            answer, self.provider, self.model, latency_seconds=time.perf_counter() - started
        )
