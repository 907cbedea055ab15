"""The scores of himga.memory.fusion's method, in C (_fusion.c); see fusion.Links."""

from array import array

import numpy as np
import numpy.typing as npt

def scores(
    keyword_keys: npt.NDArray[np.int64],
    keyword_scores: npt.NDArray[np.float64],
    dense_keys: npt.NDArray[np.int64],
    cosines: npt.NDArray[np.float64],
    mean: float,
    deviation: float,
    sessions: array[int],
    before: array[int],
    after: array[int],
    dense_weight: float,
    neighbour_weight: float,
    coverage: float,
    full_match: float,
    /,
) -> tuple[bytes, bytearray]: ...
def best(
    keys: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], limit: int, /
) -> list[tuple[int, float]]: ...
