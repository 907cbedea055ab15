"""An episode store whose features' terms an earlier himga made opens with them made again from
its episodes: the himga before words kept their combining marks stored "लॉगिन" as the letters
between its vowel signs, so a Hindi goal could not be found by its words."""

import re
import sqlite3
import uuid
from pathlib import Path

import pytest

from himga.episodes import SQLiteEpisodes
from himga.episodes.base import EpisodeStore
from himga.episodes.postgres import PostgresEpisodes
from himga.episodes.sqlite import FORMAT
from himga.errors import IncompatibleStoreError
from himga.records import TaskContext
from himga.storage.postgres import Database
from tests.episodes.helpers import episode

GOAL = "लॉगिन पेज की गड़बड़ी ठीक करें"  # "fix the login page's glitch"
ASKED = TaskContext(goal="लॉगिन पेज")
OLD_FORMAT = "episodes 1; terms: porter stems, stopwords"
# What that himga made of GOAL: runs of letters without their marks, single letters dropped.
OLD_GOAL_TERMS = " ".join(w for w in re.findall(r"[^\W_]+", GOAL) if len(w) > 1)


def _record(store: EpisodeStore) -> None:
    store.record_many(
        [
            episode(1, GOAL, modified=("web/login.py",)),
            episode(2, "Add pagination to the orders API"),
            episode(3, "Speed up the report export", modified=("reports/export.py",)),
        ]
    )


def _found(store: EpisodeStore) -> list[str]:
    return [hit.episode.id for hit in store.search(ASKED, limit=3).hits]


def test_sqlite_makes_the_features_again(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    with SQLiteEpisodes(path) as store:
        _record(store)
        assert _found(store)[:1] == ["ep-0001"]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE himga_meta SET value = ? WHERE key = 'format'", (OLD_FORMAT,))
        db.execute(
            "UPDATE episodes SET features = json_set(features, '$.g', ?) WHERE id = 'ep-0001'",
            (OLD_GOAL_TERMS,),
        )
    with SQLiteEpisodes(path) as store:
        assert _found(store)[:1] == ["ep-0001"]
        assert len(store.list().episodes) == 3
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM himga_meta WHERE key = 'format'").fetchone() == (
            FORMAT,
        )


@pytest.mark.parametrize("format", ["episodes 0", "episodes 2; terms: something newer"])
def test_sqlite_refuses_other_tables(tmp_path: Path, format: str) -> None:
    path = tmp_path / "e.sqlite3"
    SQLiteEpisodes(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE himga_meta SET value = ? WHERE key = 'format'", (format,))
    with pytest.raises(IncompatibleStoreError, match=f"format '{format}'.*move the file away"):
        SQLiteEpisodes(path)


def test_postgresql_makes_the_features_again_for_every_server(database: Database) -> None:
    namespace = f"terms-{uuid.uuid4().hex}"
    first = PostgresEpisodes(database, namespace)
    _record(first)
    assert _found(first)[:1] == ["ep-0001"]
    with database.transaction() as connection:  # as that himga left it, read anew by `first`
        connection.execute(
            "UPDATE himga_namespaces SET episode_terms = NULL, "
            "episode_version = episode_version + 1, episode_generation = episode_generation + 1 "
            "WHERE name = %s",
            (namespace,),
        )
        connection.execute(
            "UPDATE himga_episodes SET features = jsonb_set(features::jsonb, '{g}', to_jsonb("
            "%s::text))::text WHERE id = 'ep-0001' AND namespace = "
            "(SELECT id FROM himga_namespaces WHERE name = %s)",
            (OLD_GOAL_TERMS, namespace),
        )
    assert _found(first)[:1] != ["ep-0001"]
    # A server that starts now makes them again, and one that had read them reads them anew.
    second = PostgresEpisodes(database, namespace)
    assert _found(second)[:1] == ["ep-0001"]
    assert _found(first)[:1] == ["ep-0001"]
