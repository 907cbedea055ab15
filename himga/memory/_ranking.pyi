"""The heavy part of himga.memory.ranking.rank, in C (_ranking.c); see ranking.rank."""

from array import array
from collections.abc import Sequence

def rank(
    postings: Sequence[array[int]],
    before: array[int],
    after: array[int],
    window_lengths: array[int],
    speakers: array[int],
    named: bytes,
    turns: int,
    total_length: int,
    limit: int,
    near_turns: int,
    own_weight: float,
    near_weight: float,
    k1: float,
    b: float,
    speaker_boost: float,
    checks: Sequence[tuple[array[int], bytes]] | None = None,
    times: tuple[array[int], int, int] | None = None,
    cells: array[int] | None = None,
    /,
) -> list[tuple[int, float]]: ...

CELL_MOST_NEAR: int

def cells(
    cells: array[int],
    numbers: array[int],
    before: array[int],
    after: array[int],
    window_lengths: array[int],
    speakers: array[int],
    near_turns: int,
    /,
) -> None: ...
def numbers(text: str, /) -> bytes: ...
def _in_order_from(turns: int, /) -> int: ...
