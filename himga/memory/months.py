"""Months: which months a query names, and which turns were said in them.

Questions about a conversation name when things happened ("What did Maria donate in December
2023?", "... on 7 July, 2023?"), and a turn's time is when it was said (its own timestamp, else
its session's: himga.memory.times). The hybrid memory counts the fused score of a turn said in a
month the query names more (himga.memory.fusion, `Fusion.date_boost`).

A month is named by its full English name, a word of the query as written (any case; "Julie"
and "marching" are no months), with the years among the next YEAR_REACH words ("December 2023",
"7 July, 2023", "May 3, 2023", "July 2022 or 2023"; a year is a number from FIRST_YEAR to
LAST_YEAR), else in any year. "May" and "March", which are also verbs, name a month only with a
year beside them. A year alone names no month.
"""

import re
from collections.abc import Collection

import numpy as np

from himga.memory.facets import NO_TIME
from himga.memory.times import MONTHS

YEAR_REACH = 3
"""How many words after a month's name may hold its years."""
FIRST_YEAR, LAST_YEAR = 1900, 2199
_VERBS = {"may", "march"}
_WORD = re.compile(r"[^\W_]+")


def named_months(query: str) -> tuple[int, ...]:
    """The months `query` (as written) names, in order, each as year * 100 + month, the year 0
    for a month in any year."""
    words = _WORD.findall(query.lower())
    found: set[int] = set()
    for at, word in enumerate(words):
        month = MONTHS.get(word)
        if month is None:
            continue
        reach = words[at + 1 : at + 1 + YEAR_REACH]
        years = {int(w) for w in reach if w.isdigit() and FIRST_YEAR <= int(w) <= LAST_YEAR}
        if years:
            found.update(year * 100 + month for year in years)
        elif word not in _VERBS:
            found.add(month)
    return tuple(sorted(found))


def said_in(times: np.ndarray, months: Collection[int]) -> np.ndarray:
    """Which of `times` (int64 microseconds since 1970 UTC, NO_TIME for a turn without one)
    fall in one of `months` (as `named_months` gives them), in UTC: a boolean mask."""
    times = np.asarray(times, dtype=np.int64)
    timed = times != NO_TIME
    # Whole months since 1970-01, floored (numpy's calendar: proleptic Gregorian, as datetime's).
    since = np.where(timed, times, 0).astype("datetime64[us]").astype("datetime64[M]")
    count = since.astype(np.int64)
    year, month = 1970 + count // 12, count % 12 + 1
    wanted = np.asarray(sorted(months), dtype=np.int64)
    in_year = np.isin(year * 100 + month, wanted[wanted >= 100])
    hit: np.ndarray = (in_year | np.isin(month, wanted[wanted < 100])) & timed
    return hit
