"""`make bench-embeddings`: an embedding model's throughput on natural text, its batching
strategies side by side in one run.

The texts are LoCoMo turns as a memory embeds them (`speaker: content`, the passage prefix
added), TURNS of them (HIMGA_BENCH_TURNS) spread over the file's conversations. For each model
(the default; `--models` for others in the cache) and each of RUNS runs, every strategy embeds
the same texts, the strategies taking turns within the run:

- `alone`: each text its own run of the model, what himga does for the int8 e5 (the baseline);
- `by_length`: texts of one token length share a run of up to 32, nothing padded, what himga
  does for an fp32 model;
- `padded`: runs of 32 texts in their order, each padded to its run's longest (the usual
  batching; not batch-independent: it shows what the other two cost);
- `alone, N threads`: `alone` with as many onnxruntime threads as the process has cores (at most
  4) instead of the default (one);
- `alone, N runs`: `alone` with as many runs of the model going at once, each on its own
  thread, as the process has cores (at most 4): what himga does by default
  (himga.embeddings.onnx.default_runs). Every other strategy keeps one run going at a time;
- `one query`: each of QUERIES questions embedded alone as a Retrieve embeds its query, with the
  default threads and with N (its p50 in ms, not a rate).

It reports turns/s and tokens/s (the model's tokens, truncation to the window included),
min / median / max over the runs, each strategy's speed as a ratio to `alone` within its run,
and how far each strategy's vectors are from `alone`'s (0 where the strategy is
batch-independent for that model).

    make bench-embeddings   # or: python -m benchmarks.bench_embeddings --locomo FILE
"""

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.corpus import questions
from himga.data.locomo import load_locomo
from himga.embeddings import DEFAULT_MODEL, open_embedder
from himga.embeddings.base import unit_rows
from himga.embeddings.onnx import RUN_SIZE, OnnxEmbedder, default_threads

RUNS = 3
QUERIES = 100
TURNS = int(os.environ.get("HIMGA_BENCH_TURNS", "240"))
DEFAULT_LOCOMO = "../shared/data/locomo/locomo-dev.json"


def turns(locomo: str, count: int) -> list[str]:
    """`count` non-empty turns as `speaker: content`, taken evenly over the whole file."""
    every = [
        f"{message.role}: {message.content}"
        for sample in load_locomo(locomo)
        for session in sample.sessions
        for message in session.messages
        if message.content.strip()
    ]
    step = max(1, len(every) // count)
    return every[::step][:count]


def padded(embedder: OnnxEmbedder, texts: list[str]) -> np.ndarray:
    """Runs of RUN_SIZE texts in order, each padded to its run's longest, mean-pooled over
    the attention mask."""
    out = []
    prefixed = [embedder.passage_prefix + text for text in texts]
    for start in range(0, len(prefixed), RUN_SIZE):
        encodings = embedder._tokenizer.encode_batch(prefixed[start : start + RUN_SIZE])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in embedder._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = embedder._session.run(None, feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        out.append((hidden * weights).sum(axis=1) / weights.sum(axis=1))
    return unit_rows(np.concatenate(out))


def spread(values: list[float], fmt: str = "{:.3g}") -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{fmt.format(mid)} ({fmt.format(low)} to {fmt.format(high)})"


def bench(name: str, texts: list[str], asked: list[str]) -> None:
    opened = open_embedder(name)
    assert isinstance(opened, OnnxEmbedder)
    directory = opened.directory
    strategies: dict[str, Callable[[list[str]], np.ndarray]] = {}
    alone = OnnxEmbedder(directory, batching="alone", runs=1)
    by_length = OnnxEmbedder(directory, batching="by_length", runs=1)
    cores = max(1, min(4, len(os.sched_getaffinity(0))))
    many = OnnxEmbedder(directory, batching="alone", threads=cores, runs=1)
    side_by_side = OnnxEmbedder(directory, batching="alone", runs=cores)
    strategies["alone"] = alone.embed_passages
    strategies["by_length"] = by_length.embed_passages
    strategies["padded"] = lambda t: padded(alone, t)
    strategies[f"alone, {cores} threads"] = many.embed_passages
    strategies[f"alone, {cores} runs"] = side_by_side.embed_passages
    tokens = sum(len(alone.token_ids(alone.passage_prefix + t)) for t in texts)
    print(
        f"\n{name} ({alone.model_id}; card batching: {opened.batching}); {len(texts)} turns, "
        f"{tokens} tokens ({tokens / len(texts):.1f} a turn); default threads "
        f"{default_threads()}; {RUNS} runs"
    )
    seconds: dict[str, list[float]] = {s: [] for s in strategies}
    ratios: dict[str, list[float]] = {s: [] for s in strategies}
    drift: dict[str, float] = {}
    for run in range(RUNS):
        order = list(strategies)
        order = order[run % len(order) :] + order[: run % len(order)]  # who goes first rotates
        vectors: dict[str, np.ndarray] = {}
        for strategy in order:
            strategies[strategy](texts[:4])  # warm
            started = time.perf_counter()
            vectors[strategy] = strategies[strategy](texts)
            seconds[strategy].append(time.perf_counter() - started)
        for strategy in strategies:
            ratios[strategy].append(seconds["alone"][-1] / seconds[strategy][-1])
            difference = float(np.abs(vectors[strategy] - vectors["alone"]).max())
            drift[strategy] = max(drift.get(strategy, 0.0), difference)
    print("| strategy | turns/s | tokens/s | speed vs alone | largest difference from alone |")
    print("|---|---|---|---|---|")
    for strategy in strategies:
        per_turn = [len(texts) / s for s in seconds[strategy]]
        per_token = [tokens / s for s in seconds[strategy]]
        print(
            f"| {strategy} | {spread(per_turn)} | {spread(per_token)} | "
            f"{spread(ratios[strategy], '{:.2f}x')} | {drift[strategy]:.2g} |"
        )
    queries = {"default threads": alone, f"{cores} threads": many}
    p50s: dict[str, list[float]] = {label: [] for label in queries}
    for _ in range(RUNS):
        taken: dict[str, list[float]] = {label: [] for label in queries}
        for i, question in enumerate(asked):
            labels = list(queries)[i % 2 :] + list(queries)[: i % 2]
            for label in labels:
                best = float("inf")
                for _ in range(3):
                    started = time.perf_counter()
                    queries[label].embed_queries([question])
                    best = min(best, time.perf_counter() - started)
                taken[label].append(best)
        for label in queries:
            p50s[label].append(statistics.median(taken[label]) * 1e3)
    ratio = [a / b for a, b in zip(p50s["default threads"], p50s[f"{cores} threads"], strict=True)]
    print(
        f"one query ({len(asked)} questions, fastest of 3 each): p50 "
        + ", ".join(f"{label} {spread(p50s[label])} ms" for label in queries)
        + f"; default / {cores} threads {spread(ratio, '{:.2f}x')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", default=DEFAULT_LOCOMO)
    parser.add_argument("--models", default=DEFAULT_MODEL, help="comma-separated model names")
    args = parser.parse_args()
    texts = turns(args.locomo, TURNS)
    asked = questions(args.locomo, QUERIES)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name in args.models.split(","):
        bench(name, texts, asked)


if __name__ == "__main__":
    main()
