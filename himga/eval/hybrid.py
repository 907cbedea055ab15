"""Recall of the hybrid method (himga.memory.fusion) on a LoCoMo file, each conversation embedded
once, and its parameters chosen by leaving one conversation out.

A conversation is put, once, into what the hybrid memory is made of: the keyword memory (its
ranking and scores), a VectorIndex of every turn's `passage` vector, each turn's neighbours
in its session and its time (for the months a question names). Each question is then asked
of it under every candidate method: the keyword side to `keyword_depth` hits, the index for
the `dense_depth` nearest to the embedded `dense_query` plus the keyword hits' own cosines,
and `fuse`, exactly as the hybrid memory calls them; so a grid of methods costs one
embedding of the conversation, not one each.

`leave_one_out` chooses, for each conversation, the method (GRID: dense weight, neighbour
weight, whether the speakers' names are left out of the embedded query, and the coverage) that
does best on the others, by the mean of recall@10 and recall@50 (overall, as himga.eval.folds
does for the keyword method), and measures the held-out conversation with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from himga.data.conversation import Sample
from himga.embeddings import Embedder
from himga.eval.folds import CHOSEN_BY
from himga.eval.retrieval import OVERALL, RetrievalReport
from himga.memory.facets import NO_TIME
from himga.memory.fusion import DEFAULT_FUSION, Fusion, dense_query, fuse, passage
from himga.memory.keyword import KeywordMemory
from himga.memory.months import named_months, said_in
from himga.memory.ranking import Turns, speaker_key
from himga.memory.text import query_terms
from himga.memory.vectors import VectorIndex


@dataclass(frozen=True, slots=True)
class Candidate:
    """One method to measure: the fusion's parameters, and whether the embedded query leaves
    out the names of the speakers it names (`dense_query`) or is the question as asked."""

    fusion: Fusion = DEFAULT_FUSION
    leave_out_names: bool = True

    def describe(self) -> str:
        f = self.fusion
        if f.kind == "ranks":
            text = f"reciprocal ranks, dense weight {f.dense_weight}, k {f.rank_constant:g}"
        else:
            text = f"dense weight {f.dense_weight}, neighbour weight {f.neighbour_weight}"
            if f.coverage:
                text += f", coverage {f.coverage}"
        return text + ("" if self.leave_out_names else ", names kept in the embedded query")


DEFAULT = Candidate()
GRID: tuple[Candidate, ...] = tuple(
    Candidate(Fusion(dense_weight=weight, neighbour_weight=beside), names)
    for names, weight, beside in product(
        (True, False), (0.1, 0.15, 0.2, 0.25, 0.3, 0.35), (0.0, 0.25, 0.5)
    )
) + tuple(
    Candidate(Fusion(dense_weight=weight, neighbour_weight=0.25, coverage=coverage))
    for weight, coverage in product((0.15, 0.2, 0.25, 0.3), (0.0, 0.25))
)


@dataclass(slots=True)
class Conversation:
    """One sample as the hybrid memory holds it: turns by row key (their order), the keyword
    memory, the vectors, and each question's keyword hits and query vectors."""

    sample: Sample
    turn_ids: list[str]
    vectors: VectorIndex
    beside: list[list[int]]
    questions: list[tuple[list[tuple[int, float]], np.ndarray, np.ndarray]]
    """per question with evidence: keyword hits (key, score), the vector of the question
    without the named speakers, and of the question as asked"""
    full_matches: list[float]
    """per question with evidence: what a turn holding each of its terms once would score
    (himga.memory.derived.full_match)"""
    times: np.ndarray
    """each turn's time by row key, as the memory keeps it (int64 microseconds, NO_TIME: none)"""
    months: list[tuple[int, ...]]
    """per question with evidence: the months it names (himga.memory.months.named_months)"""


def prepare(sample: Sample, embedder: Embedder, depth: int) -> Conversation:
    """`sample` stored and embedded once, each of its questions ranked by words to `depth`."""
    pairs = [(message, session) for session in sample.sessions for message in session.messages]
    keyword = KeywordMemory()
    turn_ids = keyword.store(pairs)  # each message's id, in order: its row key is its place
    key_of = {turn_id: key for key, turn_id in enumerate(turn_ids)}
    if len(key_of) != len(turn_ids):
        raise ValueError(f"{sample.sample_id}: two messages share a turn_id")
    beside: list[list[int]] = [[] for _ in pairs]
    for key in range(1, len(pairs)):
        if pairs[key][1].session_id == pairs[key - 1][1].session_id:
            beside[key].append(key - 1)
            beside[key - 1].append(key)
    vectors = VectorIndex(embedder.dimension)
    texted = [key for key, (m, _) in enumerate(pairs) if m.content.strip()]
    vectors.add(
        texted,
        embedder.embed_passages([passage(pairs[k][0].role, pairs[k][0].content) for k in texted]),
    )
    speakers = {speaker_key(message.role) for message, _ in pairs}
    asked = [qa for qa in sample.qa_pairs if qa.evidence]
    hits = [
        [(key_of[hit.turn_id], hit.score) for hit in keyword.search(qa.question, depth)]
        for qa in asked
    ]
    stripped = embedder.embed_queries([dense_query(qa.question, speakers) for qa in asked])
    whole = embedder.embed_queries([qa.question for qa in asked])
    full = [keyword.full_match(query_terms(qa.question)) for qa in asked]
    times = np.asarray([NO_TIME if t is None else t for t in Turns.of(pairs).times], np.int64)
    months = [named_months(qa.question) for qa in asked]
    return Conversation(
        sample, turn_ids, vectors, beside, list(zip(hits, stripped, whole, strict=True)), full,
        times, months,
    )  # fmt: skip


def ranked(
    conversation: Conversation, question: int, candidate: Candidate, limit: int
) -> list[str]:
    """The turn ids the hybrid method answers question `question` (of those with evidence)
    with, best first."""
    fusion = candidate.fusion
    hits, stripped, whole = conversation.questions[question]
    query = stripped if candidate.leave_out_names else whole
    keyword = hits[: fusion.keyword_depth]
    vectors = conversation.vectors
    near_keys, near_cosines = vectors.nearest(query, fusion.dense_depth)
    own_keys = [key for key, _ in keyword]
    dense = list(zip(near_keys.tolist(), near_cosines.tolist(), strict=True))
    dense += zip(own_keys, vectors.similarities(query, own_keys).tolist(), strict=True)
    beside = conversation.beside
    full = conversation.full_matches[question]
    months, times = conversation.months[question], conversation.times
    dated = (lambda keys: said_in(times[keys], months)) if months else None
    fused = fuse(
        keyword, dense, vectors.stats(query), beside.__getitem__, fusion, limit, full, dated
    )
    return [conversation.turn_ids[key] for key, _ in fused]


def evaluate(
    conversations: Sequence[Conversation], candidate: Candidate, ks: Sequence[int]
) -> RetrievalReport:
    """recall@ks of `candidate` over `conversations`."""
    report = RetrievalReport(ks=tuple(sorted(set(ks))))
    for conversation in conversations:
        asked = [qa for qa in conversation.sample.qa_pairs if qa.evidence]
        for index, qa in enumerate(asked):
            report.add(qa, ranked(conversation, index, candidate, report.ks[-1]))
        report.skipped_without_evidence += len(conversation.sample.qa_pairs) - len(asked)
        report.samples += 1
    return report


@dataclass(frozen=True, slots=True)
class Fold:
    """One held-out conversation: the method chosen without it, and its recall with that."""

    held_out: str
    chosen: Candidate
    report: RetrievalReport


def leave_one_out(
    conversations: Sequence[Conversation],
    ks: Sequence[int],
    grid: Sequence[Candidate] = GRID,
    on_step: Callable[[], None] | None = None,
) -> tuple[list[Fold], RetrievalReport]:
    """Every fold (one a conversation) and the held-out reports pooled into one."""
    if len(conversations) < 2:
        raise ValueError("leaving one conversation out needs at least two of them")
    ks = tuple(sorted(set(ks) | set(CHOSEN_BY)))
    candidates = list(dict.fromkeys([DEFAULT, *grid]))
    reports: dict[tuple[Candidate, str], RetrievalReport] = {}
    for candidate in candidates:
        for conversation in conversations:
            name = conversation.sample.sample_id
            reports[(candidate, name)] = evaluate([conversation], candidate, ks)
            if on_step is not None:
                on_step()
    folds = []
    for held_out in conversations:
        training = [c.sample.sample_id for c in conversations if c is not held_out]

        def score(candidate: Candidate, training: list[str] = training) -> float:
            pooled = RetrievalReport.pooled([reports[(candidate, name)] for name in training])
            return sum(pooled.recall(OVERALL, k).mean_fraction for k in CHOSEN_BY)

        # The first best in `candidates` order, the default first: a tie keeps the default.
        chosen = max(candidates, key=score)
        name = held_out.sample.sample_id
        folds.append(Fold(name, chosen, reports[(chosen, name)]))
    return folds, RetrievalReport.pooled([fold.report for fold in folds])


def steps(conversations: int, grid: Sequence[Candidate] = GRID) -> int:
    """How many evaluations `leave_one_out` runs (for a progress bar)."""
    return len(dict.fromkeys([DEFAULT, *grid])) * conversations
