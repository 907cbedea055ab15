"""What the memory tests share: the keyword core's two ways of making a term's reach."""

from collections.abc import Iterator

import pytest

from tests.memory.in_order import walked_in_order_from


@pytest.fixture(params=["in turn order", "spread"])
def both_ways(request: pytest.FixtureRequest) -> Iterator[None]:
    """The test once with the C core walking windows in turn order in every store (as it does in
    large ones) and once spreading them over dense counts in every store (as in small ones)."""
    with walked_in_order_from(0 if request.param == "in turn order" else 2**62):
        yield
