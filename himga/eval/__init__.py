"""Evaluation of memories: retrieval recall against a benchmark's evidence turns."""

from himga.eval.retrieval import (
    DEFAULT_KS,
    Recall,
    RetrievalReport,
    evaluate_retrieval,
    format_report,
)

__all__ = ["DEFAULT_KS", "Recall", "RetrievalReport", "evaluate_retrieval", "format_report"]
