"""What the stdio transport's streams are wrapped in: a stream that hands `inner` all it does
not change (its closing, its use as a context), and a read stream's iteration over `receive`,
as the SDK's ReadStream and WriteStream protocols have them."""

from types import TracebackType
from typing import Any, Self

import anyio


class Wrapper:
    """A stream over `inner` that closes it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


class ReadWrapper(Wrapper):
    """A read stream over `inner`: its items are `receive`'s, which a subclass changes."""

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._inner.receive()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
