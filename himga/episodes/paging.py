"""ListEpisodes' order, filters and page tokens, the same for every store.

Episodes are listed newest first: by timestamp, then by id, both descending, so the order is
total and a page token can say where the last page stopped: the (timestamp, id) of its last
episode, and a fingerprint of the filters it was made for. A token is opaque to clients
(base64url of JSON); one made for other filters, or not made by a store, is refused.

Times are kept and compared to the microsecond: a timestamp's digits past the sixth are dropped
when an episode is recorded (`to_microseconds`), so the time an episode is listed with is the
time its filters and its place in the order see.
"""

import base64
import binascii
import hashlib
import json
import re
from dataclasses import astuple
from datetime import UTC, datetime, timedelta
from typing import Any

from himga.episodes.base import EpisodeFilter
from himga.episodes.features import normal_path
from himga.errors import unicode_problem
from himga.timeutil import parse_utc_datetime, to_utc_isoformat

Position = tuple[int, str]
"""Where an episode sits in the listing: (its timestamp in microseconds, its id)."""


def position(episode: dict[str, Any]) -> Position:
    """Where an episode (its wire form) sits in the listing."""
    return micros(parse_utc_datetime(episode["timestamp"])), episode["id"]


def to_microseconds(timestamp: str) -> str:
    """An episode's timestamp (RFC 3339) with the digits past the sixth after the point dropped
    (the time rounded down to the microsecond); as it is when it has none."""
    if _FINER.search(timestamp) is None:
        return timestamp
    return to_utc_isoformat(parse_utc_datetime(timestamp))


_FINER = re.compile(r"\.[0-9]{7}", re.ASCII)


def micros(moment: datetime) -> int:
    """An aware datetime as whole microseconds since the epoch."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def passes(episode: dict[str, Any], filters: EpisodeFilter) -> bool:
    """Whether an episode (its wire form) passes every filter given."""
    context = episode["context"]
    for wanted, held in (
        (filters.task_id, episode["task_id"]),
        (filters.agent, episode["agent"]),
        (filters.phase, context.get("phase", "")),
        (filters.outcome, episode.get("outcome", "success")),
    ):
        if wanted and wanted != held:
            return False
    when = parse_utc_datetime(episode["timestamp"])
    if filters.since is not None and when < filters.since:
        return False
    if filters.until is not None and when >= filters.until:
        return False
    if filters.file:
        return normal_path(filters.file) in listed_files(episode)
    return True


def listed_files(episode: dict[str, Any]) -> set[str]:
    """The paths the file filter finds an episode by: those it read, modified or names in its
    context."""
    paths = (
        *episode.get("files_read", []),
        *episode.get("files_modified", []),
        *episode["context"].get("files_involved", []),
    )
    return {normal_path(path) for path in paths} - {""}


def page_token(last: Position, filters: EpisodeFilter) -> str:
    """The token of the page after the episode at `last`."""
    data = {"t": last[0], "id": last[1], "f": _fingerprint(filters)}
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def after(token: str, filters: EpisodeFilter) -> Position | None:
    """Where the page a token names starts (None for ""); ValueError for a bad token: one not
    of the form `page_token` makes, made for other filters, or whose position no episode can
    have (a time outside years 1 to 9999, an id that is not text every store can hold)."""
    if not token:
        return None
    try:
        data: Any = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, binascii.Error, RecursionError):
        data = None
    if not (isinstance(data, dict) and data.keys() == {"t", "id", "f"}):
        raise ValueError(_FORGED)
    last, fingerprint = (data["t"], data["id"]), data["f"]
    if not (_is_time(last[0]) and _is_id(last[1]) and isinstance(fingerprint, str)):
        raise ValueError(_FORGED)
    if fingerprint != _fingerprint(filters):
        raise ValueError("page_token: made for other filters; list again from the first page")
    return last


_FORGED = "page_token: not a token ListEpisodes gave"
_FIRST = micros(datetime.min.replace(tzinfo=UTC))
_LAST = micros(datetime.max.replace(tzinfo=UTC))


def _is_time(value: Any) -> bool:
    """Whether `value` is an episode's time as a position holds it (bool is not an int here)."""
    return type(value) is int and _FIRST <= value <= _LAST


def _is_id(value: Any) -> bool:
    """Whether `value` is an id the stores can compare: Unicode text (no lone surrogate, which
    SQLite and PostgreSQL cannot encode)."""
    return isinstance(value, str) and unicode_problem(value) is None


def _fingerprint(filters: EpisodeFilter) -> str:
    shown = [v.isoformat() if hasattr(v, "isoformat") else v for v in astuple(filters)]
    return hashlib.sha256(json.dumps(shown).encode()).hexdigest()[:16]
