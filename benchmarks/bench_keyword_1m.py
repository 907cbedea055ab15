"""`make bench-keyword-1m`: the keyword memory's retrieve p50 beside tantivy's at a million
messages of natural English, in one process, in one run.

The messages are `benchmarks.corpus.dictionary`: the LoCoMo development file's conversations'
shape (sessions, speakers, dates, turn lengths) with new English text in every turn, drawn from
the bigrams of the sentences of GCIDE (Debian's dict-gcide, pinned by version and SHA-256:
benchmarks/dictionary_text.py, which also says why no registry corpus of a million real
messages is used). Both engines index the same texts: himga's KeywordMemory (the ranking every
keyword memory shares) through `ingest_many` in batches of BATCH, tantivy (pinned in the `dev`
extra; benchmarks/baselines.py) in RAM with its English stemmer. The questions are QUERIES of
the LoCoMo file's own. After WARM_UP questions each, every round asks every question of each
engine in turn (the order alternating question by question), REPEATS times in a row, its
latency the fastest of them; p50 is taken over the questions. The figures are min / median /
max over ROUNDS rounds of each engine's p50 and of their ratio, each ratio taken within a round.
Then where himga's time goes: the share of a retrieve spent in the C ranking core.

Two tantivy baselines, timed in the same rounds: `tantivy` as bench-memory runs it (its `en_stem`
analyzer, which keeps stopwords: a question's "what", "did", "the" cost it long postings himga
never reads, which flatters himga), and `tantivy-terms`, the fair one: tantivy indexing and
asking himga's own terms (benchmarks/baselines.py: the same words, stopwords dropped, the same
Porter stems; the question's terms made inside the timed call, as himga makes its own), so both
walk the postings of the same terms. How alike the answers are: the mean share of each
baseline's top CONTEXT_HITS that himga's top CONTEXT_HITS hold (himga scores each turn with its
neighbours and its speaker, so they are not expected to be equal), and that `himga-plain` holds:
himga's ranking with no neighbour window and no speaker boost (plain BM25 of each turn's own
terms, k1 and b as tantivy's, Lucene's idf), timed in the same rounds, which shows both what the
window costs and that tantivy-terms answers from the same terms (their top hits then agree).

Target: himga keyword p50 at most the fair tantivy's p50. `--corpus natural` measures on
bench-memory's corpus instead (the dev file's own words reshuffled: a small vocabulary, so each
query term has long postings), where the earlier 1.48x was measured.

    make bench-keyword-1m    # or: python -m benchmarks.bench_keyword_1m --size 200000
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.baselines import Tantivy
from benchmarks.corpus import dictionary, natural, questions
from himga.memory.context import CONTEXT_HITS
from himga.memory.keyword import KeywordMemory
from himga.memory.method import Method

SIZE = 1_000_000
QUERIES = 200
WARM_UP = 20
REPEATS = 3
ROUNDS = 3
BATCH = 1000
LOCOMO = os.environ.get("LOCOMO", "../shared/data/locomo/locomo-dev.json")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _spread(values: list[float], fmt: str = "{:.3g}") -> str:
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def _fastest(ask: Callable[[str], object], question: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        ask(question)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument(
        "--corpus",
        choices=("dictionary", "natural"),
        default="dictionary",
        help="natural: bench-memory's corpus, the dev file's words reshuffled (its 1M figure)",
    )
    args = parser.parse_args()
    start = time.perf_counter()
    data = (dictionary if args.corpus == "dictionary" else natural)(LOCOMO, args.size)
    made = time.perf_counter() - start
    asked = questions(LOCOMO, args.queries)
    base = _rss_mb()
    himga = KeywordMemory()
    start = time.perf_counter()
    for i in range(0, len(data), BATCH):
        himga.ingest_many(data[i : i + BATCH])
    himga_ingest = time.perf_counter() - start
    himga_mb = _rss_mb() - base
    plain = KeywordMemory(Method(near_turns=0, speaker_boost=0.0))
    for i in range(0, len(data), BATCH):
        plain.ingest_many(data[i : i + BATCH])
    baselines = {"tantivy": Tantivy(), "tantivy-terms": Tantivy(himga_terms=True)}
    ingested = {}
    for name, baseline in baselines.items():
        start = time.perf_counter()
        baseline.ingest_many(data)
        ingested[name] = time.perf_counter() - start
    del data
    engines: dict[str, Callable[[str], object]] = {
        "himga": himga.retrieve,
        "himga-plain": plain.retrieve,
    }
    engines.update({name: baseline.retrieve for name, baseline in baselines.items()})
    for question in asked[:WARM_UP]:
        for ask in engines.values():
            ask(question)
    p50s: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        latencies: dict[str, list[float]] = {name: [] for name in engines}
        for i, question in enumerate(asked):
            names = list(engines)
            names = names[i % len(names) :] + names[: i % len(names)]  # each first in turn
            for name in names:
                latencies[name].append(_fastest(engines[name], question))
        for name, values in latencies.items():
            p50s[name].append(1000 * statistics.median(values))
    ranked = _ranking_share(himga, asked)
    overlaps = {
        (ours, name): _overlap(memory, baseline, asked)
        for ours, memory in (("himga", himga), ("himga-plain", plain))
        for name, baseline in baselines.items()
    }
    described = (
        "natural English (GCIDE bigrams in LoCoMo's conversation shape)"
        if args.corpus == "dictionary"
        else "the LoCoMo dev file's turns, words reshuffled (bench-memory's corpus)"
    )
    print(
        f"keyword retrieve at {args.size:,} messages of {described}, made in {made:.0f} s; "
        f"{len(asked)} LoCoMo questions, each the fastest of {REPEATS}; min / median / max "
        f"over {args.rounds} rounds"
    )
    print(
        f"ingest: himga {himga_ingest:.0f} s ({himga_mb:.0f} MB resident), "
        + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in ingested.items())
    )
    for name, values in p50s.items():
        print(f"  {name:<13} p50 ms {_spread(values)}")
    for ours in ("himga", "himga-plain"):
        for name in baselines:
            ratios = [a / b for a, b in zip(p50s[ours], p50s[name], strict=True)]
            fair = name == "tantivy-terms"
            target = "  (target: <= 1)" if fair and ours == "himga" else ""
            target = target if fair else "  (tantivy keeps stopwords: unfair)"
            print(f"  {ours} p50 / {name} p50: {_spread(ratios, '{:.2f}')}{target}")
    for (ours, name), share in overlaps.items():
        print(f"  {name}'s top {CONTEXT_HITS} in {ours}'s top {CONTEXT_HITS}: {share:.0%} (mean)")
    print(f"  share of a himga retrieve in the C ranking core: {ranked:.0%}")
    return 0


def _overlap(memory: KeywordMemory, baseline: Tantivy, asked: list[str]) -> float:
    """The mean share of `baseline`'s top CONTEXT_HITS texts among `memory`'s top CONTEXT_HITS
    (the corpus repeats no text, so a text names one message), over the questions it answers."""
    shares = []
    for question in asked:
        theirs = set(baseline.retrieve(question))
        if theirs:
            ours = {hit.content for hit in memory.search(question, CONTEXT_HITS)}
            shares.append(len(theirs & ours) / len(theirs))
    return statistics.fmean(shares) if shares else 0.0


def _ranking_share(memory: KeywordMemory, asked: list[str]) -> float:
    """The share of the retrieves' time spent in the C core (himga.memory._ranking.rank)."""
    from himga.memory import _ranking

    spent = [0.0]
    rank = _ranking.rank

    def timed(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return rank(*args)
        finally:
            spent[0] += time.perf_counter() - start

    _ranking.rank = timed
    try:
        start = time.perf_counter()
        for question in asked:
            memory.retrieve(question)
        total = time.perf_counter() - start
    finally:
        _ranking.rank = rank
    return spent[0] / total


if __name__ == "__main__":
    sys.exit(main())
