"""The seed's SimpleKeywordMemory, kept as the baseline: it must behave as the seed shows."""

from himga.data import Message, Session
from himga.memory.naive import RETRIEVE_LINES, SimpleKeywordMemory


def test_the_seed_example() -> None:
    memory = SimpleKeywordMemory()
    session = Session(session_id="s1", messages=[], date_str="2024-01-01")
    memory.ingest(Message(role="user", content="I love hiking in the mountains."), session)
    assert memory.retrieve("hiking") == "[2024-01-01] user: I love hiking in the mountains."
    memory.reset()
    assert memory.retrieve("hiking") == ""


def test_substring_match_keeps_the_last_ten_lines() -> None:
    memory = SimpleKeywordMemory()
    session = Session(session_id="s1")  # no date: "unknown", as in the seed
    for i in range(15):
        memory.ingest(Message(role="user", content=f"Hiking day {i}", turn_id=f"D1:{i}"), session)
    memory.ingest(Message(role="user", content="Nothing to see"), session)
    lines = memory.retrieve("HIKE hiking").splitlines()
    assert len(lines) == RETRIEVE_LINES
    assert lines[0] == "[unknown] user: Hiking day 5" and lines[-1].endswith("Hiking day 14")
    # search shows the same matches, most recent first
    assert [h.turn_id for h in memory.search("hiking", limit=3)] == ["D1:14", "D1:13", "D1:12"]
    # "day" is a substring of no other line, but "a" is in every line: the seed's rule
    assert len(memory.retrieve("a").splitlines()) == RETRIEVE_LINES
