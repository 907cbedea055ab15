"""bench-memory: retrieve latency, ingest throughput and resident memory of the keyword memories,
beside tantivy and bm25s measured in the same run.

The corpus is real conversation text (benchmarks/corpus.py): the turns of a LoCoMo file, words
reshuffled across turns, at 100k messages (and 1M with --million or HIMGA_BENCH_MILLION=1);
the queries are QUERIES of the file's own questions. For each size and each engine (himga's
KeywordMemory and SQLiteKeywordMemory on disk; tantivy in RAM and bm25s, benchmarks/baselines.py)
a fresh worker process:
  - ingests the messages (the memories in batches of BATCH through `ingest_many`; the
    baselines all at once) and reports messages/s,
  - ingests ONE_BY_ONE more messages through `ingest` (the memories only; SQLite commits, and so
    syncs to disk, once per call),
  - reports its resident memory after ingest (VmRSS; Linux only, else the peak) beside the size
    of the messages' text.
Latency is measured apart, in one more worker holding every engine at once, so that all of them
meet the same machine at the same moment (it is shared): after WARM_UP questions each, every
question is put to each engine in turn (the order rotating from question to question), REPEATS
times in a row, its latency the fastest of them, and p50 / p99 are taken over the QUERIES
questions. The memories answer with `retrieve` (the context of their CONTEXT_HITS best turns),
the baselines with the same number of best messages' text.
The floors of SQLite ingest: a bare FTS5 `executemany` of the same messages into a plain
`fts5(content)` table, and one of just the stemmed terms the memory indexes (computed before
the clock starts) into the memory's own FTS5 table definition. The SQLite memory's reopen is
timed too (it reads its postings and each turn's place back in).

Each measurement is repeated RUNS times (once at 1M); the figures are min / median / max over
the runs, and every ratio is taken within a run, so that machine noise shows. Then the earlier
invented-vocabulary corpus gives a second, labelled line, whose rare query words make every
engine faster than real questions do.

    make bench-memory    # or: python -m benchmarks.bench_memory --locomo FILE --sizes 100000
"""

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import invented, invented_queries, natural, questions

BATCH = 1000
ONE_BY_ONE = {"keyword": 2000, "sqlite": 300}
QUERIES = 200
WARM_UP = 20
REPEATS = 3
RUNS = 3
DEFAULT_LOCOMO = "../shared/data/locomo/locomo-dev.json"
ENGINES = ("keyword", "sqlite", "tantivy", "bm25s")
FLOORS = ("floor-text", "floor-rows")
INVENTED_ENGINES = ("keyword", "sqlite", "tantivy")
TARGETS = "targets: p50 <= 1x tantivy's p50 (at 100k and at 1M), p99 <= 3x tantivy's p50 (at 100k)"


def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _make(name: str, directory: Path) -> Any:
    if name == "keyword":
        from himga.memory.keyword import KeywordMemory

        return KeywordMemory()
    if name == "sqlite":
        from himga.memory.sqlite import SQLiteKeywordMemory

        return SQLiteKeywordMemory(directory / "memory.sqlite3")
    from benchmarks.baselines import BM25S, Tantivy

    return Tantivy() if name == "tantivy" else BM25S()


def _corpus(corpus: str, size: int, locomo: str) -> list[tuple[Any, Any]]:
    return natural(locomo, size) if corpus == "natural" else invented(size)


def _ingest(engine: Any, name: str, data: list[tuple[Any, Any]]) -> None:
    if name in ONE_BY_ONE:  # the memories: in batches, as a server's IngestBatch calls come
        for i in range(0, len(data), BATCH):
            engine.ingest_many(data[i : i + BATCH])
    else:
        engine.ingest_many(data)


def worker(name: str, corpus: str, size: int, locomo: str) -> dict[str, Any]:
    """One engine's ingest and resident memory in this (fresh) process: see the module's text."""
    everything = _corpus(corpus, size + ONE_BY_ONE.get(name, 0), locomo)
    data, extra = everything[:size], everything[size:]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if name in FLOORS:
            return _floor(name, data, directory)
        base = _rss_mb()
        engine = _make(name, directory)
        start = time.perf_counter()
        _ingest(engine, name, data)
        batch_rate = len(data) / (time.perf_counter() - start)
        rss = _rss_mb() - base
        single_rate = None
        if extra:
            start = time.perf_counter()
            for message, session in extra:
                engine.ingest(message, session)
            single_rate = len(extra) / (time.perf_counter() - start)
        reopen = None
        if name == "sqlite":  # the durable one: it reads its postings and places in again
            engine.close()
            start = time.perf_counter()
            _make(name, directory).close()
            reopen = time.perf_counter() - start
    return {
        "batch_rate": batch_rate,
        "single_rate": single_rate,
        "rss_mb": rss,
        "text_mb": sum(len(message.content.encode()) for message, _ in data) / 2**20,
        "reopen_ms": None if reopen is None else 1000 * reopen,
    }


def latency_worker(
    engines: list[str], corpus: str, size: int, locomo: str
) -> dict[str, dict[str, float]]:
    """Every engine's p50 and p99, all held in this process and asked in turn."""
    data = _corpus(corpus, size, locomo)
    asked = questions(locomo, QUERIES) if corpus == "natural" else invented_queries(QUERIES)
    with tempfile.TemporaryDirectory() as tmp:
        made = {}
        for name in engines:
            made[name] = _make(name, Path(tmp))
            _ingest(made[name], name, data)
        for engine in made.values():
            for question in asked[:WARM_UP]:
                engine.retrieve(question)
        latencies: dict[str, list[float]] = {name: [] for name in engines}
        for i, question in enumerate(asked):
            turn = i % len(engines)
            for name in engines[turn:] + engines[:turn]:
                fastest = float("inf")
                for _ in range(REPEATS):
                    start = time.perf_counter()
                    made[name].retrieve(question)
                    fastest = min(fastest, time.perf_counter() - start)
                latencies[name].append(fastest)
        for name in ONE_BY_ONE:
            if name in made:
                made[name].close()
    found = {}
    for name, values in latencies.items():
        values.sort()
        found[name] = {
            "p50_ms": 1000 * values[len(values) // 2],
            "p99_ms": 1000 * values[min(len(values) - 1, int(len(values) * 0.99))],
        }
    return found


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


def _run_worker(
    name: str, corpus: str, size: int, locomo: str, engines: tuple[str, ...] = ()
) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.bench_memory", "--worker", name, corpus]
    done = subprocess.run(
        [*command, str(size), "--locomo", locomo, "--engines", ",".join(engines)],
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
    parser.add_argument(
        "--worker", nargs=3, metavar=("ENGINE", "CORPUS", "SIZE"), help=argparse.SUPPRESS
    )
    parser.add_argument("--locomo", default=os.environ.get("HIMGA_LOCOMO_PATH", DEFAULT_LOCOMO))
    parser.add_argument("--million", action="store_true", help="also measure 1M messages")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--sizes", help="comma-separated message counts instead of the default")
    parser.add_argument("--no-invented", action="store_true", help="skip the invented corpus")
    parser.add_argument("--engines", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        name, corpus, size = args.worker
        if name == "latency":
            engines = args.engines.split(",")
            print(json.dumps(latency_worker(engines, corpus, int(size), args.locomo)))
        else:
            print(json.dumps(worker(name, corpus, int(size), args.locomo)))
        return 0
    sizes = [100_000]
    if args.million or os.environ.get("HIMGA_BENCH_MILLION") == "1":
        sizes.append(1_000_000)
    if args.sizes:
        sizes = [int(size) for size in args.sizes.split(",")]
    print("bench-memory: figures are min/median/max over the runs of each size")
    print(f"natural corpus: the turns of {args.locomo}, words reshuffled; its questions")
    for size in sizes:
        runs = args.runs if size <= 100_000 else 1
        names = [*ENGINES, *FLOORS]
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for _ in range(runs):
            for name in names:
                results[name].append(_run_worker(name, "natural", size, args.locomo))
            _add_latencies(results, _run_worker("latency", "natural", size, args.locomo, ENGINES))
        print(
            f"\n{size:,} messages of natural text, {runs} run(s); retrieve over {QUERIES} "
            f"questions (each the fastest of {REPEATS}, the engines asked in turn in one process) "
            f"after {WARM_UP} to warm up; memories ingest in batches of {BATCH}"
        )
        _report(results, ENGINES)
        _ingest_report(results)
    if not args.no_invented:
        size = sizes[0]
        results = {name: [] for name in INVENTED_ENGINES}
        for _ in range(args.runs):
            for name in INVENTED_ENGINES:
                results[name].append(_run_worker(name, "invented", size, args.locomo))
            found = _run_worker("latency", "invented", size, args.locomo, INVENTED_ENGINES)
            _add_latencies(results, found)
        print(
            f"\nsecond line: {size:,} messages of an INVENTED vocabulary whose query words are "
            "rare (the earlier figure; it does not carry over to real questions)"
        )
        _report(results, INVENTED_ENGINES)
    return 0


def _add_latencies(results: dict[str, list[dict[str, Any]]], found: dict[str, Any]) -> None:
    """Put a latency worker's figures into each engine's result of the same run."""
    for name, figures in found.items():
        results[name][-1].update(figures)


def _column(results: dict[str, list[dict[str, Any]]], name: str, key: str) -> list[float]:
    return [r[key] for r in results[name]]


def _ratio(results: dict[str, list[dict[str, Any]]], a: str, ka: str, b: str, kb: str) -> str:
    pairs = zip(_column(results, a, ka), _column(results, b, kb), strict=True)
    return _spread([x / y for x, y in pairs], "{:.2f}")


def _report(results: dict[str, list[dict[str, Any]]], engines: tuple[str, ...]) -> None:
    print(
        f"{'engine':<8} {'batch msg/s':>20} {'one-by-one msg/s':>20} {'retrieve p50 ms':>20} "
        f"{'p99 ms':>20} {'RSS MB':>16}"
    )
    for name in engines:
        single = _column(results, name, "single_rate")
        print(
            f"{name:<8} {_spread(_column(results, name, 'batch_rate')):>20} "
            f"{_spread(single) if None not in single else '-':>20} "
            f"{_spread(_column(results, name, 'p50_ms')):>20} "
            f"{_spread(_column(results, name, 'p99_ms')):>20} "
            f"{_spread(_column(results, name, 'rss_mb')):>16}"
        )
    text = statistics.median(_column(results, engines[0], "text_mb"))
    print(f"the messages' text: {text:.1f} MB (UTF-8)")
    print(TARGETS)
    for name in ("keyword", "sqlite"):
        p50 = _ratio(results, name, "p50_ms", "tantivy", "p50_ms")
        p99 = _ratio(results, name, "p99_ms", "tantivy", "p50_ms")
        line = f"{name}: p50 / tantivy p50 {p50}; p99 / tantivy p50 {p99}"
        if "bm25s" in engines:
            line += f"; p50 / bm25s p50 {_ratio(results, name, 'p50_ms', 'bm25s', 'p50_ms')}"
        print(line)


def _ingest_report(results: dict[str, list[dict[str, Any]]]) -> None:
    for name, label in (("floor-text", "the messages"), ("floor-rows", "their stemmed terms")):
        print(f"floor: bare FTS5 of {label}: {_spread(_column(results, name, 'batch_rate'))} msg/s")
    share = _ratio(results, "sqlite", "batch_rate", "floor-text", "batch_rate")
    print(f"sqlite batch ingest / bare FTS5 of the same messages: {share}")
    share = _ratio(results, "sqlite", "batch_rate", "floor-rows", "batch_rate")
    print(f"sqlite batch ingest / bare FTS5 of just their stemmed terms: {share}")
    print(f"sqlite reopen after ingest, ms: {_spread(_column(results, 'sqlite', 'reopen_ms'))}")


if __name__ == "__main__":
    sys.exit(main())
