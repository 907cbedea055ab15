"""What only the SQLite episode store promises: its episodes outlive it, an acknowledged record
survives SIGKILL, and other connections' writes are seen (its formats: test_terms_upgrade)."""

import signal
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from himga.episodes import EpisodeFilter, InProcessEpisodes, SQLiteEpisodes
from himga.records import TaskContext
from tests.episodes.helpers import episode
from tests.episodes.test_contract import corpus
from tests.killed import acknowledged_until_killed


def test_episodes_and_their_ranking_outlive_the_store(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    task = TaskContext(goal="Fix the login redirect loop", files=["auth/views.py"])
    with SQLiteEpisodes(path) as store:
        store.record_many(corpus())
        store.delete("ep-0005")
        before = [(h.episode.id, h.score) for h in store.search(task).hits]
    with SQLiteEpisodes(path) as store:
        after = [(h.episode.id, h.score) for h in store.search(task).hits]
        assert len(store.list().episodes) == 4
        assert store.get("ep-0002").access_count == 3  # two searches, then this get
    assert after == before and before


def test_every_store_ranks_alike(tmp_path: Path) -> None:
    task = TaskContext(goal="Fix the login redirect loop", files=["auth/views.py"])
    answers = []
    for store in (InProcessEpisodes(), SQLiteEpisodes(tmp_path / "e.sqlite3")):
        with store:
            store.record_many(corpus())
            found = store.search(task, "redirect loop", limit=10)
            answers.append(([(h.episode.id, h.score) for h in found.hits], found.context))
    assert answers[0] == answers[1]


def test_another_connection_sees_each_write(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    task = TaskContext(goal="Speed up the report export")
    with SQLiteEpisodes(path) as one, SQLiteEpisodes(path) as other:
        assert other.search(task).hits == []
        one.record(episode(4, "Speed up the report export", modified=("reports/export.py",)))
        assert [h.episode.id for h in other.search(task).hits] == ["ep-0004"]
        other.delete("ep-0004")
        assert one.search(task).hits == []


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
@pytest.mark.parametrize("batch", [1, 20])
def test_acknowledged_records_survive_sigkill(tmp_path: Path, batch: int) -> None:
    """A child records without end and prints each batch once record returns; we kill it
    mid-stream, then every acknowledged episode is there, and no partial batch."""
    path = tmp_path / "e.sqlite3"
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(batch)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout is not None
    acknowledged = acknowledged_until_killed(child, 15)
    with SQLiteEpisodes(path) as store:
        stored = len(store.list(page_size=1000).episodes)
        assert stored % batch == 0 and stored >= len(acknowledged) * batch
        for b in acknowledged:
            for n in range(b * batch, (b + 1) * batch):
                found = store.search(TaskContext(goal=f"marker{n:05d}"), limit=1)
                assert [h.episode.id for h in found.hits] == [f"ep-{n:04d}"]


_WRITER = """
import sys
from himga.episodes import SQLiteEpisodes
from tests.episodes.helpers import episode

store = SQLiteEpisodes(sys.argv[1])
batch = int(sys.argv[2])
b = 0
while True:
    store.record_many(
        episode(n, f"Handle marker{n:05d} in the parser") for n in range(b * batch, (b + 1) * batch)
    )
    print(b, flush=True)
    b += 1
"""


def test_an_episode_an_earlier_himga_kept_to_the_nanosecond_is_read_to_the_microsecond(
    tmp_path: Path,
) -> None:
    # Before times were kept to the microsecond, a Timestamp's nanoseconds stayed in the stored
    # document; the filters and the order saw microseconds. Read now, its time is the one they
    # see, so a filter selects what its listed time says.
    path = tmp_path / "episodes.sqlite3"
    with SQLiteEpisodes(path) as store:
        store.record(episode(1))
    kept = episode(1).to_dict()["timestamp"]
    finer = kept.replace("Z", ".000000500Z")
    with sqlite3.connect(path) as db:
        (document,) = db.execute("SELECT document FROM episodes").fetchone()
        db.execute("UPDATE episodes SET document = ?", (document.replace(kept, finer),))
    with SQLiteEpisodes(path) as store:
        assert store.get("ep-0001").to_dict()["timestamp"] == kept
        listed, _ = store.list_documents()
        assert [row["timestamp"] for row in listed] == [kept]
        at = datetime.fromisoformat(kept)
        assert len(store.list(EpisodeFilter(since=at)).episodes) == 1
        assert store.list(EpisodeFilter(since=at + timedelta(microseconds=1))).episodes == []
