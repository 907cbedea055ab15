"""Leave-one-conversation-out recall: what the keyword method's figures on a development file are
worth on conversations it was not tuned on.

For each conversation, the method's parameters (window size, neighbour weight, speaker boost;
GRID) are chosen on the other conversations alone, by the mean of recall@10 and recall@50
(overall), and the held-out conversation is then measured with them. The held-out figures,
pooled over the folds, are what to expect of a new conversation, in so far as the development
conversations are like it; when every fold chooses the default, the default is no fit to any
one of them.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

from himga.data.conversation import Sample
from himga.eval.retrieval import OVERALL, RetrievalReport, evaluate_retrieval
from himga.memory.keyword import KeywordMemory
from himga.memory.ranking import DEFAULT_METHOD, Method

GRID: tuple[Method, ...] = tuple(
    Method(near_turns=turns, near_weight=weight, speaker_boost=boost)
    for turns, weight, boost in product((1, 2, 3), (0.25, 0.5, 0.75), (0.0, 0.5, 1.0))
)
CHOSEN_BY = (10, 50)


@dataclass(frozen=True, slots=True)
class Fold:
    """One held-out conversation: the method chosen without it, and its recall with that."""

    held_out: str
    chosen: Method
    report: RetrievalReport


def leave_one_out(
    samples: Sequence[Sample],
    ks: Sequence[int],
    grid: Sequence[Method] = GRID,
    on_step: Callable[[], None] | None = None,
) -> tuple[list[Fold], RetrievalReport]:
    """Every fold (one a sample) and the held-out reports pooled into one."""
    if len(samples) < 2:
        raise ValueError("leaving one conversation out needs at least two of them")
    ks = tuple(sorted(set(ks) | set(CHOSEN_BY)))
    methods = list(dict.fromkeys([DEFAULT_METHOD, *grid]))
    reports: dict[tuple[Method, str], RetrievalReport] = {}
    for method in methods:
        for sample in samples:
            factory = _factory(method)
            reports[(method, sample.sample_id)] = evaluate_retrieval([sample], factory, ks)
            if on_step is not None:
                on_step()
    folds = []
    for held_out in samples:
        training = [s.sample_id for s in samples if s is not held_out]

        def score(method: Method, training: list[str] = training) -> float:
            pooled = RetrievalReport.pooled([reports[(method, name)] for name in training])
            return sum(pooled.recall(OVERALL, k).mean_fraction for k in CHOSEN_BY)

        # The first best in `methods` order, the default first: a tie keeps the default.
        chosen = max(methods, key=score)
        folds.append(Fold(held_out.sample_id, chosen, reports[(chosen, held_out.sample_id)]))
    return folds, RetrievalReport.pooled([fold.report for fold in folds])


def steps(samples: Sequence[Sample], grid: Sequence[Method] = GRID) -> int:
    """How many evaluations `leave_one_out` runs (for a progress bar)."""
    return len(dict.fromkeys([DEFAULT_METHOD, *grid])) * len(samples)


def describe(method: Method) -> str:
    """A method as a short line: what differs from the default, or "the default"."""
    changed = [
        f"{name} {getattr(method, name)}"
        for name in method.__dataclass_fields__
        if getattr(method, name) != getattr(DEFAULT_METHOD, name)
    ]
    return ", ".join(changed) if changed else "the default"


def _factory(method: Method) -> Callable[[str, object], KeywordMemory]:
    return lambda namespace, data_dir: KeywordMemory(method)
