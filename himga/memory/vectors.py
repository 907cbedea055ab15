"""VectorIndex: the in-process index of a memory's message vectors, searched by cosine.

Vectors sit in one contiguous float32 matrix (grown by doubling), one row per key (a message's
row number); a dictionary maps a key to its row, and a removal moves the last row into the
freed one, so the stored rows are always the first `len(index)`. A search is an exact scan:
one matrix-vector product over the stored rows, or over the rows a filter admits when those are
few (a loop in C for a small scan, himga.memory._exact, BLAS for a large one). Vectors are
normalised on the way in, so a dot product is their cosine.

Given SketchOptions, an index holding at least their `threshold` vectors also keeps a 4-bit
sketch of each (himga.memory.sketch): a search without a filter then scans the sketches (in C,
an eighth of the float32 rows' bytes), takes the best of them as candidates and re-scores
those exactly from the rows, read where they lie (its cosines exact, its top k approximate:
recall measured in bench-hybrid). On a large index the scan first reads each vector's 2-bit
codes (half the sketches' bytes) and ranks by the sketches only the rows best by those
(SketchOptions.kept).
Given GraphOptions, an index holding at least their `threshold` vectors keeps a graph of them
instead (himga.memory.graph, built when the index first reaches the threshold),
whose candidates are re-scored the same way. A filtered search stays exact.

stats() is exact and costs no scan: the index keeps the sum of its vectors and the sum of their
outer products (in fixed point, as integers, so that a delete takes away exactly what its
vector added), from which the mean and variance of any query's cosine follow; their float64
conversion is made once after each change, not by every query.

A search that runs beside other work (a hybrid search's keyword side) may scan the sketches as a
SharedNearest instead (`shared_nearest`): the scan starts on one thread and any other that is
done with its own work joins it (`share`), so a scan left alone on one core gets a second as
soon as the other work ends; on a machine with more cores, helpers join it from the start.

Not safe for a write beside any other call: the memory's lock orders writes; searches, stats
and lookups change nothing, so any number may run together.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from himga.memory._exact import best_of, dots, moments, units
from himga.memory._sketch import SharedScan, best_rows
from himga.memory.graph import Graph, GraphOptions
from himga.memory.sketch import (
    CHUNK,
    REFIT,
    Sketch,
    SketchOptions,
    coarse_move,
    coarse_place,
    coarse_plane,
    coarse_rows,
)

Floats = npt.NDArray[np.float32]
Keys = npt.NDArray[np.int64]
T = TypeVar("T")

_INITIAL_CAPACITY = 64
# Up to this many rows a scan is a single-threaded loop in C: BLAS would wake its threads
# for it, and on a busy machine waiting for them costs more than the scan (bench-hybrid).
_BLAS_ROWS = 32_768
# A scan of the sketches of at least this many rows is shared by _SCAN_THREADS threads: it is
# bound by memory, which one core does not exhaust (4-bit sketches of the real e5 vectors on
# these two cores, a one-off script: two threads took 0.76x the time of one at 100k rows, 0.68x
# at 200k, 0.80x at 1M; the threshold itself was chosen with the int8 sketches, 0.9x at 32k).
_THREADED_ROWS = 65_536
_SCAN_THREADS = max(1, min(4, len(os.sched_getaffinity(0))))
# A filter admitting at most this share of the stored vectors is searched over its own rows
# (a gather); a wider one is searched by the full scan, its best rows checked against it.
_GATHER_SHARE = 1 / 16


class VectorIndex:
    """Unit vectors of one dimension by integer key, searched by cosine: exactly, or from the
    candidates of its sketches or its graph (see the module's text)."""

    def __init__(
        self,
        dimension: int,
        graph: GraphOptions | None = None,
        sketch: SketchOptions | None = None,
    ) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise ValueError(f"dimension: must be a positive integer, got {dimension!r}")
        self._dimension = dimension
        self._graph_options = graph
        self._graph: Graph | None = None
        self._sketch_options = sketch if sketch is not None and sketch.threshold else None
        self._sketch: Sketch | None = None  # the fit the sketches were made by
        self._sketches: npt.NDArray[np.uint8] | None = None  # one row per stored row
        # their 2-bit codes (coarse_plane), kept where the first stage may run (_codes_if_due)
        self._coarse: npt.NDArray[np.uint8] | None = None
        self._fitted = 0  # vectors stored at the last fit
        self._changed = 0  # vectors added or removed since
        self._matrix: Floats = np.empty((_INITIAL_CAPACITY, dimension), dtype=np.float32)
        self._keys: Keys = np.empty(_INITIAL_CAPACITY, dtype=np.int64)
        self._slot: dict[int, int] = {}
        # The moments of the stored vectors in fixed point (_moments): integers, so a vector
        # removed takes away exactly what it added, and the statistics of a set of vectors are
        # the same however it came to be (stored afresh, or what was left by deletes).
        self._sum = np.zeros(dimension, dtype=np.int64)
        self._outer = np.zeros((dimension, dimension), dtype=np.int64)
        # The same moments as float64, made from the integers by the first stats() after a
        # change (None until then): every query would otherwise convert the matrix anew.
        self._floats: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None

    @property
    def dimension(self) -> int:
        """The length of every stored vector."""
        return self._dimension

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, key: object) -> bool:
        return key in self._slot

    @property
    def nbytes(self) -> int:
        """Bytes the index holds in arrays (the matrix at its capacity, keys, moments); the key
        dictionary's own size is not counted."""
        held = self._matrix.nbytes + self._keys.nbytes + self._sum.nbytes + self._outer.nbytes
        held += self._sketches.nbytes if self._sketches is not None else 0
        held += self._coarse.nbytes if self._coarse is not None else 0
        return held + (self._graph.nbytes if self._graph is not None else 0)

    @property
    def graphed(self) -> bool:
        """Whether a search without a filter goes through the graph now."""
        return self._graph is not None and len(self._slot) >= self._threshold

    @property
    def sketched(self) -> bool:
        """Whether a search without a filter scans the sketches now (and not the graph)."""
        return self._sketches is not None and not self.graphed

    @property
    def _threshold(self) -> int:
        """The count from which the index keeps a graph (0: never)."""
        return self._graph_options.threshold if self._graph_options is not None else 0

    # --- writes ----------------------------------------------------------------------------

    def add(self, keys: Sequence[int] | Keys, vectors: npt.ArrayLike) -> None:
        """Store `vectors` (n x dimension) under `keys`, replacing the vectors of keys already
        stored; a key given twice keeps its last vector. Refused whole (nothing stored) when a
        vector has the wrong length, a non-finite value or no length at all."""
        key_list = _key_list(keys)
        rows = self._checked(vectors, len(key_list))
        if not key_list:
            return
        last: dict[int, int] = {}
        for i, key in enumerate(key_list):
            last[key] = i
        if len(last) < len(key_list):
            order = list(last.values())
            key_list = list(last)
            rows = rows[order]
        self._remove_present([k for k in key_list if k in self._slot])
        n = len(self._slot)
        self._reserve(n + len(key_list))
        self._matrix[n : n + len(key_list)] = rows
        self._keys[n : n + len(key_list)] = key_list
        if self._sketches is not None and self._sketch is not None:
            coded = self._coarse is not None
            self._sketches[n : n + len(key_list)], coarse = self._sketch.of(rows, coded)
            if self._coarse is not None and coarse is not None:
                coarse_place(self._coarse, n, coarse)
        for offset, key in enumerate(key_list):
            self._slot[key] = n + offset
        added, outer = _moments(rows)
        self._sum += added
        self._outer += outer
        self._floats = None
        self._changed += len(key_list)
        self._fit_if_due()
        if self._graph is not None:
            self._graph.add(np.asarray(key_list, dtype=np.int64), rows)
        elif self._graph_options is not None and 0 < self._threshold <= len(self._slot):
            self._graph = Graph(self._dimension, self._graph_options)
            self._graph.add(self._keys[: len(self._slot)], self._matrix[: len(self._slot)])

    def remove(self, keys: Sequence[int]) -> None:
        """Drop the vectors of `keys`; a key without one is ignored."""
        self._remove_present([k for k in dict.fromkeys(_key_list(keys)) if k in self._slot])

    def _remove_present(self, keys: list[int]) -> None:
        if not keys:
            return
        slots = [self._slot[k] for k in keys]
        taken, outer = _moments(self._matrix[slots])
        self._sum -= taken
        self._outer -= outer
        self._floats = None
        self._changed += len(keys)
        if self._graph is not None:
            self._graph.remove(np.asarray(keys, dtype=np.int64))
        sketches, coarse = self._sketches, self._coarse
        for key in keys:
            slot = self._slot.pop(key)
            last = len(self._slot)  # the row that moves into the freed one
            if slot != last:
                moved = int(self._keys[last])
                self._matrix[slot] = self._matrix[last]
                self._keys[slot] = moved
                self._slot[moved] = slot
                if sketches is not None:
                    sketches[slot] = sketches[last]
                if coarse is not None:
                    coarse_move(coarse, slot, last)
        self._fit_if_due()

    def _fit_if_due(self) -> None:
        """Fit the sketches' axes anew (and make every sketch again) when the index first holds
        the threshold, and when REFIT times as many vectors changed since the last fit as it
        held then; drop them when it falls below half the threshold."""
        options = self._sketch_options
        if options is None:
            return
        n = len(self._slot)
        if self._sketches is not None and n < options.threshold // 2:
            self._sketch = self._sketches = self._coarse = None
            self._fitted = self._changed = 0
            return
        due = self._changed >= REFIT * self._fitted if self._sketches is not None else True
        if n >= options.threshold and due:
            mean = self._sum.astype(np.float64) / (_FIXED * n)
            second = self._outer.astype(np.float64) / (_FIXED * _FIXED * n)
            sketch = Sketch(mean, second - np.outer(mean, mean))
            self._sketch = sketch
            self._sketches, self._coarse = self._planes(sketch, self._coarse is not None)
            self._fitted, self._changed = n, 0
        self._codes_if_due()

    def _codes_if_due(self) -> None:
        """Make the 2-bit codes when the index first holds the rows from which the first stage
        runs (SketchOptions.coarse_from), and drop them when it falls below half of those."""
        options = self._sketch_options
        least = options.coarse_from() if options is not None else None
        n = len(self._slot)
        if self._sketch is None or least is None or n < least // 2:
            self._coarse = None
        elif self._coarse is None and n >= least:
            self._coarse = self._planes(self._sketch, True)[1]

    def _planes(
        self, sketch: Sketch, codes: bool
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8] | None]:
        """Every stored row's sketch by `sketch`, and with `codes` its 2-bit codes (at the
        index's capacity), made CHUNK rows at a time."""
        n = len(self._slot)
        sketches = np.empty((len(self._keys), sketch.length // 2), dtype=np.uint8)
        plane = coarse_plane(len(self._keys), sketch.length) if codes else None
        for start in range(0, n, CHUNK):
            stop = min(n, start + CHUNK)
            sketches[start:stop], coarse = sketch.of(self._matrix[start:stop], codes)
            if plane is not None and coarse is not None:
                coarse_place(plane, start, coarse)
        return sketches, plane

    def _reserve(self, count: int) -> None:
        capacity = len(self._keys)
        if count <= capacity:
            return
        while capacity < count:
            capacity *= 2
        n = len(self._slot)
        matrix = np.empty((capacity, self._dimension), dtype=np.float32)
        matrix[:n] = self._matrix[:n]
        keys = np.empty(capacity, dtype=np.int64)
        keys[:n] = self._keys[:n]
        self._matrix, self._keys = matrix, keys
        if self._sketches is not None:
            sketches = np.empty((capacity, self._sketches.shape[1]), dtype=np.uint8)
            sketches[:n] = self._sketches[:n]
            self._sketches = sketches
        if self._coarse is not None:
            coarse = coarse_plane(capacity, self._coarse.shape[1] * 16)
            coarse[: len(self._coarse)] = self._coarse
            self._coarse = coarse

    def _checked(self, vectors: npt.ArrayLike, count: int) -> Floats:
        """`count` vectors of this index's dimension, each scaled to length 1 in C
        (himga.memory._exact.units); refused, naming the rule, when one has no direction."""
        rows = np.ascontiguousarray(vectors, dtype=np.float32)
        if rows.ndim != 2 or rows.shape != (count, self._dimension):
            raise ValueError(
                f"vectors: must be {count} x {self._dimension} (one row per key), "
                f"got shape {rows.shape}"
            )
        made = units(rows, self._dimension)
        if made is None and not np.isfinite(rows).all():
            raise ValueError("vectors: every value must be finite (a NaN or infinity was given)")
        if made is None:
            raise ValueError("vectors: a vector of length 0 has no direction (no cosine)")
        unit: Floats = np.frombuffer(made, dtype=np.float32).reshape(rows.shape)
        return unit

    def _query(self, query: npt.ArrayLike) -> Floats:
        unit: Floats = self._checked(np.asarray(query, dtype=np.float32).reshape(1, -1), 1)[0]
        return unit

    # --- reads -----------------------------------------------------------------------------

    def similarities(self, query: npt.ArrayLike, keys: Sequence[int] | Keys | Gathered) -> Floats:
        """The cosine of `query` with each key's vector, in the keys' order; NaN for a key
        without a vector. `keys` may be given as their rows gathered earlier (`gathered`)."""
        q = self._query(query)
        found = keys if isinstance(keys, Gathered) else self.gathered(keys)
        out = np.full(found.count, np.nan, dtype=np.float32)
        if found.held.size:
            out[found.held] = _scores(found.rows, q)
        return out

    def gathered(self, keys: Sequence[int] | Keys) -> Gathered:
        """A copy of `keys`' rows, to be scored later by `similarities` (valid while the index
        is unchanged: the caller's to know)."""
        key_list = _key_list(keys)
        slot = self._slot.get
        slots = np.fromiter((slot(k, -1) for k in key_list), dtype=np.intp, count=len(key_list))
        held = np.flatnonzero(slots >= 0)
        return Gathered(len(key_list), held, self._matrix[slots[held]])

    def nearest(
        self,
        query: npt.ArrayLike,
        k: int,
        allowed: npt.ArrayLike | None = None,
    ) -> tuple[Keys, Floats]:
        """The (at most) `k` keys whose vectors are nearest `query`, with their cosines, best
        first (ties by lower key). `allowed`: the sorted keys a request's filters admit (None:
        every key). Exact, but for a search without a filter while `graphed` or `sketched`:
        then the keys are the best of the graph's or the sketches' candidates (their cosines
        exact), the sketches' scan shared out to a few threads past _THREADED_ROWS."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k: must be a non-negative integer, got {k!r}")
        q = self._query(query)
        n = len(self._slot)
        if k == 0 or n == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if allowed is None and self._graph is not None and self.graphed:
            found = self._graph.candidates(q, k).tolist()
            slots = [s for s in map(self._slot.get, found) if s is not None]
            if len(slots) >= min(k, n):
                return self._best_of(q, slots, k)
        if allowed is None and self._sketches is not None and self._sketch is not None:
            assert self._sketch_options is not None
            wanted = self._sketch_options.wanted(k)
            if wanted < n:
                rows = np.frombuffer(
                    best_rows(
                        self._sketches[:n],
                        self._sketch.weights(q),
                        wanted,
                        _threads(n),
                        **self._first_stage(n, wanted),
                    ),
                    dtype=np.int32,
                )
                return self._best_of(q, rows, k)
        if allowed is None:
            return self._best(self._keys[:n], _scores(self._matrix[:n], q), k)
        admitted = np.asarray(allowed, dtype=np.int64).reshape(-1)
        if len(admitted) > 1 and (admitted[1:] < admitted[:-1]).any():
            admitted = np.sort(admitted)  # the interface asks for sorted keys; cheap to check
        if len(admitted) <= n * _GATHER_SHARE:
            slots = [s for s in map(self._slot.get, admitted.tolist()) if s is not None]
            return self._best_of(q, slots, k)
        return self._best_admitted(q, k, admitted)

    def shared_nearest(self, query: npt.ArrayLike, k: int) -> SharedNearest | None:
        """`nearest(query, k)` as a scan of the sketches that threads share (SharedNearest);
        None where that search would not scan them (too few vectors, the graph in use)."""
        q = self._query(query)
        n = len(self._slot)
        if self._sketches is None or self._sketch is None or k <= 0 or self.graphed:
            return None
        assert self._sketch_options is not None
        wanted = self._sketch_options.wanted(k)
        if wanted >= n:
            return None
        scan = SharedScan(
            self._sketches[:n],
            self._sketch.weights(q),
            wanted,
            **self._first_stage(n, wanted),
        )
        return SharedNearest(self, q, k, scan, max(0, _threads(n) - 2))

    def _first_stage(self, n: int, wanted: int) -> dict[str, Any]:
        """The scan's first stage arguments (best_rows, SharedScan) for `wanted` of `n` rows."""
        if self._coarse is None or self._sketch_options is None:
            return {}
        return {
            "coarse": coarse_rows(self._coarse, n),
            "keep": self._sketch_options.kept(n, wanted),
        }

    def _best_of(
        self, q: Floats, rows: npt.NDArray[np.int32] | list[int], k: int
    ) -> tuple[Keys, Floats]:
        """The best `k` of `rows` (the sketches' or the graph's candidates, or a filter's rows),
        by their exact cosines with `q`, read where they lie (himga.memory._exact)."""
        n = len(self._slot)  # a row past the stored ones is refused
        chosen = np.asarray(rows, dtype=np.int32)
        keys, cosines = best_of(self._matrix[:n], self._keys[:n], chosen, q, k)
        return np.frombuffer(keys, dtype=np.int64), np.frombuffer(cosines, dtype=np.float32)

    def _best_admitted(self, q: Floats, k: int, admitted: Keys) -> tuple[Keys, Floats]:
        """The full scan, then its best rows checked against `admitted` (sorted), widening the
        look until `k` are admitted or every row was looked at."""
        n = len(self._slot)
        scores = _scores(self._matrix[:n], q)
        keys = self._keys[:n]
        share = max(len(admitted) / n, 1e-9)
        look = min(n, max(4 * k, int(2 * k / share)))
        while True:
            top = np.argpartition(-scores, look - 1)[:look] if look < n else np.arange(n)
            found = _members(keys[top], admitted)
            if found.sum() >= k or look >= n:
                top = top[found]
                return self._best(keys[top], scores[top], k)
            look = min(n, look * 4)

    @staticmethod
    def _best(keys: Keys, scores: Floats, k: int) -> tuple[Keys, Floats]:
        if len(keys) > k:
            # ties at the k-th score stay in: the final sort breaks them by key
            kth = np.partition(-scores, k - 1)[k - 1]
            keep = np.flatnonzero(-scores <= kth)
            keys, scores = keys[keep], scores[keep]
        order = np.lexsort((keys, -scores))[:k]
        return keys[order].copy(), scores[order].astype(np.float32)

    def stats(self, query: npt.ArrayLike) -> tuple[float, float]:
        """Mean and standard deviation of `query`'s cosine over every stored vector, exact
        (from the kept moments, no scan); (0.0, 0.0) for an empty index."""
        q = self._query(query)
        n = len(self._slot)
        if n == 0:
            return 0.0, 0.0
        floats = self._floats
        if floats is None:  # searches may share the index: each makes the same arrays
            floats = self._floats = (self._sum.astype(np.float64), self._outer.astype(np.float64))
        along, across = moments(*floats, q)  # in C: no BLAS threads, no numpy calls
        mean = along / (_FIXED * n)
        square = across / (_FIXED * _FIXED * n)
        return mean, float(np.sqrt(max(square - mean * mean, 0.0)))


@dataclass(frozen=True, slots=True)
class SharedNearest:
    """A search for the `k` nearest vectors to `q` whose scan of the sketches threads share
    (VectorIndex.shared_nearest): `share`, the part of the thread that begins it, takes part in
    the scan until no row is left and then waits for every part that took rows, helping with
    what follows should it come soon (the second stage and the exact re-scoring, shared: the
    scan's own text), so that once it has returned nothing reads the index (a caller given up
    on the answer waits for that thread alone); `nearest` takes part too, waits for every part,
    and answers as VectorIndex.nearest does. The index must not change until every part has
    ended.

    `helpers`: how many more threads the scan should have, `help` being their part, where the
    machine has the cores for more than the two that begin and join it (VectorIndex.nearest's
    own scan takes up to _SCAN_THREADS). A helper that starts once every row is taken scans
    nothing, so one started late costs no wait and reads nothing."""

    index: VectorIndex
    q: Floats
    k: int
    scan: SharedScan
    helpers: int = 0

    def share(self, then: Callable[[], T] | None = None) -> T | None:
        """The part of the thread that begins the scan; `then`: what else that thread reads of
        the index once no row is left to take, while the other parts end theirs: its answer
        (None without it)."""
        self.scan.share()
        try:
            return then() if then is not None else None
        finally:
            self.scan.wait()  # every part, the helpers' and the caller's, ended (it cannot fail)

    def help(self) -> None:
        self.scan.share()

    def nearest(self) -> tuple[Keys, Floats]:
        n = len(self.index)  # the rows the sketches were scanned of
        keys, cosines = self.scan.nearest(
            self.index._matrix[:n], self.index._keys[:n], self.q, self.k
        )
        return np.frombuffer(keys, dtype=np.int64), np.frombuffer(cosines, dtype=np.float32)


@dataclass(frozen=True, slots=True)
class Gathered:
    """Some keys' rows copied out of a VectorIndex (VectorIndex.gathered): how many keys, the
    places among them of those with a vector, and those vectors' rows."""

    count: int
    held: npt.NDArray[np.intp]
    rows: Floats


_FIXED = 1 << 20
"""The moments' fixed point: a unit vector's components to 2**-21 (stats to well under 1e-6). A
product of two is below 2**40, so float64 sums it exactly over a chunk of up to _CHUNK rows,
and int64 over up to 2**23 vectors (8M; a namespace's vectors at float32 would be 12 GB)."""
_CHUNK = 1 << 12


def _moments(rows: Floats) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The sum and the sum of outer products of `rows`, in fixed point, exactly."""
    fixed = np.rint(rows.astype(np.float64) * _FIXED)
    total = fixed.sum(axis=0).astype(np.int64)
    outer = np.zeros((rows.shape[1], rows.shape[1]), dtype=np.int64)
    for start in range(0, len(fixed), _CHUNK):
        chunk = fixed[start : start + _CHUNK]
        outer += (chunk.T @ chunk).astype(np.int64)  # exact: integers below 2**53
    return total, outer


def _threads(rows: int) -> int:
    """The threads a scan of `rows` sketches takes: _SCAN_THREADS past _THREADED_ROWS, else one."""
    return _SCAN_THREADS if rows >= _THREADED_ROWS else 1


def _scores(rows: Floats, q: Floats) -> Floats:
    """The dot product of each of `rows` (C-ordered) with `q`: as the candidates' cosines are
    (himga.memory._exact), but for a scan of more than _BLAS_ROWS."""
    if len(rows) <= _BLAS_ROWS:
        return np.frombuffer(dots(rows, None, q), dtype=np.float32)
    large: Floats = rows @ q
    return large


def _key_list(keys: Sequence[int] | npt.ArrayLike) -> list[int]:
    array = np.asarray(keys)
    if array.size == 0:
        return []
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"keys: must be a sequence of integers, got {array.dtype} {array.shape}")
    return [int(k) for k in array.tolist()]


def _members(values: Keys, sorted_keys: Keys) -> npt.NDArray[np.bool_]:
    """Which of `values` are in `sorted_keys` (ascending)."""
    if len(sorted_keys) == 0:
        return np.zeros(len(values), dtype=np.bool_)
    at = np.searchsorted(sorted_keys, values)
    at[at == len(sorted_keys)] = 0
    found: npt.NDArray[np.bool_] = sorted_keys[at] == values
    return found
