"""The fault suite, short (`make soak` runs it long): SIGKILL rounds lose and duplicate
nothing acknowledged; a full disk refuses honestly and recovers; a server with few descriptors
answers every call OK or RESOURCE_EXHAUSTED and loses nothing; random and mutated bytes get
no INTERNAL and no crash."""

from pathlib import Path

from tests.soak import descriptors, full_disk, fuzz, kill_rounds


def test_kill_rounds_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    tally = kill_rounds.run(tmp_path, rounds=4, clients=3, namespaces=5, seed=13)
    assert tally.rounds == 4
    assert tally.messages_acknowledged > 0
    assert tally.deletes_acknowledged > 0
    assert tally.episodes_acknowledged > 0 and tally.episode_reads > 0
    assert (tally.lost, tally.duplicated, tally.resurrected, tally.undeleted) == (0, 0, 0, 0)
    assert (tally.episodes_lost, tally.episodes_undeleted, tally.episodes_unexpected) == (0, 0, 0)
    assert tally.unexpected == []


def test_a_disk_that_fills_mid_run(tmp_path: Path) -> None:
    report = full_disk.run(tmp_path, seed=13)
    assert report.refused > 0
    assert report.not_serving_seen and report.serving_again
    assert report.reads_while_full > 0
    assert (report.tally.lost, report.tally.duplicated, report.tally.resurrected) == (0, 0, 0)
    assert report.tally.episodes_acknowledged > 0
    assert (report.tally.episodes_lost, report.tally.episodes_unexpected) == (0, 0)
    assert report.tally.unexpected == []


def test_random_and_mutated_bytes_get_no_internal(tmp_path: Path) -> None:
    report = fuzz.run(tmp_path, inputs=1500, seed=13)
    assert report.inputs == 1500
    assert report.failures == []
    assert "INVALID_ARGUMENT" in report.statuses
    assert report.good_calls == 1500 // fuzz.GOOD_EVERY


def test_few_descriptors_get_answers_and_lose_nothing(tmp_path: Path) -> None:
    """The issue's numbers: 600 namespaces, 8 threads, a server at 256 descriptors."""
    report = descriptors.run(tmp_path, namespaces=600, threads=8, limit=256)
    assert report.unexpected == []
    assert set(report.statuses) <= {"OK", "RESOURCE_EXHAUSTED"}
    assert report.statuses["OK"] >= 600 * 6  # two writes and four reads a namespace
    assert (report.lost, report.duplicated, report.not_serving_seen) == (0, 0, 0)
    assert report.accepted_at_end
