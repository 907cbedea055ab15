"""Real e5 vectors at 100k for bench-hybrid: distinct English sentences of GCIDE (see
benchmarks/dictionary_text.py) embedded as passages by the real model, kept in the bench cache.

Why: how well an approximate (graph) index recalls depends on how the vectors cluster, and
vectors drawn from a Gaussian fit of real ones are less clustered than real ones; a graph's
settings are chosen on real vectors. The sentences are COUNT distinct ones of GCIDE's ~490k,
chosen by a seeded shuffle (the same every run) among those of at least MIN_WORDS plain words
(not a headword's bare list of forms) and at most MAX_WORDS words (a message's size: GCIDE's
longest quotations would take the model's whole window); about 226k qualify. Embedding them
takes ~10 min on two quiet cores, once: the matrix is cached in HIMGA_BENCH_CACHE under the
model id and a hash of the texts, in chunks, so an interrupted run resumes where it stopped.

    python -m benchmarks.real_vectors    # embeds (or loads) the 100k and says where they are
"""

from __future__ import annotations

import hashlib
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.dictionary_text import cache_dir, gcide_text, sentences
from himga.embeddings import Embedder

COUNT = 100_000
MIN_WORDS = 6
MAX_WORDS = 40
_WORD = re.compile(r"^[A-Za-z][a-z'-]*[,.;:!?]?$")
CHUNK = 5_000
_SEED = 20261202


def real_texts(count: int = COUNT) -> list[str]:
    """`count` distinct GCIDE sentences of MIN_WORDS plain words to MAX_WORDS words, the same
    every run."""
    found = sorted(
        {
            s
            for s in sentences(gcide_text())
            if len(s.split()) <= MAX_WORDS
            and sum(1 for word in s.split() if _WORD.match(word)) >= MIN_WORDS
        }
    )
    random.Random(_SEED).shuffle(found)
    if len(found) < count:
        raise SystemExit(f"GCIDE holds {len(found)} such sentences, fewer than {count}")
    return found[:count]


def _path(model_id: str, texts: list[str]) -> Path:
    digest = hashlib.sha256()
    digest.update(model_id.encode())
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\n")
    safe = "".join(c if c.isalnum() else "-" for c in model_id)
    return cache_dir() / f"real-vectors-{safe}-{len(texts)}-{digest.hexdigest()[:16]}.npy"


def real_vectors(embedder: Embedder, count: int = COUNT, say: bool = True) -> np.ndarray:
    """The (count x dimension) float32 passage vectors of `real_texts(count)` by `embedder`
    from the cache or embedded now (and cached)."""
    texts = real_texts(count)
    path = _path(embedder.model_id, texts)
    if path.exists():
        vectors = np.load(path)
        if vectors.shape[0] == count:
            return np.asarray(vectors, dtype=np.float32)
    parts = path.with_suffix(".parts")
    parts.mkdir(parents=True, exist_ok=True, mode=0o700)
    chunks = []
    start = time.perf_counter()
    for at in range(0, count, CHUNK):
        part = parts / f"{at:08d}.npy"
        if part.exists():
            chunks.append(np.load(part))
            continue
        found = embedder.embed_passages(texts[at : at + CHUNK])
        chunk = np.asarray(found, dtype=np.float32)
        np.save(part.with_suffix(".tmp.npy"), chunk)
        part.with_suffix(".tmp.npy").chmod(0o600)  # private to its owner, as the cache is
        part.with_suffix(".tmp.npy").replace(part)
        chunks.append(chunk)
        if say:
            rate = (at + len(chunk)) / (time.perf_counter() - start)
            print(f"(real vectors: {at + len(chunk):,} of {count:,}, {rate:.0f}/s)", flush=True)
    vectors = np.concatenate(chunks)
    np.save(path.with_suffix(".tmp.npy"), vectors)
    path.with_suffix(".tmp.npy").chmod(0o600)
    path.with_suffix(".tmp.npy").replace(path)
    for part in parts.iterdir():
        part.unlink()
    parts.rmdir()
    return vectors


def main() -> None:
    from himga.embeddings import DEFAULT_MODEL, open_embedder

    embedder = open_embedder(DEFAULT_MODEL)
    vectors = real_vectors(embedder)
    print(f"{vectors.shape[0]:,} x {vectors.shape[1]} real vectors of {embedder.model_id}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
