"""Retrieval recall: how many of a question's evidence turns a memory's search finds in its top k.

For every question that names evidence, recall@k is reported three ways: the mean fraction of
its evidence turns among the first k hits, the share of questions with any evidence turn found,
and the share with all of them found. Figures are given overall (categories 1 to 4) and per
category; LoCoMo's category 5 (adversarial: the question asks about something never said) is
reported apart and left out of the overall figure.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from himga.data.conversation import QAPair, Sample
from himga.memory.base import BaseMemory

DEFAULT_KS = (1, 5, 10, 20, 50)
# Categories kept out of the overall figure (LoCoMo's adversarial questions).
APART_CATEGORIES = frozenset({5})
OVERALL = "overall"

MemoryFactory = Callable[[str, Path | None], BaseMemory]


@dataclass(frozen=True, slots=True)
class Recall:
    """recall@k of one group of questions: the three views, each a mean over the questions."""

    mean_fraction: float
    any_found: float
    all_found: float


@dataclass(slots=True)
class _Tally:
    questions: int = 0
    fraction: dict[int, float] = field(default_factory=dict)
    any_found: dict[int, int] = field(default_factory=dict)
    all_found: dict[int, int] = field(default_factory=dict)

    def add(self, evidence: set[str], ranked: Sequence[str], ks: Sequence[int]) -> None:
        self.questions += 1
        for k in ks:
            found = len(evidence.intersection(ranked[:k]))
            self.fraction[k] = self.fraction.get(k, 0.0) + found / len(evidence)
            self.any_found[k] = self.any_found.get(k, 0) + (found > 0)
            self.all_found[k] = self.all_found.get(k, 0) + (found == len(evidence))

    def merge(self, other: "_Tally") -> None:
        self.questions += other.questions
        for k, fraction in other.fraction.items():
            self.fraction[k] = self.fraction.get(k, 0.0) + fraction
        for counts, theirs in (
            (self.any_found, other.any_found),
            (self.all_found, other.all_found),
        ):
            for k, count in theirs.items():
                counts[k] = counts.get(k, 0) + count

    def recall(self, k: int) -> Recall:
        n = self.questions or 1
        return Recall(
            self.fraction.get(k, 0.0) / n,
            self.any_found.get(k, 0) / n,
            self.all_found.get(k, 0) / n,
        )


@dataclass(slots=True)
class RetrievalReport:
    """recall@k per group: OVERALL, then `category <n>` for each category seen."""

    ks: tuple[int, ...]
    samples: int = 0
    skipped_without_evidence: int = 0
    groups: dict[str, _Tally] = field(default_factory=dict)

    @classmethod
    def pooled(cls, reports: Sequence["RetrievalReport"]) -> "RetrievalReport":
        """One report over the questions of all `reports`, which must share their ks."""
        if not reports or any(report.ks != reports[0].ks for report in reports):
            raise ValueError("pooled reports must be at least one, all with the same ks")
        pooled = cls(ks=reports[0].ks)
        for report in reports:
            pooled.samples += report.samples
            pooled.skipped_without_evidence += report.skipped_without_evidence
            for name, tally in report.groups.items():
                pooled.groups.setdefault(name, _Tally()).merge(tally)
        return pooled

    def questions(self, group: str) -> int:
        tally = self.groups.get(group)
        return tally.questions if tally else 0

    def recall(self, group: str, k: int) -> Recall:
        """recall@k of `group`; KeyError for a group with no questions."""
        return self.groups[group].recall(k)

    def add(self, qa: QAPair, ranked: Sequence[str]) -> None:
        evidence = set(qa.evidence)
        if not evidence:
            self.skipped_without_evidence += 1
            return
        names = [f"category {qa.category}"]
        if qa.category not in APART_CATEGORIES:
            names.insert(0, OVERALL)
        for name in names:
            self.groups.setdefault(name, _Tally()).add(evidence, ranked, self.ks)

    def ordered_groups(self) -> list[str]:
        categories = sorted((g for g in self.groups if g != OVERALL), key=lambda g: int(g[9:]))
        return ([OVERALL] if OVERALL in self.groups else []) + categories


def evaluate_retrieval(
    samples: Iterable[Sample],
    factory: MemoryFactory,
    ks: Sequence[int] = DEFAULT_KS,
    on_question: Callable[[], None] | None = None,
) -> RetrievalReport:
    """Ingest each sample into a fresh memory from `factory` and search every question there.

    `on_question` is called after each question (a progress bar's update)."""
    ks = tuple(sorted(set(ks)))
    if not ks or ks[0] < 1:
        raise ValueError(f"k values must be positive integers, got {list(ks)}")
    report = RetrievalReport(ks=ks)
    for sample in samples:
        memory = factory(f"eval-retrieval-{sample.sample_id}", None)
        try:
            memory.ingest_many(
                (message, session) for session in sample.sessions for message in session.messages
            )
            for qa in sample.qa_pairs:
                hits = memory.search(qa.question, ks[-1]) if qa.evidence else []
                report.add(qa, [hit.turn_id for hit in hits])
                if on_question is not None:
                    on_question()
        finally:
            close = getattr(memory, "close", None)
            if callable(close):
                close()
        report.samples += 1
    return report


def format_report(report: RetrievalReport, title: str) -> str:
    """The report as a text table: one row per group, `mean (any/all)` per k."""
    header = f"{'group':<12} {'n':>5}" + "".join(f" {'@' + str(k):>18}" for k in report.ks)
    lines = [
        title,
        "recall@k = mean fraction of evidence turns found (share with any found / all found);",
        f"overall = categories other than {sorted(APART_CATEGORIES)}, which are reported apart",
        header,
    ]
    for group in report.ordered_groups():
        cells = []
        for k in report.ks:
            r = report.recall(group, k)
            cells.append(f" {r.mean_fraction:.3f} ({r.any_found:.2f}/{r.all_found:.2f})".rjust(19))
        lines.append(f"{group:<12} {report.questions(group):>5}" + "".join(cells))
    lines.append(
        f"samples: {report.samples}; questions without evidence skipped: "
        f"{report.skipped_without_evidence}"
    )
    return "\n".join(lines)
