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

Target: himga keyword p50 at most tantivy's p50. `--corpus natural` measures on bench-memory's
corpus instead (the dev file's own words reshuffled: a small vocabulary, so each query term has
long postings), where the earlier 1.48x was measured. tantivy's `en_stem` keeps stopwords, which
himga drops: questions' "what", "did", "the" cost tantivy long postings on both corpora.

    make bench-keyword-1m    # or: python -m benchmarks.bench_keyword_1m --size 200000
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.baselines import Tantivy
from benchmarks.corpus import dictionary, natural, questions
from himga.memory.keyword import KeywordMemory

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
    tantivy = Tantivy()
    start = time.perf_counter()
    tantivy.ingest_many(data)
    tantivy_ingest = time.perf_counter() - start
    del data
    engines: dict[str, Callable[[str], object]] = {
        "himga": himga.retrieve,
        "tantivy": tantivy.retrieve,
    }
    for question in asked[:WARM_UP]:
        for ask in engines.values():
            ask(question)
    p50s: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        latencies: dict[str, list[float]] = {name: [] for name in engines}
        for i, question in enumerate(asked):
            names = list(engines) if i % 2 == 0 else list(reversed(engines))
            for name in names:
                latencies[name].append(_fastest(engines[name], question))
        for name, values in latencies.items():
            p50s[name].append(1000 * statistics.median(values))
    ranked = _ranking_share(himga, asked)
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
        f"ingest: himga {himga_ingest:.0f} s ({himga_mb:.0f} MB resident), tantivy "
        f"{tantivy_ingest:.0f} s"
    )
    for name, values in p50s.items():
        print(f"  {name:<8} p50 ms {_spread(values)}")
    ratios = [a / b for a, b in zip(p50s["himga"], p50s["tantivy"], strict=True)]
    print(f"  himga p50 / tantivy p50: {_spread(ratios, '{:.2f}')}  (target: <= 1)")
    print(f"  share of a himga retrieve in the C ranking core: {ranked:.0%}")
    return 0


def _ranking_share(memory: KeywordMemory, asked: list[str]) -> float:
    """The share of the retrieves' time spent in the C core (himga.memory._ranking.rank)."""
    from himga.memory import _ranking

    spent = [0.0]
    rank = _ranking.rank

    def timed(*args: object) -> object:
        start = time.perf_counter()
        try:
            return rank(*args)
        finally:
            spent[0] += time.perf_counter() - start

    _ranking.rank = timed  # type: ignore[assignment]
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
