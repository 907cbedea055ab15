"""`compute_metrics`: F1, BLEU-1 and the judge's accuracy, overall and per category.

Each answer is scored by himga.eval.scoring: the LoCoMo authors' F1 with their per-category
rules, and BLEU-1. The groups:

- `overall`: every question but LoCoMo's adversarial ones (category 5), as the mem0 paper and
  himga's retrieval figures count them;
- `category <n>` for each LoCoMo category, and for datasets that do not number their categories
  (LongMemEval) one group per category name;
- `all`: every question, category 5 scored by the authors' rule, as the LoCoMo authors' own
  overall figure counts them.

BLEU-1 and the judge are left out for category 5 (their gold answer is the misleading one the
question invites): such groups report None for them.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from himga.eval.judge import Verdict
from himga.eval.run import QAResult
from himga.eval.scoring import ADVERSARIAL, bleu1, locomo_f1

OVERALL = "overall"
ALL = "all"


@dataclass(frozen=True, slots=True)
class QuestionScore:
    """One answer's scores; None where a score does not apply or the judge gave none."""

    f1: float
    bleu1: float | None
    judge: bool | None


@dataclass(frozen=True, slots=True)
class GroupMetrics:
    """The means of one group of questions. `judged` counts the answers the judge labelled."""

    questions: int
    f1: float
    bleu1: float | None
    judge_accuracy: float | None
    judged: int

    def __str__(self) -> str:
        parts = [f"{self.questions} questions", f"F1 {self.f1:.3f}"]
        if self.bleu1 is not None:
            parts.append(f"BLEU-1 {self.bleu1:.3f}")
        if self.judge_accuracy is not None:
            parts.append(f"judge accuracy {self.judge_accuracy:.3f} ({self.judged} judged)")
        return ", ".join(parts)


def score_result(result: QAResult, verdict: Verdict | None = None) -> QuestionScore:
    """The scores of one answer."""
    adversarial = result.category == ADVERSARIAL
    return QuestionScore(
        f1=locomo_f1(result.prediction, result.answer, result.category),
        bleu1=None if adversarial else bleu1(result.prediction, result.answer),
        judge=None if verdict is None or adversarial else verdict.correct,
    )


def group_of(result: QAResult) -> str:
    """The name of the category group `result` belongs to."""
    if result.category:
        return f"category {result.category}"
    return result.category_name or "uncategorised"


def compute_metrics(
    results: Sequence[QAResult], judge_scores: Sequence[Verdict | None] | None = None
) -> dict[str, GroupMetrics]:
    """Metrics per group, in the order: overall, the categories (by number, then by name), all.

    `judge_scores` are `batch_judge`'s verdicts, one per result (or None: no judge)."""
    if judge_scores is not None and len(judge_scores) != len(results):
        raise ValueError(
            f"judge_scores must hold one verdict per result: got {len(judge_scores)} for "
            f"{len(results)} results"
        )
    verdicts = judge_scores if judge_scores is not None else [None] * len(results)
    groups: dict[str, list[QuestionScore]] = {}
    for result, verdict in zip(results, verdicts, strict=True):
        score = score_result(result, verdict)
        names = [group_of(result), ALL]
        if result.category != ADVERSARIAL:
            names.append(OVERALL)
        for name in names:
            groups.setdefault(name, []).append(score)
    return {name: _summary(groups[name]) for name in _ordered(groups)}


def _summary(scores: list[QuestionScore]) -> GroupMetrics:
    bleus = [s.bleu1 for s in scores if s.bleu1 is not None]
    labels = [s.judge for s in scores if s.judge is not None]
    return GroupMetrics(
        questions=len(scores),
        f1=sum(s.f1 for s in scores) / len(scores),
        bleu1=sum(bleus) / len(bleus) if bleus else None,
        judge_accuracy=sum(labels) / len(labels) if labels else None,
        judged=len(labels),
    )


def _ordered(groups: Mapping[str, object]) -> list[str]:
    numbered = sorted(
        (g for g in groups if g.startswith("category ") and g[9:].isdigit()),
        key=lambda g: int(g[9:]),
    )
    named = sorted(g for g in groups if g not in numbered and g not in (OVERALL, ALL))
    head = [OVERALL] if OVERALL in groups else []
    return head + numbered + named + ([ALL] if ALL in groups else [])


def format_table(columns: Mapping[str, Mapping[str, GroupMetrics]]) -> str:
    """The metrics of one or more runs (column title -> compute_metrics' result) side by side:
    one row per group, with F1, BLEU-1 and (when any run was judged) the judge's accuracy."""
    judged = any(m.judge_accuracy is not None for run in columns.values() for m in run.values())
    fields = ["F1", "BLEU-1"] + (["judge"] if judged else [])
    rows = _ordered({name: None for run in columns.values() for name in run})
    label = max([len("group"), *map(len, rows)])
    width = 9 * len(fields) - 2  # a run's block: its fields, 7 wide, 2 apart
    lines = [
        " " * (label + 6) + "".join(f"  {title[:width]:^{width}}" for title in columns),
        f"{'group':<{label}} {'n':>5}" + "".join(_block(fields) for _ in columns),
    ]
    for name in rows:
        cells = []
        for run in columns.values():
            m = run.get(name)
            values = [m.f1, m.bleu1, m.judge_accuracy] if m else [None] * 3
            cells.append(_block([_cell(v) for v in values[: len(fields)]]))
        lines.append(f"{name:<{label}} {_count(name, columns):>5}" + "".join(cells))
    return "\n".join(lines)


def _block(cells: list[str]) -> str:
    return "".join(f"  {cell:>7}" for cell in cells)


def _count(name: str, columns: Mapping[str, Mapping[str, GroupMetrics]]) -> str:
    """The group's number of questions, or each run's ("2/4") where the runs differ."""
    counts = [str(run[name].questions) if name in run else "0" for run in columns.values()]
    return counts[0] if len(set(counts)) == 1 else "/".join(counts)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
