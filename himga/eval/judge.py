"""`batch_judge`: a language model grades each answer CORRECT or WRONG against the gold one.

The prompt is the LoCoMo judgement of the mem0 paper (Chhikara et al., 2025; mem0ai/mem0,
evaluation/metrics/llm_judge.py, `ACCURACY_PROMPT`, Apache-2.0), kept word for word but for its
typographic quotes and trailing spaces, so that accuracies can be set beside published ones.
The judge is told to be generous (an answer touching the gold answer's topic, or naming the same
date in another form, is CORRECT), to explain in one sentence, and to end with the label as
JSON `{"label": ...}`.

As in mem0's evaluation, LoCoMo's adversarial questions (category 5) are not judged: their
"gold" answer is the misleading one the question invites, and the LoCoMo authors' rule scores
them instead (himga.eval.scoring). Their verdict is None.
"""

import re
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tqdm import tqdm  # type: ignore[import-untyped]

from himga.eval.run import DEFAULT_CONCURRENCY, QAResult
from himga.eval.scoring import ADVERSARIAL
from himga.llm.base import ChatMessage, Completion, LLMClient
from himga.llm.errors import LLMConfigError
from himga.llm.providers import EXTRACTIVE

CORRECT = "CORRECT"
WRONG = "WRONG"
JUDGE_TOKENS = 200
NOT_JUDGED = frozenset({ADVERSARIAL})

JUDGE_PROMPT = """\
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the \
following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user \
based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, \
for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as \
long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The \
generated answer might be much longer or use relative time references (like "last Tuesday" or \
"next month"), but you should be generous with your grading - as long as it refers to the same \
date or time period as the gold answer, it should be counted as CORRECT. Even if the format \
differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT \
or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""

_JSON_LABEL = re.compile(r"\"label\"\s*:\s*\"\s*(CORRECT|WRONG)\s*\"", re.IGNORECASE)
_BARE_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judge's grade of one answer: `correct` is None when its reply held no label."""

    correct: bool | None
    reply: str
    call: Completion

    def to_dict(self) -> dict[str, object]:
        label = None if self.correct is None else (CORRECT if self.correct else WRONG)
        return {"label": label, "reply": self.reply, "call": self.call.usage()}


def judge_messages(question: str, gold_answer: str, generated_answer: str) -> list[ChatMessage]:
    """The judge's prompt for one answer."""
    prompt = JUDGE_PROMPT.format(
        question=question, gold_answer=gold_answer, generated_answer=generated_answer
    )
    return [ChatMessage("user", prompt)]


def parse_verdict(reply: str) -> bool | None:
    """True for CORRECT, False for WRONG, None when the reply holds no label.

    The JSON `"label"` wins; failing that, the last CORRECT or WRONG in capitals (the prompt
    asks the judge to finish with it)."""
    labels = _JSON_LABEL.findall(reply) or _BARE_LABEL.findall(reply)
    if not labels:
        return None
    return bool(labels[-1].upper() == CORRECT)


def judge_one(result: QAResult, llm: LLMClient) -> Verdict:
    """The judge's verdict on one answer."""
    completion = llm.complete(
        judge_messages(result.question, result.answer, result.prediction),
        max_tokens=JUDGE_TOKENS,
        temperature=0.0,
    )
    return Verdict(parse_verdict(completion.text), completion.text, completion)


def batch_judge(
    results: Sequence[QAResult],
    llm: LLMClient,
    *,
    show_progress: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> list[Verdict | None]:
    """A verdict for each result, in order; None for the questions not judged (NOT_JUDGED
    categories). Calls run `concurrency` at a time; the first that fails for good is raised.
    LLMConfigError for the extractive reader, which cannot judge."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if llm.provider == EXTRACTIVE:
        raise LLMConfigError(
            "the extractive reader cannot judge (it picks a sentence, it does not grade one): "
            "pass a model's client as llm, e.g. get_client('anthropic'), or compute_metrics "
            "without judge scores"
        )
    judged = [i for i, result in enumerate(results) if result.category not in NOT_JUDGED]
    verdicts: list[Verdict | None] = [None] * len(results)
    lock = threading.Lock()
    with (
        tqdm(
            total=len(judged),
            desc=f"judge {llm.provider}:{llm.model}",
            unit="q",
            file=sys.stderr,
            disable=not show_progress,
        ) as bar,
        ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="himga-judge") as pool,
    ):

        def grade(index: int) -> None:
            verdict = judge_one(results[index], llm)
            with lock:
                verdicts[index] = verdict
                bar.update()

        futures = [pool.submit(grade, index) for index in judged]
        try:
            for future in futures:
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return verdicts
