"""When a stored message was said: its own timestamp, else its session's, else the time its
session's `date_str` gives, read by the rules below; a message may have no time at all.

`date_str` is kept as the source wrote it, so only forms that say one instant plainly are read,
each taken as UTC (the datasets give no zone):

- LoCoMo's `1:56 pm on 8 May, 2023`: hour 1-12, minutes, `am`/`pm` (also `a.m.`), `on`, day,
  an English month name or its first three letters, an optional comma, a four-digit year;
- LongMemEval's `2023/05/20 (Sat) 02:21`: the weekday in brackets may be left out, and is not
  checked against the date;
- an RFC 3339 / ISO 8601 date and time (`2023-05-08T13:56:00Z`; an offset is converted to UTC,
  none is taken as UTC), or a date alone (`2023-05-08`, midnight UTC).

Letter case and spaces around the parts do not matter. Anything else, or a date that does not
exist (30 February), leaves the message without a time: a `date_str` never makes an ingest
fail. Times are compared as whole microseconds since 1970-01-01 UTC (`micros`).
"""

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from himga.data.conversation import Message, Session
from himga.timeutil import as_utc, parse_utc_datetime

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES.split(), 1)}
"""Each English month name, lower case, and its number."""
_LOCOMO = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\s*,?\s*(\d{4})",
    re.IGNORECASE | re.ASCII,
)
_LONGMEMEVAL = re.compile(
    r"(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([a-z]{2,9}\))?\s*(\d{1,2}):(\d{2})",
    re.IGNORECASE | re.ASCII,
)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)


@lru_cache(maxsize=4096)
def parse_date_str(text: str) -> datetime | None:
    """The instant a session's `date_str` names, in UTC, or None when it names none plainly
    (cached: every message of a session gives its date_str again)."""
    text = text.strip()
    try:
        if match := _LOCOMO.fullmatch(text):
            hour, minute, half, day, month_name, year = match.groups()
            month = _month(month_name)
            if month is None or not 1 <= int(hour) <= 12:
                return None
            hour24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
            return datetime(int(year), month, int(day), hour24, int(minute), tzinfo=UTC)
        if match := _LONGMEMEVAL.fullmatch(text):
            year, month, day, hour, minute = map(int, match.groups())
            return datetime(year, month, day, hour, minute, tzinfo=UTC)
        if match := _DATE.fullmatch(text):
            year, month, day = map(int, match.groups())
            return datetime(year, month, day, tzinfo=UTC)
        return parse_utc_datetime(text)
    except ValueError:  # no such day or hour, or not a date-time at all
        return None


def _month(name: str) -> int | None:
    name = name.lower()
    if name in MONTHS:
        return MONTHS[name]
    if len(name) == 3:
        return next((n for full, n in MONTHS.items() if full.startswith(name)), None)
    return None


def stated(value: object) -> datetime | None:
    """An optional date-time field of a Message or Session (absent: pydantic's MISSING)."""
    return as_utc(value) if isinstance(value, datetime) else None


def message_time(message: Message, session: Session) -> datetime | None:
    """The time of `message`, said in `session`: its own, else the session's, else the time the
    session's date_str gives (see the module's text), else None."""
    own = stated(message.timestamp)
    if own is not None:
        return own
    return session_time(session)


def session_time(session: Session) -> datetime | None:
    """The time of a session: its timestamp, else what its date_str gives, else None."""
    own = stated(session.timestamp)
    if own is not None:
        return own
    date = session.date_str
    return parse_date_str(date) if isinstance(date, str) else None


def micros(moment: datetime) -> int:
    """`moment` as whole microseconds since 1970-01-01 UTC: how stores keep and compare times."""
    return (as_utc(moment) - EPOCH) // _MICROSECOND


@lru_cache(maxsize=1 << 14)
def from_micros(value: int) -> datetime:
    """The UTC datetime of a count of microseconds since 1970-01-01 UTC (cached: a listing
    reads the same session times again and again, and datetimes never change)."""
    seconds, fraction = divmod(value, 1_000_000)
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.replace(microsecond=fraction) if fraction else moment
