"""himga.memory.months: the months a question names, and which turns were said in them."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from himga.memory.facets import NO_TIME
from himga.memory.months import named_months, said_in
from himga.memory.times import micros


@pytest.mark.parametrize(
    ("question", "months"),
    [
        ("What did Maria donate in December 2023?", (202312,)),
        ("What did she say on 7 July, 2023, and on August 3, 2023?", (202307, 202308)),
        ("Who did Maria have dinner with on May 3, 2023?", (202305,)),
        ("What did they paint in April?", (4,)),  # no year: that month in any year
        ("Where did they go in July 2022 or 2023?", (202207, 202307)),
        ("What did they do in July 2022 and in December 2023?", (202207, 202312)),  # not crossed
        ("What may Caroline do next?", ()),  # "may" and "march" beside no year are verbs
        ("What may Caroline do in 2024?", ()),  # a year out of the month's reach
        ("Did they march in the parade?", ()),
        ("Did they march in March 2023?", (202303,)),
        ("What happened in 2023?", ()),  # a year alone names no month
        ("DÉCEMBRE? no: december", (12,)),  # any case
        ("What did Julie say about the marching band?", ()),  # no stems: "juli", "march"
        ("the 1500 meter race in June", (6,)),  # 1500 is no year
        ("What did Caroline do at the support group?", ()),
    ],
)
def test_a_question_names_the_months_its_words_name(question: str, months: tuple[int]) -> None:
    assert named_months(question) == months


def test_a_time_is_in_the_month_its_utc_calendar_says() -> None:
    # Every edge of a month, either side of 1970, against datetime's own calendar.
    moments = [
        datetime(2023, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2024, 2, 29, 12, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
    ]
    moments += [
        moment + timedelta(days=15 * step) for step in range(-40, 40) for moment in moments[:1]
    ]
    times = np.asarray([micros(moment) for moment in moments] + [NO_TIME], dtype=np.int64)
    for month in {moment.year * 100 + moment.month for moment in moments} | {196912, 202402}:
        expected = [moment.year * 100 + moment.month == month for moment in moments] + [False]
        assert said_in(times, [month]).tolist() == expected
    for month in range(1, 13):
        expected = [moment.month == month for moment in moments] + [False]
        assert said_in(times, [month]).tolist() == expected
    assert not said_in(times, []).any()
