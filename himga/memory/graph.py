"""Graph: an approximate nearest-neighbour graph (usearch's HNSW) over a VectorIndex's vectors,
which proposes candidates for a search without a filter in a large index; the VectorIndex
re-scores them exactly from its float32 rows, so every cosine it returns is exact and only
which keys make the top k is approximate.

The graph stores its own int8 copy of each vector (about a quarter of the float32 row; usearch
scales a unit vector's components by 127). Its `fetch` candidates, re-scored in float32,
recall about what a float32 graph's would at the same expansion, in a third of its search time
(bench-hybrid, step 2b).

A removed key is removed from the graph too (usearch marks it removed; a search never returns
it); a corrected vector is removed and added again, so it is searched by its new value.

Not persisted: a store opened with at least `threshold` vectors builds its graph at open, from
the vectors it reads (see GraphOptions for what that costs).

Thread safety: the VectorIndex's rule (writes alone, searches together) is not enough for
usearch, whose Python search releases the GIL and re-reserves the index's per-thread search
contexts on every call (which its own text says no other search may overlap). So a Graph
searches under its own lock, one search at a time; a search is well under the exact scan's
time, and the rest of a Retrieve still runs in parallel.
"""

import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from himga.errors import InvalidArgument


@dataclass(frozen=True)
class GraphOptions:
    """When and how a VectorIndex keeps a graph. `threshold`: the number of vectors from which
    it does (below it every search is the exact scan; 0: never); `connectivity`, usearch's M:
    links per vector; `expansion_add` and `expansion_search`: the breadth of the search that
    places a vector and that answers a query; `fetch`: the candidates taken from the graph
    (at least the k asked) and re-scored exactly.

    Measured by `make bench-hybrid` (step 2b: recall@10 against the exact search over every
    LoCoMo development question, p50 beside the exact scan in the same run) on 100k real
    e5-small-v2 vectors of English sentences: with the LoCoMo turns added (a conversation
    inside a big store), this int8 graph at connectivity 32, expansion 512, fetch 64 recalls
    0.995 in 0.06x the exact scan's time (connectivity 16: 0.986); on the 100k sentences
    alone, which the questions are not about, it recalls only 0.96 (0.98 at expansion 1024,
    in 0.19x the exact time), and the one setting measured there at 0.99 or more (float32,
    connectivity 32, expansion_add 512, expansion 512: 0.9905, measured once outside the
    bench) takes 0.75x the exact time and minutes to build. So the graph is off by default
    (`threshold` 0): a store turns it on by option where its questions are about what it
    holds.

    Building it is what opening a store of `threshold` vectors or more costs on top: 12 s at
    100k with these settings on two cores in one run, 69 s in another on a busier machine
    (bench-hybrid, step 2b, "build s")."""

    threshold: int = 0
    connectivity: int = 32
    expansion_add: int = 128
    expansion_search: int = 512
    fetch: int = 64

    def __post_init__(self) -> None:
        for name in ("threshold",):
            if _bad(getattr(self, name), 0):
                raise InvalidArgument(name, "must be an integer, 0 (no graph) or more")
        for name in ("connectivity", "expansion_add", "expansion_search", "fetch"):
            if _bad(getattr(self, name), 2):
                raise InvalidArgument(name, "must be an integer, 2 or more")
        if self.expansion_search < self.fetch:
            raise InvalidArgument("expansion_search", "must be at least fetch")


PER_HIT = 4
"""Candidates taken per hit asked, at least: the int8 graph's own top 100 (the hybrid memory asks
the dense side for dense_depth = 100) holds only 0.90 of the exact top 100 on the real 100k with
the LoCoMo turns; its top 400 re-scored in float32 hold 0.992, in about 1 ms (measured once with
the settings below; bench-hybrid measures k = 10)."""


def _bad(value: object, least: int) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or value < least


class Graph:
    """The graph of one VectorIndex's vectors (unit float32 rows in, candidate keys out)."""

    def __init__(self, dimension: int, options: GraphOptions) -> None:
        from usearch.index import Index

        self._options = options
        self._index = Index(
            ndim=dimension,
            metric="ip",
            dtype="i8",
            connectivity=options.connectivity,
            expansion_add=options.expansion_add,
            expansion_search=options.expansion_search,
        )
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._index)

    @property
    def nbytes(self) -> int:
        """What usearch holds: its int8 vectors and its links."""
        return int(self._index.memory_usage)

    def add(self, keys: npt.NDArray[np.int64], rows: npt.NDArray[np.float32]) -> None:
        """Place `rows` under `keys` (keys not in the graph: a caller replacing a vector
        removes its key first)."""
        if len(keys):
            self._index.add(keys.astype(np.uint64), rows, threads=0)

    def remove(self, keys: npt.NDArray[np.int64]) -> None:
        if len(keys):
            self._index.remove(keys.astype(np.uint64))

    def candidates(self, query: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.int64]:
        """The keys of `fetch` or PER_HIT x `k` vectors near `query` (the more), approximately."""
        with self._lock:
            wanted = max(PER_HIT * k, self._options.fetch)
            found = self._index.search(query, wanted, threads=1)
        keys: npt.NDArray[np.int64] = np.asarray(found.keys, dtype=np.int64)
        return keys
