"""Sketch: an int8 copy of each of a VectorIndex's vectors along their principal axes, scanned
in C (himga.memory._sketch) to propose the candidates of a search without a filter in a large
index; the VectorIndex re-scores them exactly from its float32 rows, so every cosine it returns
is exact and only which keys make the top k is approximate.

A sketch holds a vector's coordinates along the principal axes of the stored vectors (the
eigenvectors of their covariance, from the index's exact moments; every axis is kept, the
count rounded up to a multiple of BLOCK with axes of zeros), less their mean, each divided by
its scale (CLIP standard deviations of that coordinate over 127) and rounded to int8, clipped.
The query's weights are its own coordinates along the same axes times the scales, rounded to
int16; their dot product with a sketch orders the rows as the cosine does (the mean's share is
the same for every row), up to the rounding. Scaling each axis by its own spread is what makes
int8 enough: e5's components are small and unequal, and 127 times a raw component would leave
a few levels to most of them. A sketch is a quarter of the float32 row's bytes, so a scan
reads a quarter of the memory. (Keeping fewer axes than all, and 4 bits instead of 8, were
measured too; the README says how they fell short.)

The axes are fitted when the index first reaches the options' threshold, and again each time
REFIT times as many vectors were added or removed since the last fit as were stored then (the
sketches are then made anew from the float32 rows, CHUNK rows at a time): O(n) work each time
the index grows eightfold, under the writer's lock (0.5 s at 264k vectors on two cores, one
write's wait; a one-off script). A fit holds up well: sketches of 101k real e5 vectors made by
the fit of their first 33k recalled 1.0000 of the exact top 10 and top 100 (every development
question, a one-off script), whether the LoCoMo turns were among those 33k or came after them.
Nothing is persisted: a store opened large fits once it holds the threshold and refits as its
vectors are read in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from himga.errors import InvalidArgument

CLIP = 6.0
"""Standard deviations of a coordinate that int8's 127 stands for; beyond them it is clipped."""
REFIT = 7
"""The axes are fitted again once this many times as many vectors changed as were fitted."""
CHUNK = 1 << 14
"""Rows sketched at a time when the axes are fitted anew (bounds the temporary arrays)."""
BLOCK = 16
"""A sketch's length is a multiple of this (the C scan's step)."""


@dataclass(frozen=True)
class SketchOptions:
    """When and how a VectorIndex keeps sketches. `threshold`: the number of vectors from which
    a search without a filter scans them (below it, and with 0 always, the search is exact);
    `fetch` and `per_hit`: the candidates taken, the more of `fetch` and `per_hit` times the
    hits asked, re-scored exactly in float32.

    The defaults were measured by `make bench-hybrid` (step 2b: recall against the exact search
    over every LoCoMo development question, on 100k real e5-small-v2 vectors of GCIDE
    sentences, alone and with the LoCoMo turns added); the README has the figures."""

    threshold: int = 32_768
    fetch: int = 200
    per_hit: int = 4

    def __post_init__(self) -> None:
        if _bad(self.threshold, 0):
            raise InvalidArgument("threshold", "must be an integer, 0 (always exact) or more")
        for name in ("fetch", "per_hit"):
            if _bad(getattr(self, name), 1):
                raise InvalidArgument(name, "must be an integer, 1 or more")

    def wanted(self, k: int) -> int:
        """The candidates a search for `k` hits takes."""
        return max(self.fetch, self.per_hit * k)


def _bad(value: object, least: int) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or value < least


class Sketch:
    """The axes, mean and scales of one fit, which turn float32 rows into sketches and a query
    into weights."""

    def __init__(self, mean: npt.NDArray[np.float64], covariance: npt.NDArray[np.float64]) -> None:
        dimension = len(mean)
        self.length = -(-dimension // BLOCK) * BLOCK
        variances, axes = np.linalg.eigh(covariance)
        order = np.argsort(-variances, kind="stable")
        self.axes = np.zeros((self.length, dimension), dtype=np.float32)  # one axis a row
        self.axes[:dimension] = axes[:, order].T
        spread = np.sqrt(np.maximum(variances[order], 0.0))
        # an axis along which the vectors never vary (and the padding) gets a scale of 1
        self.scales = np.ones(self.length, dtype=np.float32)
        self.scales[:dimension] = np.where(spread > 0, CLIP * spread / 127, 1.0)
        self.mean = mean.astype(np.float32)
        # a row's sketch in one product: (row - mean) @ axes.T / scales, the division folded in
        self._scaled = np.ascontiguousarray((self.axes / self.scales[:, None]).T)
        self._offset = self.mean @ self._scaled

    def of(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
        """The sketches of unit float32 `rows` (n x dimension)."""
        coordinates = rows @ self._scaled
        coordinates -= self._offset
        np.rint(coordinates, out=coordinates)
        np.clip(coordinates, -127, 127, out=coordinates)
        sketches: npt.NDArray[np.int8] = coordinates.astype(np.int8)
        return sketches

    def weights(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.int16]:
        """The int16 weights of unit `query`, scaled so the greatest is 32767, or less where
        that would let a dot product with a sketch pass int32 (127 times the weights' sizes
        summed at most 2**31 - 1: the scan refuses more)."""
        weighed = (self.axes @ query) * self.scales
        sizes = np.abs(weighed)
        top = float(sizes.max())
        if top == 0.0:
            return np.zeros(self.length, dtype=np.int16)
        # rounding adds at most half a unit a weight
        room = (2**31 - 1) / 127 - self.length / 2
        factor = min(32767 / top, room / float(sizes.sum()))
        weights: npt.NDArray[np.int16] = np.rint(weighed * factor).astype(np.int16)
        return weights
