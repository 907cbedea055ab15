"""The exact cosines of chosen rows of the vector index, vectors scaled to length 1, and a
query's moments, in C (_exact.c); see himga.memory.vectors."""

import numpy as np
import numpy.typing as npt

def dots(
    matrix: npt.NDArray[np.float32],
    rows: npt.NDArray[np.int32] | None,
    query: npt.NDArray[np.float32],
    /,
) -> bytearray: ...
def best_of(
    matrix: npt.NDArray[np.float32],
    keys: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int32],
    query: npt.NDArray[np.float32],
    k: int,
    /,
) -> tuple[bytearray, bytearray]: ...
def units(rows: npt.NDArray[np.float32], dimension: int, /) -> bytearray | None: ...
def moments(
    total: npt.NDArray[np.float64],
    outer: npt.NDArray[np.float64],
    query: npt.NDArray[np.float32],
    /,
) -> tuple[float, float]: ...
