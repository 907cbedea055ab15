"""The line of a place a loader names (`[1].conversation.session_1[0].text`) in its JSON file."""

from pathlib import Path

from himga.data import DatasetError
from himga.data.places import line_of, located

TEXT = """[
  {"sample_id": "a",
   "conversation": {"session_1": [
      {"speaker": "Ada", "text": "hi"},
      {"speaker": "Bo",
       "text": 5}
   ]}},
  {"list": [1, [2, 3]]}
]"""


def test_each_place_is_found_on_its_line() -> None:
    assert line_of(TEXT, "[0]") == 2
    assert line_of(TEXT, "[0].conversation.session_1[1].text") == 6
    assert line_of(TEXT, "[1].list[1][1]") == 8


def test_a_missing_part_gives_the_line_of_what_holds_it() -> None:
    assert line_of(TEXT, "[0].conversation.session_1[1].dia_id") == 5
    assert line_of(TEXT, "[0].conversation.session_9") == 3
    assert line_of(TEXT, "[7]") == 1


def test_an_error_is_told_with_its_line_or_left_as_it_is() -> None:
    path = Path("f.json")
    error = DatasetError(f"{path}: [0].conversation.session_1[1].text: must be a string")
    assert (
        located(error, path, TEXT)
        == "f.json:6: [0].conversation.session_1[1].text: must be a string"
    )
    whole = DatasetError(f"{path}: not JSON: Expecting value")
    assert located(whole, path, TEXT) == str(whole)
