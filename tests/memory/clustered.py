"""Vectors that cluster as embeddings of text do, for the tests of the vector index's
approximate searches (test_graph, test_sketch): the data, the exact index beside an
approximate one, and the recall of one against the other."""

import numpy as np

from himga.memory.vectors import VectorIndex

DIMENSION = 384
BATCH = 500


def clustered(rng: np.random.Generator, count: int, centres: np.ndarray) -> np.ndarray:
    """Unit vectors around `centres` (as embeddings of text cluster by topic), with a shared
    mean direction (as e5's share one)."""
    rows = centres[rng.integers(0, len(centres), count)] + 0.35 * rng.standard_normal(
        (count, centres.shape[1])
    )
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered_data(seed: int, count: int, questions: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """`count` stored vectors and `questions` query vectors around the same 60 centres."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(DIMENSION)
    centres = common + rng.standard_normal((60, DIMENSION)) * 0.8
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    return clustered(rng, count, centres), clustered(rng, questions, centres)


def beside_exact(vectors: np.ndarray, approximate: VectorIndex) -> tuple[VectorIndex, VectorIndex]:
    """`vectors` added (keys 0, 1, ...) to an exact index and to `approximate`, in batches as a
    store adds them."""
    exact = VectorIndex(vectors.shape[1])
    keys = list(range(len(vectors)))
    for at in range(0, len(vectors), BATCH):
        exact.add(keys[at : at + BATCH], vectors[at : at + BATCH])
        approximate.add(keys[at : at + BATCH], vectors[at : at + BATCH])
    return exact, approximate


def recall(exact: VectorIndex, other: VectorIndex, queries: np.ndarray, k: int = 10) -> float:
    """The share of the exact top `k` that `other` finds, over `queries`."""
    hits = 0
    for q in queries:
        truth = set(exact.nearest(q, k)[0].tolist())
        hits += len(truth & set(other.nearest(q, k)[0].tolist()))
    return hits / (k * len(queries))
