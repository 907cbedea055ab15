"""Moving the store size from which the keyword core walks windows in turn order."""

from collections.abc import Iterator
from contextlib import contextmanager

from himga.memory import _ranking


@contextmanager
def walked_in_order_from(turns: int) -> Iterator[None]:
    """The C core walks windows in turn order (and reads cells) in stores of `turns` turn numbers
    and more, for the block's duration, then as before."""
    before = _ranking._in_order_from(turns)
    try:
        yield
    finally:
        _ranking._in_order_from(before)
