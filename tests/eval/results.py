"""QAResults made by hand, for the tests of metrics and the judge."""

from himga.eval import QAResult
from himga.llm import Completion


def result(
    category: int, answer: str, prediction: str, question: str = "q", category_name: str = ""
) -> QAResult:
    return QAResult(
        sample_id="s",
        index=0,
        question=question,
        category=category,
        category_name=category_name,
        answer=answer,
        prediction=prediction,
        evidence=[],
        context="",
        retrieve_seconds=0.0,
        call=Completion(prediction, "test", "m"),
    )
