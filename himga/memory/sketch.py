"""Sketch: a 4-bit copy of each of a VectorIndex's vectors along their principal axes, scanned
in C (himga.memory._sketch) to propose the candidates of a search without a filter in a large
index; the VectorIndex re-scores them exactly from its float32 rows, so every cosine it returns
is exact and only which keys make the top k is approximate.

A sketch holds a vector's coordinates along the principal axes of the stored vectors (the
eigenvectors of their covariance, from the index's exact moments; every axis is kept, the
count rounded up to a multiple of BLOCK with axes of zeros), less their mean, each divided by
its scale (one of LEVELS - 1 steps across CLIP standard deviations of that coordinate each
side of its mean), shifted to the middle level and rounded to one of the LEVELS, clipped. The
query's weights are its own coordinates along the same axes times the scales, rounded to int8;
their dot product with a sketch orders the rows as the cosine does (the mean's and the middle
level's shares are the same for every row), up to the rounding. Scaling each axis by its own
spread is what makes 4 bits enough: e5's components are small and unequal, and a fixed step
would leave a level or two to most of them. A sketch is an eighth of the float32 row's bytes,
so a scan reads an eighth of the memory. (Keeping fewer axes than all, 8 bits instead of 4,
and other loops were measured too; the README says how they fell short.)

Each vector also has 2-bit codes (`coarse`), its levels taken to four, one standard deviation
apart (COARSE), so that the query's weights serve both: on a large index the scan first reads
those, half the bytes, keeps its best rows (SketchOptions.kept) and ranks only them by their
sketches. The C scan reads the codes in blocks of LANES rows (its text gives the layout);
`coarse_place` puts rows' codes there.

The axes are fitted when the index first reaches the options' threshold, and again each time
REFIT times as many vectors were added or removed since the last fit as were stored then (the
sketches are then made anew from the float32 rows, CHUNK rows at a time): O(n) work each time
the index grows eightfold, under the writer's lock (0.6 to 0.8 s at 264k vectors on two cores,
one write's wait; a one-off script). A fit holds up well: sketches of 101k real e5 vectors
made by the fit of their first 33k recalled 1.0000 of the exact top 10 and 0.9999 of the top
100 (every development question, a one-off script; 1.0000 when the LoCoMo turns were among
those 33k, not after them). Nothing is persisted: a store opened large fits once it holds the
threshold and refits as its vectors are read in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from himga.errors import InvalidArgument
from himga.memory._sketch import LANES, loops, weights

LEVELS = 16
"""The values a sketch's coordinate takes (4 bits: two coordinates a byte)."""
CLIP = 3.0
"""Standard deviations of a coordinate, each side of its mean, that the LEVELS span; beyond
them it is clipped."""
REFIT = 7
"""The axes are fitted again once this many times as many vectors changed as were fitted."""
CHUNK = 1 << 14
"""Rows sketched at a time when the axes are fitted anew (bounds the temporary arrays)."""
BLOCK = 64
"""A sketch's coordinates are a multiple of this (the C scan's step: 32 bytes)."""
COARSE = np.array([0] * 6 + [1] * 2 + [2] * 2 + [3] * 6, dtype=np.uint8)
"""Each of the LEVELS' 2-bit code: a level is 0.4 standard deviations, so the codes 0 to 3 are
about -1.5, -0.5, 0.5 and 1.5 of them, the level's sixteen steps kept in their proportion."""
COARSE_SHARE = 64
"""The first stage keeps at least one row in this many (SketchOptions.kept)."""
COARSE_FROM = {"avx512": 65_536, "avx2": 262_144}
"""The rows from which the first stage runs, by the scan's loop (the best the processor has):
where it was measured faster than the sketches' scan alone (benchmarks/README.md, the 2-bit
first stage: with AVX2 0.98x of its time at 100k rows on one thread but 1.13x on two, 0.86x at
250k). The portable loop, never: its 2-bit ranking took 1.3x the sketches' time at every size."""


@dataclass(frozen=True)
class SketchOptions:
    """When and how a VectorIndex keeps sketches. `threshold`: the number of vectors from which
    a search without a filter scans them (below it, and with 0 always, the search is exact);
    `fetch` and `per_hit`: the candidates taken, the more of `fetch` and `per_hit` times the
    hits asked, re-scored exactly in float32; `coarse`: the rows the 2-bit first stage keeps at
    least (`kept`; 0: no first stage).

    The defaults were measured by `make bench-hybrid` (step 2b: recall against the exact search
    over every LoCoMo development question, on 100k real e5-small-v2 vectors of GCIDE
    sentences, alone and with the LoCoMo turns added); the README has the figures."""

    threshold: int = 32_768
    fetch: int = 200
    per_hit: int = 4
    coarse: int = 4_096

    def __post_init__(self) -> None:
        if _bad(self.threshold, 0):
            raise InvalidArgument("threshold", "must be an integer, 0 (always exact) or more")
        if _bad(self.coarse, 0):
            raise InvalidArgument("coarse", "must be an integer, 0 (no first stage) or more")
        for name in ("fetch", "per_hit"):
            if _bad(getattr(self, name), 1):
                raise InvalidArgument(name, "must be an integer, 1 or more")

    def wanted(self, k: int) -> int:
        """The candidates a search for `k` hits takes."""
        return max(self.fetch, self.per_hit * k)

    def coarse_from(self) -> int | None:
        """The rows from which the first stage runs on this processor (COARSE_FROM for its best
        loop); None where it never does (there, or `coarse` 0): the index keeps 2-bit codes
        only from these rows on."""
        return COARSE_FROM.get(loops()[-1]) if self.coarse else None

    def kept(self, rows: int, wanted: int) -> int:
        """The rows the first stage keeps of `rows` for `wanted` candidates: the most of
        `coarse`, a COARSE_SHARE-th of the rows and `wanted`; 0 (no first stage) where that
        is more than a sixteenth of the rows, or below `coarse_from`."""
        kept = max(self.coarse, rows // COARSE_SHARE, wanted)
        least = self.coarse_from()
        return kept if least is not None and rows >= least and 16 * kept <= rows else 0


def _bad(value: object, least: int) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or value < least


class Sketch:
    """The axes, mean and scales of one fit, which turn float32 rows into sketches and a query
    into weights."""

    def __init__(self, mean: npt.NDArray[np.float64], covariance: npt.NDArray[np.float64]) -> None:
        dimension = len(mean)
        self.length = -(-dimension // BLOCK) * BLOCK  # coordinates; a sketch is half as many bytes
        variances, axes = np.linalg.eigh(covariance)
        order = np.argsort(-variances, kind="stable")
        self.axes = np.zeros((self.length, dimension), dtype=np.float32)  # one axis a row
        self.axes[:dimension] = axes[:, order].T
        spread = np.sqrt(np.maximum(variances[order], 0.0))
        # a level is a scale: LEVELS - 1 of them span CLIP standard deviations each side; an
        # axis along which the vectors never vary (and the padding) gets a scale of 1
        self.scales = np.ones(self.length, dtype=np.float32)
        self.scales[:dimension] = np.where(spread > 0, 2 * CLIP * spread / (LEVELS - 1), 1.0)
        self.mean = mean.astype(np.float32)
        # a row's levels in one product: (row - mean) @ axes.T / scales + the middle level, the
        # division folded in
        self._scaled = np.ascontiguousarray((self.axes / self.scales[:, None]).T)
        self._offset = self.mean @ self._scaled - (LEVELS - 1) / 2
        # a query's weights in one product: each axis times its scale (`weights`)
        self._weighing = np.ascontiguousarray(self.axes * self.scales[:, None])

    def of(
        self, rows: npt.NDArray[np.float32], codes: bool = True
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8] | None]:
        """The sketches of unit float32 `rows` (n x dimension): n x length / 2 bytes, each
        BLOCK of coordinates as the C scan reads it (its first half in the low 4 bits of its
        32 bytes, its second half in the high 4); and, with `codes`, their 2-bit codes, n x
        length / 4 bytes (each row's part of its block, as coarse_place takes it: byte i of
        each four bytes g holds the codes of coordinates 16g + 4k + i in its bits 2k and
        2k + 1), else None."""
        coordinates = rows @ self._scaled
        coordinates -= self._offset
        np.rint(coordinates, out=coordinates)
        np.clip(coordinates, 0, LEVELS - 1, out=coordinates)
        levels = coordinates.astype(np.uint8)
        blocks = levels.reshape(len(rows), -1, 2, BLOCK // 2)
        high = blocks[:, :, 1, :] << np.uint8(4)
        sketches: npt.NDArray[np.uint8] = (blocks[:, :, 0, :] | high).reshape(len(rows), -1)
        if not codes:
            return sketches, None
        pairs = COARSE[levels].reshape(len(rows), -1, 4, 4)  # row, group, k, byte
        for k in range(1, 4):
            pairs[:, :, k] <<= np.uint8(2 * k)
        coarse: npt.NDArray[np.uint8] = np.bitwise_or.reduce(pairs, axis=2).reshape(len(rows), -1)
        return sketches, coarse

    def weights(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
        """The int8 weights of unit `query` (float32): its coordinates along the axes times
        their scales, scaled so the greatest is 127 (no product with a sketch can then pass
        int32: the C scan's text) and rounded; all 0 should every coordinate be. In C
        (himga.memory._sketch.weights), on the search's path."""
        found: npt.NDArray[np.int8] = np.frombuffer(weights(self._weighing, query), dtype=np.int8)
        return found


def coarse_plane(capacity: int, length: int) -> npt.NDArray[np.uint8]:
    """Room for the 2-bit codes of `capacity` rows of `length` coordinates, in the C scan's
    blocks of LANES rows (uninitialised: a row's codes are placed by coarse_place)."""
    return np.empty((-(-capacity // LANES), length // 16, LANES, 4), dtype=np.uint8)


def coarse_place(plane: npt.NDArray[np.uint8], first: int, coarse: npt.NDArray[np.uint8]) -> None:
    """Put `coarse` (Sketch.of's codes of consecutive rows) into `plane` from row `first`."""
    at = np.arange(first, first + len(coarse))
    plane[at // LANES, :, at % LANES, :] = coarse.reshape(len(coarse), -1, 4)


def coarse_move(plane: npt.NDArray[np.uint8], to: int, row: int) -> None:
    """Copy row `row`'s codes onto row `to`'s."""
    plane[to // LANES, :, to % LANES, :] = plane[row // LANES, :, row % LANES, :]


def coarse_rows(plane: npt.NDArray[np.uint8], rows: int) -> npt.NDArray[np.uint8]:
    """The blocks holding the first `rows` rows, as the C scan takes them."""
    return plane[: -(-rows // LANES)]
