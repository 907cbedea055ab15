"""bench-hybrid: what the `hybrid` memory costs beside what it is made of, in one run.

1. The model (e5-small-v2 from the model cache): TURNS natural LoCoMo turns embedded as the
   hybrid memory embeds them (`fusion.passage`), by the model alone, beside the same turns
   ingested into a hybrid memory on disk through `ingest_many` in batches of BATCH (what
   IngestBatch runs): turns and tokens per second, and ingest / model alone (target >= 0.8).
   Then QUERIES questions embedded one at a time, as a Retrieve embeds its query.
2. The vector index at 5k and 100k vectors (and 1M with --million or HIMGA_BENCH_MILLION=1): vectors
   drawn from a normal distribution with the mean and covariance of the real e5 vectors of
   step 1 (their cosines with real questions have the real ones' mean and spread; the cost of a
   search does not depend on what they mean). Each real question is searched (k = 10) by every
   variant in turn: himga's exact float32 VectorIndex, the same behind a filter admitting 1% of
   the keys, numpy's BLAS product over the same matrix (what VectorIndex uses past 32k rows,
   and below them its own loop, which wakes no threads: see the figures at 5k, a
   conversation's size), exact scans of float16 and int8 copies (usearch's SIMD kernels;
   int8 then re-ranks its best RERANK in float32), and himga's default past 32k vectors, its
   4-bit sketches scanned in C and their best re-ranked in float32 (himga.memory.sketch),
   beside the same without the 2-bit first stage that past 64k vectors ranks by the sketches
   only the rows best by 2-bit codes (`sketch_coarse` 0); at 1M also usearch's HNSW graphs as
   in 2b.
   Figures: p50 latency, recall@10 against the exact float32 answer, bytes per million
   vectors, and each variant's p50 / the exact p50 within the run.
2b. The approximate searches on REAL vectors: how well one recalls depends on how the vectors
   cluster (drawn ones are less clustered than real ones), so himga's sketches (also at
   recall@100, the hybrid memory's dense depth) and usearch's HNSW graphs (connectivity 16
   and 32, stored as float32 or as int8, expansion_search 64 to 1024, their candidates
   re-scored exactly in float32) are measured beside the exact search on the 100k
   real e5 vectors of GCIDE sentences (benchmarks/real_vectors.py: embedded once, ~10 min,
   then cached), and on the same with every LoCoMo turn of the file added (a conversation
   inside a big store). Recall@10 over every question of the file; p50 over QUERIES; MB per
   1M; build seconds. himga.memory.graph takes its settings from here.
3. Retrieve at 100k natural-text messages (benchmarks/corpus.py): the hybrid memory (SQLite),
   the same without the sketches' 2-bit first stage (`sketch_coarse` 0), the same with every
   search exact (`sketch_threshold` 0), the same with its graph on
   (HybridOptions graph_threshold at half the store), the keyword
   memory (SQLite) and tantivy over the same texts, and the query's embedding alone. The
   hybrid memories' passages get the 100k real vectors of 2b (embedding the 100k messages
   themselves would take hours here; past 100k, drawn ones); queries are embedded by the real
   model. Each hybrid variant takes turns with the three parts alone (in one rotation, the
   exact variant's scans would empty the others' caches), its ratio taken against the parts'
   p50s of its own rotation. Target: hybrid p50 <= keyword p50 + tantivy p50 + embedding p50.
   With `--size 1000000` the same at 1M messages (the passages past the first 100k get drawn
   vectors, whose meaning the search's cost does not depend on), without the graph
   (GRAPHED_MOST: its build at 1M takes 5 to 20 minutes here).
4. Resident memory (VmRSS) of `himga serve --memory hybrid` with its model loaded, beside
   `himga serve --memory sqlite`, both just started.

Each latency is the fastest of REPEATS tries in a row, the engines taking turns question by
question after WARM_UP questions; p50 is over the questions. Everything is repeated RUNS
times; figures are min / median / max over the runs and every ratio is taken within a run.

    make bench-hybrid    # or: python -m benchmarks.bench_hybrid --locomo FILE [--million]
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.corpus import natural, questions

DEFAULT_LOCOMO = "../shared/data/locomo/locomo-dev.json"
TURNS = 400
BATCH = 100
QUERIES = 100
WARM_UP = 10
REPEATS = 3
RUNS = 3
K = 10
RERANK = 100
RETRIEVE_SIZE = 100_000
GRAPHED_MOST = 200_000  # step 3 measures the hybrid memory with its graph up to this many messages
MILLION_QUERIES = 30  # at 1M: fewer questions and one run (a float32 scan reads 1.5 GB)
SEED = 20261202
GRAPH_CONNECTIVITY = (16, 32)
GRAPH_EXPANSION = (64, 128, 256, 512, 1024)
GRAPH_FETCH = {"f32": K, "i8": 64}  # candidates the graph gives, re-scored in float32
GRAPH_EXPANSION_ADD = 128
GRAPH_THREADS = 2
SKETCHED = "4-bit sketches + float32 rerank (VectorIndex, the default)"
ONE_STAGE = "the same, no 2-bit first stage (sketch_coarse=0)"
DEEP = 100


def _spread(stats: list[float]) -> str:
    return f"{min(stats):.3g} / {statistics.median(stats):.3g} / {max(stats):.3g}"


def _p50(times: list[float]) -> float:
    return statistics.median(times) * 1e3


def _fastest(call: Callable[[], Any]) -> tuple[float, Any]:
    best, answer = float("inf"), None
    for _ in range(REPEATS):
        start = time.perf_counter()
        answer = call()
        best = min(best, time.perf_counter() - start)
    return best, answer


def _nearest_keys(index: Any, query: Any) -> Any:
    """The keys of `query`'s K nearest in `index` (a VectorIndex)."""
    return index.nearest(query, K)[0]


def _in_turns(engines: dict[str, Callable[[Any], Any]], asked: Sequence[Any]) -> dict[str, Any]:
    """Every engine answers every question, taking turns (the order rotating), after WARM_UP;
    per engine: the fastest latency of each question and the answers."""
    names = list(engines)
    for question in asked[:WARM_UP]:
        for name in names:
            engines[name](question)
    times: dict[str, list[float]] = {name: [] for name in names}
    answers: dict[str, list[Any]] = {name: [] for name in names}
    for i, question in enumerate(asked):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            took, answer = _fastest(functools.partial(engines[name], question))
            times[name].append(took)
            answers[name].append(answer)
    return {"times": times, "answers": answers}


# --- 1. the model -------------------------------------------------------------------------


def _turn_pairs(locomo: str, count: int | None = None) -> list[tuple[Any, Any]]:
    """`count` of the file's own turns (not reshuffled: real sentences), evenly spread (None:
    all of them)."""
    from himga.data import load_dataset

    pairs = [
        (message, session)
        for sample in load_dataset("locomo", locomo)
        for session in sample.sessions
        for message in session.messages
        if message.content.strip()
    ]
    if count is None or len(pairs) <= count:
        return pairs
    return [pairs[i * len(pairs) // count] for i in range(count)]


def bench_model(embedder: Any, locomo: str, asked: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Step 1; returns the turns' vectors and the questions' vectors."""
    from himga.memory.fusion import passage
    from himga.memory.hybrid_options import HybridOptions
    from himga.memory.hybrid_sqlite import HybridSQLiteMemory

    pairs = _turn_pairs(locomo, TURNS)
    texts = [passage(m.role, m.content) for m, _ in pairs]
    tokens = sum(len(embedder.token_ids(embedder.passage_prefix + t)) for t in texts)
    alone_rates, ingest_rates, ratios = [], [], []
    vectors = np.zeros((0, embedder.dimension), dtype=np.float32)
    for run in range(RUNS):
        with tempfile.TemporaryDirectory() as scratch:
            memory = HybridSQLiteMemory(Path(scratch) / "memory.sqlite3", HybridOptions())
            took: dict[str, float] = {}
            # the order alternates between runs: neither always meets the machine first
            for step in ("alone", "ingest") if run % 2 == 0 else ("ingest", "alone"):
                start = time.perf_counter()
                if step == "alone":
                    vectors = embedder.embed_passages(texts)
                else:
                    for at in range(0, len(pairs), BATCH):
                        memory.ingest_many(pairs[at : at + BATCH])
                took[step] = time.perf_counter() - start
            memory.close()
        alone_rates.append(len(texts) / took["alone"])
        ingest_rates.append(len(texts) / took["ingest"])
        ratios.append(took["alone"] / took["ingest"])
    print(f"## 1. the model on {len(texts)} LoCoMo turns ({tokens} tokens), min / median / max")
    print(f"model alone:        {_spread(alone_rates)} turns/s")
    median_alone = statistics.median(alone_rates)
    print(f"                    {_spread([r * tokens / len(texts) for r in alone_rates])} tokens/s")
    print(f"hybrid ingest_many: {_spread(ingest_rates)} turns/s (batches of {BATCH})")
    print(f"ingest / model alone: {_spread(ratios)}  (target >= 0.8)")
    query_times: list[float] = []
    query_vectors = []
    for question in asked:
        seconds, found = _fastest(functools.partial(embedder.embed_queries, [question]))
        query_times.append(seconds)
        query_vectors.append(found[0])
    print(f"one query embedded: p50 {_p50(query_times):.2f} ms over {len(asked)} questions")
    print(f"(model alone at median {median_alone:.1f} turns/s)\n")
    return np.asarray(vectors, dtype=np.float32), np.asarray(query_vectors, dtype=np.float32)


# --- 2. the vector index ------------------------------------------------------------------


class Drawn:
    """Unit vectors drawn from the normal distribution of real ones' mean and covariance."""

    def __init__(self, real: np.ndarray) -> None:
        self._mean = real.mean(axis=0).astype(np.float64)
        covariance = np.cov(real.T.astype(np.float64))
        # fewer samples than dimensions squared: a little of the diagonal keeps it positive
        covariance = 0.95 * covariance + 0.05 * np.diag(np.diag(covariance))
        self._factor = np.linalg.cholesky(covariance + 1e-9 * np.eye(len(covariance)))
        self._rng = np.random.default_rng(SEED)

    def draw(self, count: int) -> np.ndarray:
        out = np.empty((count, len(self._mean)), dtype=np.float32)
        for at in range(0, count, 50_000):
            n = min(50_000, count - at)
            rows = self._mean + self._rng.standard_normal((n, len(self._mean))) @ self._factor.T
            out[at : at + n] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return out


def _int8(vectors: np.ndarray) -> np.ndarray:
    return np.clip(np.round(vectors * 127), -127, 127).astype(np.int8)


def _graphs(
    vectors: np.ndarray, connectivities: Sequence[int]
) -> dict[str, tuple[Callable[[Any], Any], float, int]]:
    """usearch HNSW graphs over `vectors`, one per connectivity and storage (float32, int8),
    each searched at every GRAPH_EXPANSION: per variant its search (the graph's GRAPH_FETCH
    candidates re-scored exactly from the float32 rows, so recall is of what the index would
    return), the graph's build seconds and its bytes."""
    from usearch.index import Index

    keys = np.arange(len(vectors), dtype=np.uint64)
    found: dict[str, tuple[Callable[[Any], Any], float, int]] = {}
    for connectivity, dtype in [(c, d) for c in connectivities for d in GRAPH_FETCH]:
        graph = Index(
            ndim=vectors.shape[1],
            metric="ip",
            dtype=dtype,
            connectivity=connectivity,
            expansion_add=GRAPH_EXPANSION_ADD,
        )
        start = time.perf_counter()
        graph.add(keys, vectors, threads=GRAPH_THREADS)
        built = time.perf_counter() - start

        for expansion in GRAPH_EXPANSION:

            def search(
                q: np.ndarray,
                graph: Any = graph,
                expansion: int = expansion,
                fetch: int = GRAPH_FETCH[dtype],
            ) -> Any:
                graph.expansion_search = expansion
                found = graph.search(q, fetch, threads=1).keys
                rows = np.asarray(found, dtype=np.int64)
                return rows[np.argsort(-(vectors[rows] @ q), kind="stable")[:K]]

            name = f"HNSW {dtype} M={connectivity} ef={expansion} fetch {GRAPH_FETCH[dtype]}"
            found[name] = (search, built, graph.memory_usage)
    return found


def _keys(index: Any, q: np.ndarray, k: int) -> set[int]:
    return set(index.nearest(q, k)[0].tolist())


def bench_graph(embedder: Any, locomo: str, queries: np.ndarray, everyone: np.ndarray) -> None:
    """Step 2 on REAL vectors: the graph beside the exact search, over the 100k real e5 vectors
    of GCIDE sentences (benchmarks/real_vectors.py), then over the same with every turn of the
    LoCoMo file added (a conversation inside a big store). Timed on the step's QUERIES
    questions; recall@10 over `everyone` (every question of the file)."""
    from benchmarks.real_vectors import real_vectors
    from himga.memory.fusion import passage
    from himga.memory.sketch import SketchOptions
    from himga.memory.vectors import VectorIndex

    real = real_vectors(embedder)
    turns = np.asarray(
        embedder.embed_passages([passage(m.role, m.content) for m, _ in _turn_pairs(locomo)]),
        dtype=np.float32,
    )
    sets = {
        f"{len(real):,} real": real,
        f"{len(real):,} real + {len(turns):,} LoCoMo turns": np.concatenate([real, turns]),
    }
    for label, vectors in sets.items():
        index = VectorIndex(vectors.shape[1])
        index.add(np.arange(len(vectors), dtype=np.int64), vectors)
        sketched = VectorIndex(vectors.shape[1], sketch=SketchOptions())
        sketched.add(np.arange(len(vectors), dtype=np.int64), vectors)
        alone = VectorIndex(vectors.shape[1], sketch=SketchOptions(coarse=0))
        alone.add(np.arange(len(vectors), dtype=np.int64), vectors)
        variants: dict[str, Callable[[Any], Any]] = {
            "exact float32 (VectorIndex)": functools.partial(_nearest_keys, index),
            SKETCHED: functools.partial(_nearest_keys, sketched),
            ONE_STAGE: functools.partial(_nearest_keys, alone),
        }
        built = _graphs(vectors, GRAPH_CONNECTIVITY)
        variants |= {name: search for name, (search, _, _) in built.items()}
        truth = [set(index.nearest(q, K)[0].tolist()) for q in everyone]
        recalls = {
            name: float(
                np.mean(
                    [
                        len(set(np.asarray(search(q)).tolist()) & t) / K
                        for q, t in zip(everyone, truth, strict=True)
                    ]
                )
            )
            for name, search in variants.items()
        }
        p50s: dict[str, list[float]] = {name: [] for name in variants}
        ratios: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(RUNS):
            times = _in_turns(variants, list(queries))["times"]
            for name in variants:
                p50s[name].append(_p50(times[name]))
                ratios[name].append(p50s[name][-1] / p50s["exact float32 (VectorIndex)"][-1])
        print(
            f"## 2b. approximate search at {label} e5 vectors (k = {K}, expansion_add "
            f"{GRAPH_EXPANSION_ADD}, built on {GRAPH_THREADS} threads)"
        )
        print(
            f"variant | p50 ms (min / median / max) | / exact float32 | recall@10 "
            f"({len(everyone)} questions) | MB per 1M | build s"
        )
        for name in variants:
            own = {SKETCHED: sketched.nbytes, ONE_STAGE: alone.nbytes}.get(name, index.nbytes)
            _, seconds, nbytes = built.get(name, (None, 0.0, own))
            print(
                f"{name} | {_spread(p50s[name])} | {_spread(ratios[name])} | "
                f"{recalls[name]:.4f} | {nbytes / len(vectors) * 1e6 / 2**20:.0f} | {seconds:.0f}"
            )
        for name, approximate in ((SKETCHED, sketched), (ONE_STAGE, alone)):
            deep = [
                len(_keys(approximate, q, DEEP) & _keys(index, q, DEEP)) / DEEP for q in everyone
            ]
            print(
                f"{name}: recall@{DEEP} (the hybrid memory's dense depth) {np.mean(deep):.4f}, "
                f"lowest of one question {min(deep):.2f}"
            )
        print(
            "(a graph's MB are usearch's own, its own copy of the vectors (float32 or int8) "
            "included; the float32 rows its candidates are re-scored from are the "
            "VectorIndex's, on top; the sketches' MB include the float32 rows)\n"
        )
        del built, variants, index, sketched, alone
        gc.collect()


def bench_vectors(size: int, drawn: Drawn, queries: np.ndarray) -> None:
    from usearch.index import MetricKind, search

    from himga.memory.sketch import SketchOptions
    from himga.memory.vectors import VectorIndex

    vectors = drawn.draw(size)
    keys = np.arange(size, dtype=np.int64)
    index = VectorIndex(vectors.shape[1])
    start = time.perf_counter()
    index.add(keys, vectors)
    added = time.perf_counter() - start
    sketched = VectorIndex(vectors.shape[1], sketch=SketchOptions())
    start = time.perf_counter()
    sketched.add(keys, vectors)
    sketched_in = time.perf_counter() - start
    alone = VectorIndex(vectors.shape[1], sketch=SketchOptions(coarse=0))
    alone.add(keys, vectors)
    half, small = vectors.astype(np.float16), _int8(vectors)
    allowed = np.arange(size // 2, size // 2 + size // 100, dtype=np.int64)  # 1%: a conversation

    def int8_reranked(q: np.ndarray) -> np.ndarray:
        found = search(small, _int8(q), RERANK, MetricKind.IP, exact=True, threads=1)
        rows = np.asarray(found.keys, dtype=np.int64)
        return rows[np.argsort(-(vectors[rows] @ q), kind="stable")[:K]]

    def blas(q: np.ndarray) -> np.ndarray:
        scores = vectors @ q
        best = np.argpartition(-scores, K - 1)[:K]
        return best[np.argsort(-scores[best])]

    per_vector_bytes: dict[str, float] = {}
    variants: dict[str, Callable[[Any], Any]] = {
        "exact float32 (VectorIndex)": lambda q: index.nearest(q, K)[0],
        "exact float32, BLAS always (numpy @)": blas,
        "exact float32, 1% allowed": lambda q: index.nearest(q, K, allowed)[0],
        "exact float16 (usearch)": lambda q: (
            search(half, q.astype(np.float16), K, MetricKind.IP, exact=True, threads=1).keys
        ),
        f"exact int8 + float32 rerank of {RERANK}": int8_reranked,
        SKETCHED: lambda q: sketched.nearest(q, K)[0],
        ONE_STAGE: lambda q: alone.nearest(q, K)[0],
    }
    builds: dict[str, float] = {}
    if size >= 1_000_000:
        # the graph at 1M on drawn vectors (what 1M costs; its recall is the drawn vectors')
        built = _graphs(vectors, (GRAPH_CONNECTIVITY[0],))
        for name, (graph_search, seconds, nbytes) in built.items():
            variants[name] = graph_search
            builds[name] = seconds
            per_vector_bytes[name] = nbytes / size
    if size >= 1_000_000:
        queries = queries[:MILLION_QUERIES]
    truth = [index.nearest(q, K)[0] for q in queries]
    truth_allowed = [allowed[np.argsort(-(vectors[allowed] @ q))[:K]] for q in queries]
    p50s: dict[str, list[float]] = {name: [] for name in variants}
    ratios: dict[str, list[float]] = {name: [] for name in variants}
    recalls: dict[str, float] = {}
    runs = RUNS if size < 1_000_000 else 1
    for _ in range(runs):
        measured = _in_turns(variants, list(queries))
        for name in variants:
            p50s[name].append(_p50(measured["times"][name]))
            ratios[name].append(p50s[name][-1] / p50s["exact float32 (VectorIndex)"][-1])
            answers = measured["answers"][name]
            expected = truth_allowed if name.endswith("allowed") else truth
            hits = [
                len(set(np.asarray(a).tolist()) & set(t.tolist())) / K
                for a, t in zip(answers, expected, strict=True)
            ]
            recalls[name] = float(np.mean(hits))
    dimension = vectors.shape[1]
    per_million = per_vector_bytes | {
        "exact float32 (VectorIndex)": index.nbytes / len(index),
        "exact float32, 1% allowed": index.nbytes / len(index),
        "exact float32, BLAS always (numpy @)": vectors.nbytes / size + 8,
        "exact float16 (usearch)": half.nbytes / size + 8,
        f"exact int8 + float32 rerank of {RERANK}": small.nbytes / size + dimension * 4 + 8,
        SKETCHED: sketched.nbytes / len(sketched),
        ONE_STAGE: alone.nbytes / len(alone),
    }
    print(
        f"## 2. vector search at {size:,} vectors of {dimension} (added in {added:.1f} s; "
        f"with sketches {sketched_in:.1f} s{'' if sketched.sketched else ', none: too few'})"
    )
    print("variant | p50 ms (min / median / max) | / exact float32 | recall@10 | MB per 1M")
    for name in variants:
        print(
            f"{name} | {_spread(p50s[name])} | {_spread(ratios[name])} | {recalls[name]:.4f} | "
            f"{per_million[name] * 1e6 / 2**20:.0f}"
        )
    for name, seconds in builds.items():
        print(f"({name}: built in {seconds:.0f} s on {GRAPH_THREADS} threads)")
    print(
        f"(VectorIndex: {index.nbytes / 2**20:.0f} MB at capacity for {len(index):,}; "
        f"float32 rows alone: {dimension * 4 + 8} bytes a vector)\n"
    )


# --- 3. Retrieve --------------------------------------------------------------------------


class Passages:
    """The vectors step 3 gives the hybrid memory's passages, in the order they are stored: the
    100k real e5 vectors of GCIDE sentences (benchmarks/real_vectors.py) first, then drawn
    ones (as in 2) for any past them."""

    def __init__(self, real: np.ndarray, drawn: Drawn) -> None:
        self._real, self._drawn, self._used = real, drawn, 0

    def take(self, count: int) -> np.ndarray:
        rows = self._real[self._used : self._used + count]
        self._used += len(rows)
        if len(rows) < count:
            rows = np.concatenate([rows, self._drawn.draw(count - len(rows))])
        return rows


def bench_retrieve(
    locomo: str, embedder: Any, real: np.ndarray, drawn: Drawn, asked: list[str]
) -> None:
    from benchmarks.baselines import Tantivy
    from himga.embeddings import Embedder
    from himga.memory.hybrid_options import HybridOptions
    from himga.memory.hybrid_sqlite import HybridSQLiteMemory
    from himga.memory.sqlite import SQLiteKeywordMemory

    class GivenPassages(Embedder):
        """The real model for queries; the passages' vectors from `passages` (embedding the
        100k natural-text messages themselves would take hours here: see the module's text)."""

        def __init__(self) -> None:
            self.passages = Passages(real, drawn)
            self.model_id = embedder.model_id
            self.dimension = embedder.dimension
            self.max_tokens = embedder.max_tokens
            self.in_process = embedder.in_process

        def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
            return self.passages.take(len(texts))

        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
            found: np.ndarray = embedder.embed_queries(texts)
            return found

        def _embed(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("not used")

    class BenchHybrid(HybridSQLiteMemory):
        def _set_model(self, options: HybridOptions) -> None:
            self._fusion = options
            self._embedder = GivenPassages()

    pairs = natural(locomo, RETRIEVE_SIZE)
    with tempfile.TemporaryDirectory() as scratch:
        memories: dict[str, SQLiteKeywordMemory] = {
            "hybrid retrieve": BenchHybrid(Path(scratch) / "hybrid.sqlite3", HybridOptions()),
            # the sketches scanned whole, without their 2-bit first stage: what it saves
            "hybrid, one stage": BenchHybrid(
                Path(scratch) / "one-stage.sqlite3", HybridOptions(sketch_coarse=0)
            ),
            # the exact float32 search, no sketches: what they save
            "hybrid, exact": BenchHybrid(
                Path(scratch) / "exact.sqlite3", HybridOptions(sketch_threshold=0)
            ),
        }
        if len(pairs) <= GRAPHED_MOST:
            # the graph's options as measured in 2b (himga.memory.graph), on from half the store
            memories["hybrid, graph"] = BenchHybrid(
                Path(scratch) / "graphed.sqlite3", HybridOptions(graph_threshold=len(pairs) // 2)
            )
        keyword = SQLiteKeywordMemory(Path(scratch) / "keyword.sqlite3")
        tantivy = Tantivy()
        for at in range(0, len(pairs), 1000):
            for memory in (*memories.values(), keyword):
                memory.ingest_many(pairs[at : at + 1000])
        tantivy.ingest_many(pairs)
        budget: dict[str, Callable[[Any], Any]] = {
            "keyword retrieve": keyword.retrieve,
            "tantivy": tantivy.retrieve,
            "query embedding": lambda q: embedder.embed_queries([q]),
        }
        # Each hybrid variant takes turns with the budget's parts alone: in one rotation with
        # the others, whose float32 copies are scanned whole, every Retrieve starts from caches
        # the others emptied (at 100k the hybrid's p50 rose from 4.2-4.6 to 5.3-6.1 ms that way,
        # the embedding's by up to 0.5 ms, keyword's and tantivy's by 0.06: benchmarks/README.md).
        p50s: dict[str, list[float]] = {}
        ratios: dict[str, list[float]] = {name: [] for name in memories}
        for _ in range(RUNS):
            for name, memory in memories.items():
                times = _in_turns({name: memory.retrieve} | budget, asked)["times"]
                for part in (name, *budget):
                    p50s.setdefault(part, []).append(_p50(times[part]))
                ratios[name].append(p50s[name][-1] / sum(p50s[part][-1] for part in budget))
        for memory in (*memories.values(), keyword):
            memory.close()
    print(f"## 3. Retrieve at {len(pairs):,} natural-text messages, {len(asked)} questions")
    print(f"(each variant took turns with the parts alone; theirs over {len(memories)} rotations)")
    for name in (*memories, *budget):
        print(f"{name:18s} p50 {_spread(p50s[name])} ms")
    for name, found in ratios.items():
        print(f"{name} / (keyword + tantivy + query embedding): {_spread(found)}  (target <= 1)")
    if len(pairs) > GRAPHED_MOST:
        print(f"(no graph past {GRAPHED_MOST:,} messages: its build takes minutes, see 2 and 2b)")
    print()


# --- 4. a server's resident memory --------------------------------------------------------


def _rss_of_server(memory: str, scratch: Path) -> float:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "himga", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--memory", memory, "--data-dir", str(scratch / memory)]
    log = (scratch / f"{memory}.log").open("wb")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if server.poll() is not None:
                log.flush()
                said = (scratch / f"{memory}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"himga serve --memory {memory} exited: {said}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        time.sleep(1.0)  # past the first connection: what it holds at rest
        for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS (Linux only)")
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def bench_server_memory() -> None:
    hybrid, sqlite = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(RUNS):
            hybrid.append(_rss_of_server("hybrid", Path(scratch)))
            sqlite.append(_rss_of_server("sqlite", Path(scratch)))
    print("## 4. resident memory of a just-started server (VmRSS, MB)")
    print(f"--memory hybrid (model loaded): {_spread(hybrid)}")
    print(f"--memory sqlite:                {_spread(sqlite)}")
    print(f"difference: {_spread([h - s for h, s in zip(hybrid, sqlite, strict=True)])}\n")


def main() -> None:
    global TURNS, RETRIEVE_SIZE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", default=os.environ.get("LOCOMO", DEFAULT_LOCOMO))
    parser.add_argument(
        "--million",
        action="store_true",
        default=bool(os.environ.get("HIMGA_BENCH_MILLION")),
        help="also search 1M vectors",
    )
    parser.add_argument("--steps", default="1234", help="which steps to run (default: all)")
    parser.add_argument("--size", type=int, default=RETRIEVE_SIZE, help="vectors and messages")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns the model embeds")
    parser.add_argument("--queries", type=int, default=QUERIES, help="questions asked")
    args = parser.parse_args()
    TURNS, RETRIEVE_SIZE = args.turns, args.size
    from himga.embeddings import DEFAULT_MODEL, open_embedder

    embedder = open_embedder(DEFAULT_MODEL)
    asked = questions(args.locomo, args.queries)
    print(f"bench-hybrid: {DEFAULT_MODEL} ({embedder.model_id}), {os.cpu_count()} cores\n")
    turns, queries = bench_model(embedder, args.locomo, asked)
    drawn = Drawn(turns)
    if "2" in args.steps:
        sizes = [5_000, args.size] + ([1_000_000] if args.million else [])
        for size in sizes:
            bench_vectors(size, drawn, queries)
            gc.collect()  # the 1M copies go before the next step
        everyone = embedder.embed_queries(questions(args.locomo, 1_000_000))
        bench_graph(embedder, args.locomo, queries, np.asarray(everyone, dtype=np.float32))
    if "3" in args.steps:
        from benchmarks.real_vectors import real_vectors

        bench_retrieve(args.locomo, embedder, real_vectors(embedder), drawn, asked)
    if "4" in args.steps:
        bench_server_memory()


if __name__ == "__main__":
    main()
