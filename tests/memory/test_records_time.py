"""The public UTC helpers the records use: one written form, lenient reading of old data."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.records import (
    _parse_utc_datetime,
    _to_utc_isoformat,
    parse_utc_datetime,
    to_utc_isoformat,
)
from himga.timeutil import as_utc

PLUS_TWO = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("moment", "written"),
    [
        (datetime(2024, 5, 8, 13, 56, tzinfo=UTC), "2024-05-08T13:56:00Z"),
        (datetime(2024, 5, 8, 15, 56, tzinfo=PLUS_TWO), "2024-05-08T13:56:00Z"),
        (datetime(2024, 5, 8, 13, 56), "2024-05-08T13:56:00Z"),  # naive: taken as UTC
        (datetime(2024, 5, 8, 13, 56, 0, 250000, tzinfo=UTC), "2024-05-08T13:56:00.250000Z"),
        (datetime(2024, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=5))), "2023-12-31T20:00:00Z"),
    ],
)
def test_to_utc_isoformat_writes_utc_with_z(moment: datetime, written: str) -> None:
    assert to_utc_isoformat(moment) == written
    assert _to_utc_isoformat(moment) == written


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-08T13:56:00Z",
        "2024-05-08T13:56:00z",
        "2024-05-08T13:56:00+00:00",
        "2024-05-08T15:56:00+02:00",
        "2024-05-08T15:56:00+0200",
        "2024-05-08T08:56:00-05:00",
        "2024-05-08T13:56:00",  # naive: taken as UTC
        "2024-05-08 13:56:00",
        "2024-05-08T13:56",
    ],
)
def test_parse_utc_datetime_reads_every_offset_into_utc(text: str) -> None:
    expected = datetime(2024, 5, 8, 13, 56, tzinfo=UTC)
    parsed = parse_utc_datetime(text)
    assert parsed == expected and parsed.utcoffset() == timedelta(0)
    assert _parse_utc_datetime(text) == expected


def test_parse_utc_datetime_takes_datetimes_too() -> None:
    assert parse_utc_datetime(datetime(2024, 5, 8, 15, 56, tzinfo=PLUS_TWO)).hour == 13
    assert parse_utc_datetime(datetime(2024, 5, 8, 13, 56)).tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "2024-05-08",
        "2024-13-08T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-05-08T24:00:00Z",
        "2024-5-8T13:56:00Z",
        "2024-05-08T13:56:00Z\n",
        " 2024-05-08T13:56:00Z",
        "1715176560",
    ],
)
def test_parse_utc_datetime_refuses_what_is_no_date_time(text: str) -> None:
    with pytest.raises(ValueError, match="date-time") as raised:
        parse_utc_datetime(text)
    assert repr(text) in str(raised.value)


@pytest.mark.parametrize("value", [1715176560, None, ["2024-05-08T13:56:00Z"]])
def test_parse_utc_datetime_refuses_what_is_no_string(value: object) -> None:
    with pytest.raises(TypeError):
        parse_utc_datetime(value)  # type: ignore[arg-type]


@given(st.datetimes(timezones=st.none() | st.timezones()))
def test_writing_then_reading_keeps_the_instant(moment: datetime) -> None:
    written = to_utc_isoformat(moment)
    assert written.endswith("Z")
    assert parse_utc_datetime(written) == as_utc(moment)


EDGE_OF_TIME = [
    datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))),
    datetime(9999, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-1))),
]


@pytest.mark.parametrize("moment", EDGE_OF_TIME, ids=str)
def test_an_instant_with_no_utc_form_is_a_value_error(moment: datetime) -> None:
    with pytest.raises(ValueError, match="no UTC date-time"):
        to_utc_isoformat(moment)
    with pytest.raises(ValueError, match="no UTC date-time"):
        parse_utc_datetime(moment.isoformat())


@pytest.mark.parametrize("moment", EDGE_OF_TIME, ids=str)
def test_records_keep_such_an_instant_and_validate_reports_it(moment: datetime) -> None:
    from himga.records import EpisodeTrace

    trace = EpisodeTrace.create("t", "a", "g")
    trace.last_accessed = moment
    assert [p.split(" must")[0] for p in trace.validate()] == ["EpisodeTrace.last_accessed"]
    with pytest.raises(ValueError, match=r"^\$\.last_accessed: "):
        EpisodeTrace.from_dict({**trace.to_dict(), "last_accessed": moment.isoformat()})
