"""The scan of himga.memory.sketch, in C (_sketch.c)."""

import numpy as np
import numpy.typing as npt

def best_rows(
    sketches: npt.NDArray[np.uint8],
    query: npt.NDArray[np.int8],
    count: int,
    threads: int = 1,
    loop: str | None = None,
    /,
) -> bytes: ...
def loops() -> tuple[str, ...]: ...

class SharedScan:
    def __init__(
        self,
        sketches: npt.NDArray[np.uint8],
        query: npt.NDArray[np.int8],
        count: int,
        loop: str | None = None,
    ) -> None: ...
    def share(self) -> None: ...
    def best(self) -> bytes: ...
    def wait(self) -> None: ...
