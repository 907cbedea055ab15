"""The fault suite, short (`make soak` runs it long): SIGKILL rounds lose and duplicate
nothing acknowledged; a full disk refuses honestly and recovers; random and mutated bytes get
no INTERNAL and no crash."""

from pathlib import Path

from tests.soak import full_disk, fuzz, kill_rounds


def test_kill_rounds_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    tally = kill_rounds.run(tmp_path, rounds=4, clients=3, namespaces=5, seed=13)
    assert tally.rounds == 4
    assert tally.messages_acknowledged > 0
    assert tally.deletes_acknowledged > 0
    assert (tally.lost, tally.duplicated, tally.resurrected, tally.undeleted) == (0, 0, 0, 0)
    assert tally.unexpected == []


def test_a_disk_that_fills_mid_run(tmp_path: Path) -> None:
    report = full_disk.run(tmp_path, seed=13)
    assert report.refused > 0
    assert report.not_serving_seen and report.serving_again
    assert report.reads_while_full > 0
    assert (report.tally.lost, report.tally.duplicated, report.tally.resurrected) == (0, 0, 0)
    assert report.tally.unexpected == []


def test_random_and_mutated_bytes_get_no_internal(tmp_path: Path) -> None:
    report = fuzz.run(tmp_path, inputs=1500, seed=13)
    assert report.inputs == 1500
    assert report.failures == []
    assert "INVALID_ARGUMENT" in report.statuses
    assert report.good_calls == 1500 // fuzz.GOOD_EVERY
