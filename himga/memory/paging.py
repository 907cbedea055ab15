"""Page tokens of the built-in memories' listings: opaque to callers, a position to the memory.

A memory lists its messages in the order of their numbers (the order their ids were first
stored; a replaced message keeps its number, a deleted one leaves a gap that is never filled
while the memory lives). A token holds the last number a page gave, so the next page starts
after it: a message there before the first page is listed exactly once, whatever happens in
between, unless it is deleted.
"""

import base64
import binascii
import re

from himga.errors import InvalidArgument

_PREFIX = "p1:"
_NUMBER = re.compile(r"(?:0|[1-9][0-9]{0,18})", re.ASCII)
_NOT_OURS = "not a page token of this listing: pass the previous page's next_page_token unchanged"


def encode(last: int) -> str:
    """The token of the page after the one whose last message had number `last`."""
    return base64.urlsafe_b64encode(f"{_PREFIX}{last}".encode()).decode().rstrip("=")


def decode(token: str) -> int:
    """The number after which the page of `token` starts (-1 for "", the first page);
    InvalidArgument naming page_token for a token no listing made."""
    if not token:
        return -1
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("page_token", _NOT_OURS) from None
    if not text.startswith(_PREFIX) or not _NUMBER.fullmatch(text[len(_PREFIX) :]):
        raise InvalidArgument("page_token", _NOT_OURS)
    return int(text[len(_PREFIX) :])


def check_page_size(page_size: int, most: int = 1000) -> int:
    """`page_size` checked: 1 to `most`; InvalidArgument otherwise."""
    if not 1 <= page_size <= most:
        raise InvalidArgument("page_size", f"must be 1 to {most}")
    return page_size
