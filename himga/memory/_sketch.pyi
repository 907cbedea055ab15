"""The scan of himga.memory.sketch, in C (_sketch.c)."""

import numpy as np
import numpy.typing as npt

LANES: int
"""Rows in a block of the first stage's 2-bit codes."""

def best_rows(
    sketches: npt.NDArray[np.uint8],
    query: npt.NDArray[np.int8],
    count: int,
    threads: int = 1,
    loop: str | None = None,
    coarse: npt.NDArray[np.uint8] | None = None,
    keep: int = 0,
) -> bytes: ...
def coarse_block(rank: int) -> int: ...
def loops() -> tuple[str, ...]: ...
def weights(axes: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> bytes: ...

class SharedScan:
    def __init__(
        self,
        sketches: npt.NDArray[np.uint8],
        query: npt.NDArray[np.int8],
        count: int,
        loop: str | None = None,
        coarse: npt.NDArray[np.uint8] | None = None,
        keep: int = 0,
    ) -> None: ...
    def share(self) -> None: ...
    def best(self) -> bytes: ...
    def wait(self) -> None: ...
    def nearest(
        self,
        matrix: npt.NDArray[np.float32],
        keys: npt.NDArray[np.int64],
        unit: npt.NDArray[np.float32],
        k: int,
    ) -> tuple[bytearray, bytearray]: ...
