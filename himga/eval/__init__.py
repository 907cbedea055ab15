"""Evaluation of memories: question answering end to end (the seed's loop), and retrieval recall.

    results = run_eval(samples, agent=agent, show_progress=True)    # himga.eval.run
    judge_scores = batch_judge(results, llm=llm)                    # himga.eval.judge
    metrics = compute_metrics(results, judge_scores)                # himga.eval.metrics

`evaluate_retrieval` (himga.eval.retrieval) measures only whether a memory's search finds the
evidence turns. This package takes the agent from its caller and never imports himga.service:
a RemoteMemory is evaluated like any other memory.
"""

from himga.eval.judge import Verdict, batch_judge
from himga.eval.metrics import ALL, OVERALL, GroupMetrics, compute_metrics, format_table
from himga.eval.retrieval import (
    DEFAULT_KS,
    Recall,
    RetrievalReport,
    evaluate_retrieval,
    format_report,
)
from himga.eval.run import QAResult, run_eval

__all__ = [
    "ALL",
    "DEFAULT_KS",
    "OVERALL",
    "GroupMetrics",
    "QAResult",
    "Recall",
    "RetrievalReport",
    "Verdict",
    "batch_judge",
    "compute_metrics",
    "evaluate_retrieval",
    "format_report",
    "format_table",
    "run_eval",
]
