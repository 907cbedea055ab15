"""Months: which months a query names, and which turns were said in them.

Questions about a conversation name when things happened ("What did Maria donate in December
2023?", "... on 7 July, 2023?"), and a turn's time is when it was said (its own timestamp, else
its session's: himga.memory.times). The hybrid memory counts the fused score of a turn said in a
month the query names more (himga.memory.fusion, `Fusion.date_boost`).

A month is named by its English name among the query's terms, with the year when the query
names one (a four-digit number; with several, any of them), else in any year; "May" only beside
a year, being also a verb. A year alone names no month.
"""

from collections.abc import Collection

import numpy as np

from himga.memory.facets import NO_TIME
from himga.memory.text import terms

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
# The stems of the month names, as himga.memory.text makes a query's terms ("july" -> "juli").
_MONTH_TERMS = {terms(name)[0]: number for number, name in enumerate(_MONTH_NAMES.split(), 1)}
_MAY = 5


def named_months(asked: Collection[str]) -> tuple[int, ...]:
    """The months a query of terms `asked` (himga.memory.text.query_terms) names, in order,
    each as year * 100 + month, the year 0 for a month in any year."""
    if _MONTH_TERMS.keys().isdisjoint(asked):  # most queries: no month named
        return ()
    months = sorted({_MONTH_TERMS[term] for term in asked if term in _MONTH_TERMS})
    years = sorted({int(term) for term in asked if len(term) == 4 and term.isdigit()} - {0})
    if not years:
        months = [month for month in months if month != _MAY]
    return tuple(year * 100 + month for year in years or [0] for month in months)


def said_in(times: np.ndarray, months: Collection[int]) -> np.ndarray:
    """Which of `times` (int64 microseconds since 1970 UTC, NO_TIME for a turn without one)
    fall in one of `months` (as `named_months` gives them), in UTC: a boolean mask."""
    times = np.asarray(times, dtype=np.int64)
    timed = times != NO_TIME
    # Whole months since 1970-01, floored (numpy's calendar: proleptic Gregorian, as datetime's).
    since = np.where(timed, times, 0).astype("datetime64[us]").astype("datetime64[M]")
    count = since.astype(np.int64)
    year, month = 1970 + count // 12, count % 12 + 1
    dated = year * 100 + month
    wanted = np.asarray(sorted(months), dtype=np.int64)
    any_year = wanted[wanted < 100]
    hit: np.ndarray = np.isin(dated, wanted[wanted >= 100]) | np.isin(month, any_year)
    kept: np.ndarray = hit & timed
    return kept
