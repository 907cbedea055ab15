"""`run_eval`: an agent answers every question of every sample, and each answer is kept with
what produced it.

For each sample, in order: the agent's memory is reset (so samples never see each other), the
sample's sessions are ingested in order, and each question is prepared (the memory's `retrieve`,
then the prompt) on this thread. The model calls run on a pool of `concurrency` threads while the
next questions are prepared; a call that fails for good stops the run (answers already given are
in the disk cache, so a rerun does not pay for them again).
"""

import sys
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from tqdm import tqdm  # type: ignore[import-untyped]

from himga.agent.base import Answer, BaseAgent
from himga.data.conversation import QAPair, Sample
from himga.llm.base import Completion

DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True, slots=True)
class QAResult:
    """One question answered: what was asked, the gold answer, what the agent saw and said, and
    what the model call cost."""

    sample_id: str
    index: int  # the question's place among its sample's questions
    question: str
    category: int
    category_name: str
    answer: str  # the gold answer
    prediction: str
    evidence: list[str]
    context: str  # the memory's retrieve string, as the agent put it into the prompt
    retrieve_seconds: float
    call: Completion
    question_date: str = ""

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready record (one line of a results file)."""
        record: dict[str, object] = {
            "sample_id": self.sample_id,
            "index": self.index,
            "question": self.question,
            "category": self.category,
            "category_name": self.category_name,
            "answer": self.answer,
            "prediction": self.prediction,
            "evidence": list(self.evidence),
            "context": self.context,
            "retrieve_seconds": round(self.retrieve_seconds, 6),
            "call": self.call.usage(),
        }
        if self.question_date:
            record["question_date"] = self.question_date
        return record


def run_eval(
    samples: Iterable[Sample],
    agent: BaseAgent,
    *,
    show_progress: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> list[QAResult]:
    """Every question of every sample answered by `agent`, in sample and question order.

    `show_progress` draws a progress bar on stderr; `concurrency` bounds the model calls in
    flight. The first call that fails for good is raised once the calls in flight end."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    samples = list(samples)
    total = sum(len(sample.qa_pairs) for sample in samples)
    failed = threading.Event()
    pending: list[tuple[Sample, int, QAPair, Future[Answer]]] = []
    with (
        tqdm(
            total=total,
            desc=f"eval {type(agent.memory).__name__} {agent.llm.provider}:{agent.llm.model}",
            unit="q",
            file=sys.stderr,
            disable=not show_progress,
        ) as bar,
        ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="himga-eval") as pool,
    ):

        def done(future: Future[Answer]) -> None:
            if future.exception() is not None:
                failed.set()
            bar.update()

        try:
            for sample in samples:
                if failed.is_set():
                    break
                agent.reset()
                agent.ingest(sample.sessions)
                for index, qa in enumerate(sample.qa_pairs):
                    if failed.is_set():
                        break
                    prompt = agent.prepare(qa.question, qa.question_date)
                    future = pool.submit(agent.respond, prompt)
                    future.add_done_callback(done)
                    pending.append((sample, index, qa, future))
        except BaseException:
            # An interrupted run (Ctrl-C, a memory that failed) waits only for the calls in flight.
            for *_, future in pending:
                future.cancel()
            raise
    return [_result(sample, index, qa, future.result()) for sample, index, qa, future in pending]


def _result(sample: Sample, index: int, qa: QAPair, answer: Answer) -> QAResult:
    return QAResult(
        sample_id=sample.sample_id,
        index=index,
        question=qa.question,
        category=qa.category,
        category_name=qa.category_name,
        answer=qa.answer,
        prediction=answer.text,
        evidence=list(qa.evidence),
        context=answer.prompt.context,
        retrieve_seconds=answer.prompt.retrieve_seconds,
        call=answer.completion,
        question_date=qa.question_date,
    )
