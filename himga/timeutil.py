"""UTC date-times as the wire writes them (`2024-05-08T13:56:00Z`) and as old data wrote them.

Writing always gives RFC 3339 in UTC with a `Z`. Reading is lenient on purpose, for records
written before the contract: `Z`, `+00:00` and other offsets are converted to UTC, and a time
without an offset (naive) is taken as UTC, so a producer that meant local time is misread: send
aware datetimes.
"""

import re
from datetime import UTC, datetime
from typing import Any, get_args

from pydantic import AwareDatetime

__all__ = [
    "_parse_utc_datetime",
    "_to_utc_isoformat",
    "as_utc",
    "holds_datetime",
    "parse_utc_datetime",
    "to_utc_isoformat",
]

# An ISO 8601 date and time of day, seconds and offset optional: what `parse_utc_datetime`
# reads. Python's own `fromisoformat` alone would also take a bare date or a week date.
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?", re.ASCII
)


def as_utc(moment: datetime) -> datetime:
    """The same instant as an aware datetime in UTC; a naive one is taken as UTC already.

    Raises ValueError when that instant falls outside Python's years 1 to 9999.
    """
    if not isinstance(moment, datetime):
        raise TypeError(f"expected a datetime, got {type(moment).__name__}")
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00, before the first instant Python has
        raise ValueError(f"{moment.isoformat()} has no UTC date-time Python can hold") from None


def to_utc_isoformat(moment: datetime) -> str:
    """RFC 3339 in UTC with a `Z` suffix: `2024-05-08T13:56:00Z` (microseconds when present)."""
    return as_utc(moment).isoformat().replace("+00:00", "Z")


def parse_utc_datetime(value: str | datetime) -> datetime:
    """An aware UTC datetime from an ISO 8601 string (or a datetime), converting any offset.

    Raises ValueError, quoting the input, when the string is not a date and time of day.
    """
    if isinstance(value, datetime):
        return as_utc(value)
    if not isinstance(value, str):
        raise TypeError(f"expected an ISO 8601 date-time string, got {type(value).__name__}")
    text = value
    if not _DATE_TIME.fullmatch(text):
        raise ValueError(
            f"not an ISO 8601 date-time: {value!r} (expected such as 2024-05-08T13:56:00Z)"
        )
    if text[-1] in "Zz":
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as error:  # e.g. month 13, or 25 o'clock
        raise ValueError(f"not a valid date-time: {value!r} ({error})") from None
    return as_utc(parsed)


# The seed's names, kept for code written against it.
_to_utc_isoformat = to_utc_isoformat
_parse_utc_datetime = parse_utc_datetime


def holds_datetime(annotation: Any) -> bool:
    """Whether a model field's type is a date-time (possibly inside a union)."""
    if annotation in (datetime, AwareDatetime):
        return True
    return any(holds_datetime(arg) for arg in get_args(annotation))
