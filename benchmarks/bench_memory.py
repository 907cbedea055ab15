"""bench-memory: ingest throughput, retrieve latency and resident memory of the keyword memories.

For each size (10k and 100k synthetic messages; 1M with --million or HIMGA_BENCH_MILLION=1) and
each memory (the seed's naive scan as the baseline, KeywordMemory, SQLiteKeywordMemory on disk),
a fresh worker process:
  - ingests the messages in batches of BATCH through `ingest_many` (messages/s),
  - ingests ONE_BY_ONE more messages through `ingest` (messages/s; SQLite commits, and so syncs
    to disk, once per call),
  - times `retrieve` over QUERIES questions (p50 / p99; NAIVE_QUERIES for the slow baseline),
  - reports its resident memory after ingest (VmRSS; Linux only, else the peak).
The floor for SQLite ingest is a bare FTS5 `executemany` into a plain `fts5(content)` table of
the same messages, in the same batches, with the same pragmas: what SQLite alone costs to take
them in. Also measured: a bare insert of just the terms the memory indexes (each message's
stemmed terms, computed before the clock starts, into the memory's own FTS5 table definition),
which shows SQLite's share of the memory's ingest; and how long the SQLite memory takes to open
again after the run (it reads every stored turn's place back in).
Each measurement is repeated RUNS times; the figures are min / median / max over the runs, and
the ratios are taken within each run, so that machine noise shows.

Synthetic data: conversations of two speakers, sessions of SESSION_TURNS turns, turns of 6 to
30 words drawn from a Zipf-like vocabulary (English function words first, then made-up words);
queries name a speaker and three mid-frequency words.
"""

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BATCH = 1000
ONE_BY_ONE = {"naive": 2000, "keyword": 2000, "sqlite": 300}
QUERIES = 200
# The naive scan takes ~0.3 s per query at 100k messages: fewer queries keep the run short.
NAIVE_QUERIES = {10_000: 200, 100_000: 40, 1_000_000: 10}
SESSION_TURNS = 20
SESSIONS_PER_CONVERSATION = 30
RUNS = 3
SEED = 20240508
_FUNCTION_TEXT = (
    "i the to and a you it of that in is my was for so me but on this have with just be "
    "we at it's like what about your really are do not can all they that's out up too"
)
_FUNCTION_WORDS = _FUNCTION_TEXT.split()


def vocabulary(size: int = 30_000) -> tuple[list[str], list[float]]:
    """Words and Zipf weights (1/rank): function words first, then pronounceable inventions."""
    rng = random.Random(SEED)
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    words = list(_FUNCTION_WORDS)
    seen = set(words)
    while len(words) < size:
        length = rng.randint(2, 4)
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(length))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words, [1 / rank for rank in range(1, size + 1)]


def messages(count: int, offset: int = 0) -> list[tuple[Any, Any]]:
    """`count` synthetic (Message, Session) pairs, the same ones every run."""
    from himga.data.conversation import Message, Session

    words, weights = vocabulary()
    cumulative = list(_accumulate(weights))
    rng = random.Random(SEED + offset)
    pairs = []
    session = None
    for n in range(offset, offset + count):
        if n % SESSION_TURNS == 0 or session is None:
            conversation = n // (SESSION_TURNS * SESSIONS_PER_CONVERSATION)
            number = n // SESSION_TURNS
            session = Session(
                session_id=f"c{conversation}-s{number}", date_str=f"{number % 28 + 1} May, 2023"
            )
            names = (f"Speaker{2 * conversation % 97}", f"Speaker{(2 * conversation + 1) % 97}")
        text = " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(6, 30)))
        message = Message(role=names[n % 2], content=text.capitalize() + ".", turn_id=f"T{n}")
        pairs.append((message, session))
    return pairs


def queries(count: int) -> list[str]:
    rng = random.Random(SEED - 1)
    words, _ = vocabulary()
    middle = words[200:5000]
    return [
        f"What did Speaker{rng.randrange(97)} say about "
        f"{rng.choice(middle)}, {rng.choice(middle)} and {rng.choice(middle)}?"
        for _ in range(count)
    ]


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _make(name: str, directory: Path) -> Any:
    if name == "naive":
        from himga.memory.naive import SimpleKeywordMemory

        return SimpleKeywordMemory()
    if name == "keyword":
        from himga.memory.keyword import KeywordMemory

        return KeywordMemory()
    from himga.memory.sqlite import SQLiteKeywordMemory

    return SQLiteKeywordMemory(directory / "memory.sqlite3")


def worker(name: str, size: int) -> dict[str, Any]:
    """One measurement in this (fresh) process: see the module's text."""
    data = messages(size)
    extra = messages(ONE_BY_ONE.get(name, 0), offset=size)
    asked = queries(NAIVE_QUERIES.get(size, 10) if name == "naive" else QUERIES)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if name.startswith("floor"):
            return _floor(name, data, directory)
        base = _rss_mb()
        memory = _make(name, directory)
        start = time.perf_counter()
        for i in range(0, len(data), BATCH):
            memory.ingest_many(data[i : i + BATCH])
        batch_rate = len(data) / (time.perf_counter() - start)
        rss = _rss_mb() - base
        start = time.perf_counter()
        for message, session in extra:
            memory.ingest(message, session)
        single_rate = len(extra) / (time.perf_counter() - start)
        latencies = []
        for query in asked:
            start = time.perf_counter()
            memory.retrieve(query)
            latencies.append(time.perf_counter() - start)
        latencies.sort()
        memory.close()
        reopen = None
        if name == "sqlite":  # the durable one: it reads the stored turns' places in again
            start = time.perf_counter()
            _make(name, directory).close()
            reopen = time.perf_counter() - start
    return {
        "batch_rate": batch_rate,
        "single_rate": single_rate,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "rss_mb": rss,
        "reopen_ms": None if reopen is None else 1000 * reopen,
    }


def _floor(name: str, data: list[tuple[Any, Any]], directory: Path) -> dict[str, Any]:
    """A bare FTS5 executemany of the same messages (or of the memory's exact index rows)."""
    db = sqlite3.connect(directory / "floor.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    if name == "floor-text":
        db.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
        rows: list[tuple[Any, ...]] = [(m.content,) for m, _ in data]
        insert = "INSERT INTO t (content) VALUES (?)"
    else:
        from himga.memory.text import terms

        # The memory numbers its rows itself; FTS5 refuses a contentless row without a rowid.
        rows = [(n, " ".join(terms(m.content))) for n, (m, _) in enumerate(data, start=1)]
        db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(terms, content='', tokenize='ascii', columnsize=0)"
        )
        insert = "INSERT INTO t (rowid, terms) VALUES (?, ?)"
    start = time.perf_counter()
    for i in range(0, len(rows), BATCH):
        db.execute("BEGIN")
        db.executemany(insert, rows[i : i + BATCH])
        db.execute("COMMIT")
    rate = len(rows) / (time.perf_counter() - start)
    db.close()
    return {"batch_rate": rate}


def _run_worker(name: str, size: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", name, str(size)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _spread(values: list[float], fmt: str = "{:.3g}") -> str:
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("MEMORY", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--million", action="store_true", help="also measure 1M messages")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--sizes", help="comma-separated message counts instead of the default")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]))))
        return 0
    sizes = [10_000, 100_000]
    if args.million or os.environ.get("HIMGA_BENCH_MILLION") == "1":
        sizes.append(1_000_000)
    if args.sizes:
        sizes = [int(size) for size in args.sizes.split(",")]
    names = ["naive", "keyword", "sqlite", "floor-text", "floor-rows"]
    print("bench-memory: figures are min/median/max over the runs of each size")
    for size in sizes:
        runs = args.runs if size <= 100_000 else 1
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for _ in range(runs):
            for name in names:
                results[name].append(_run_worker(name, size))
        print(
            f"\n{size:,} messages, {runs} run(s); ingest in batches of {BATCH}; retrieve over "
            f"{QUERIES} queries ({NAIVE_QUERIES.get(size, 10)} for naive)"
        )
        _report(results)
    return 0


def _report(results: dict[str, list[dict[str, Any]]]) -> None:
    def column(name: str, key: str) -> list[float]:
        return [r[key] for r in results[name]]

    def ratio(a: str, b: str, key: str, invert: bool = False) -> list[float]:
        pairs = zip(column(a, key), column(b, key), strict=True)
        return [(y / x) if invert else (x / y) for x, y in pairs]

    print(
        f"{'memory':<9} {'batch msg/s':>22} {'one-by-one msg/s':>22} "
        f"{'retrieve p50 ms':>22} {'p99 ms':>22} {'RSS MB':>18}"
    )
    for name in ("naive", "keyword", "sqlite"):
        print(
            f"{name:<9} {_spread(column(name, 'batch_rate')):>22} "
            f"{_spread(column(name, 'single_rate')):>22} {_spread(column(name, 'p50_ms')):>22} "
            f"{_spread(column(name, 'p99_ms')):>22} {_spread(column(name, 'rss_mb')):>18}"
        )
    print(
        f"{'floor':<9} {_spread(column('floor-text', 'batch_rate')):>22}  bare FTS5 of the messages"
    )
    print(
        f"{'floor':<9} {_spread(column('floor-rows', 'batch_rate')):>22}  bare FTS5 of their terms"
    )
    for name in ("keyword", "sqlite"):
        speedup = ratio("naive", name, "p50_ms")
        print(f"retrieve p50 speed-up over naive, {name}: {_spread(speedup)}x")
    share = ratio("sqlite", "floor-text", "batch_rate")
    print(f"sqlite batch ingest / bare FTS5 of the same messages: {_spread(share, '{:.0%}')}")
    share = ratio("sqlite", "floor-rows", "batch_rate")
    print(
        f"sqlite batch ingest / bare FTS5 of just their stemmed terms: {_spread(share, '{:.0%}')}"
    )
    print(f"sqlite reopen after ingest, ms: {_spread(column('sqlite', 'reopen_ms'))}")


if __name__ == "__main__":
    sys.exit(main())
