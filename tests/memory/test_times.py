"""When a message was said: the date_str forms himga reads, and the order of the sources."""

from datetime import UTC, datetime

import pytest

from himga.data import Message, Session
from himga.memory.times import from_micros, message_time, micros, parse_date_str


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:05 am on 1 January, 2024", datetime(2024, 1, 1, 0, 5, tzinfo=UTC)),
        ("12:05 pm on 1 Jan 2024", datetime(2024, 1, 1, 12, 5, tzinfo=UTC)),
        ("  9:15 A.M. on 3 march, 2023 ", datetime(2023, 3, 3, 9, 15, tzinfo=UTC)),
        ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2023/05/20 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2023-05-08T13:56:00Z", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08T15:56:00+02:00", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08", datetime(2023, 5, 8, tzinfo=UTC)),
    ],
)
def test_date_strs_that_name_an_instant_are_read_as_utc(text: str, moment: datetime) -> None:
    assert parse_date_str(text) == moment


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "3 March, 2023",  # no time of day
        "1:56 pm on 30 February, 2023",  # no such day
        "13:56 pm on 8 May, 2023",  # no such hour
        "1:56 pm on 8 Maybe, 2023",
        "2023/13/01 02:21",
        "the day after the party on 8 May, 2023",
    ],
)
def test_anything_else_gives_no_time(text: str) -> None:
    assert parse_date_str(text) is None


def test_a_message_has_its_own_time_else_its_sessions_else_its_date_strs() -> None:
    own = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    of_session = datetime(2023, 5, 9, tzinfo=UTC)
    message = Message(role="Ada", content="hi")
    dated = Session(session_id="s", date_str="2023/05/20 (Sat) 02:21")
    assert message_time(message.model_copy(update={"timestamp": own}), dated) == own
    both = Session(session_id="s", date_str="2023/05/20 (Sat) 02:21", timestamp=of_session)
    assert message_time(message, both) == of_session
    assert message_time(message, dated) == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    assert message_time(message, Session(session_id="s", date_str="someday")) is None
    assert message_time(message, Session(session_id="s")) is None


def test_times_are_kept_as_exact_microseconds() -> None:
    moment = datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    assert micros(moment) == -1
    assert from_micros(micros(moment)) == moment
    late = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    assert from_micros(micros(late)) == late
