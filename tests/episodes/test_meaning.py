"""SearchEpisodes by meaning, with the real default embedding model (`make setup` fetches it):
an episode that shares no word with the task is found; its vector is stored with it, deleted
with it, and made again when the store is opened with a model it lacks."""

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from himga.embeddings import DEFAULT_MODEL, ModelError, shared_embedder
from himga.embeddings.endpoint import OpenAIEmbedder
from himga.episodes.base import EpisodeStore
from himga.episodes.meaning import EpisodeOptions, passage, query
from himga.episodes.postgres import PostgresEpisodes
from himga.episodes.registry import open_store, store_options
from himga.episodes.sqlite import SQLiteEpisodes
from himga.errors import InvalidArgument
from himga.records import TaskContext
from himga.service import RemoteEpisodes, create_server
from himga.storage.place import Place
from himga.storage.postgres import Database
from tests.embeddings.fake_embeddings import running
from tests.embeddings.models import default_embedder
from tests.episodes.helpers import episode

GOALS = [
    "Fix the flaky login test that times out on CI",
    "Add pagination to the orders API",
    "Upgrade the database driver to the new major version",
    "Write documentation for the deployment script",
    "Speed up the image thumbnail generation",
    "Translate the checkout page into German",
    "Remove unused CSS from the marketing site",
    "Add a dark mode toggle to the settings screen",
    "Rotate the expired TLS certificate on the staging server",
    "Refactor the invoice PDF renderer",
]
# Tasks that share no content word with the goal of the episode they are about (its number).
TASKS = [
    ("sign-in check keeps breaking intermittently in continuous integration", 1),
    ("make the purchase list return results in chunks", 2),
    ("renew the HTTPS cert that lapsed on the preprod machine", 9),
    ("night theme switch in preferences", 8),
    ("localize the payment screen to Deutsch", 6),
    ("faster preview pictures", 5),
    ("bill document layout cleanup", 10),
]
KINDS = ["inprocess", "sqlite", "postgres"]


@pytest.fixture(autouse=True, scope="module")
def the_tests_model() -> None:
    """The stores load the model through the process's cache: the one the tests hold."""
    shared_embedder.cache_clear()
    shared_embedder(DEFAULT_MODEL)  # fails naming the fetch command when it is not there
    assert shared_embedder(DEFAULT_MODEL).model_id == default_embedder().model_id


def _episodes() -> list:  # type: ignore[type-arg]
    return [episode(n, goal, modified=(), read=()) for n, goal in enumerate(GOALS, 1)]


def _found(store: EpisodeStore) -> int:
    """How many of TASKS find their episode in the top 3."""
    found = 0
    for task, number in TASKS:
        hits = store.search(TaskContext(goal=task), limit=3).hits
        found += f"ep-{number:04d}" in [hit.episode.id for hit in hits]
    return found


def _namespace() -> str:
    return f"meaning-{uuid.uuid4().hex}"


@pytest.mark.parametrize("kind", KINDS)
def test_a_task_finds_the_episode_it_means_with_a_model_and_not_without(
    kind: str, place_of: Callable[[str], Place]
) -> None:
    place = place_of(kind)
    with_model = open_store(kind, _namespace(), place, EpisodeOptions(DEFAULT_MODEL))
    keyword = open_store(kind, _namespace(), place, EpisodeOptions())
    for store in (with_model, keyword):
        store.record_many(_episodes())
    assert _found(keyword) == 0
    assert _found(with_model) >= 5  # of 7 (6 measured when this was written)
    with_model.close()
    keyword.close()


@pytest.mark.parametrize("kind", KINDS)
def test_words_still_rank_first_and_unrelated_episodes_stay_out(
    kind: str, place_of: Callable[[str], Place]
) -> None:
    store = open_store(kind, _namespace(), place_of(kind), EpisodeOptions(DEFAULT_MODEL))
    store.record_many(_episodes())
    hits = store.search(TaskContext(goal="rotate the TLS certificate"), limit=5).hits
    assert hits[0].episode.id == "ep-0009"
    assert len(hits) < len(GOALS) // 2  # nothing that neither shares a word nor means it
    store.close()


def _vectors(path: Path) -> dict[str, tuple[str, np.ndarray]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT id, model, vector FROM episode_vectors").fetchall()
    return {i: (model, np.frombuffer(blob, dtype=np.float32)) for i, model, blob in rows}


def test_sqlite_keeps_each_vector_with_its_episode_and_deletes_it_with_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "episodes.sqlite3"
    store = SQLiteEpisodes(path, shared_embedder(DEFAULT_MODEL))
    store.record_many(_episodes())
    stored = _vectors(path)
    model_id = default_embedder().model_id
    assert sorted(stored) == [f"ep-{n:04d}" for n in range(1, 11)]
    assert {model for model, _ in stored.values()} == {model_id}
    expected = default_embedder().embed_passages([passage(_episodes()[8].to_dict())])[0]
    assert np.array_equal(stored["ep-0009"][1], expected)
    assert store.delete("ep-0009")
    assert "ep-0009" not in _vectors(path)
    store.close()
    # Reopened: the vectors are read back, not made again, and still rank.
    reopened = SQLiteEpisodes(path, shared_embedder(DEFAULT_MODEL))
    hits = reopened.search(TaskContext(goal="night theme switch in preferences"), limit=3).hits
    assert hits[0].episode.id == "ep-0008"
    assert _vectors(path).keys() == stored.keys() - {"ep-0009"}
    reopened.close()


def test_a_store_recorded_without_a_model_is_embedded_when_opened_with_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "episodes.sqlite3"
    with SQLiteEpisodes(path) as plain:
        plain.record_many(_episodes())
    assert _vectors(path) == {}
    with SQLiteEpisodes(path, shared_embedder(DEFAULT_MODEL)) as store:
        assert _found(store) >= 5
    assert len(_vectors(path)) == len(GOALS)


@pytest.mark.parametrize(
    "left",
    [
        "model = 'other:0', vector = zeroblob(1536)",  # another model's
        "vector = zeroblob(32)",  # this model's name, served at another size (an endpoint's)
    ],
)
def test_a_store_embedded_with_another_model_gets_this_models_vectors(
    tmp_path: Path, left: str
) -> None:
    path = tmp_path / "episodes.sqlite3"
    with SQLiteEpisodes(path, shared_embedder(DEFAULT_MODEL)) as store:
        store.record_many(_episodes())
    with sqlite3.connect(path) as db:  # as another model would have left them
        db.execute(f"UPDATE episode_vectors SET {left}")
    with SQLiteEpisodes(path, shared_embedder(DEFAULT_MODEL)) as store:
        assert _found(store) >= 5
    embedder = default_embedder()
    assert {model for model, _ in _vectors(path).values()} == {embedder.model_id}
    assert {len(vector) for _, vector in _vectors(path).values()} == {embedder.dimension}


def test_recording_an_episode_again_replaces_its_vector(tmp_path: Path) -> None:
    path = tmp_path / "episodes.sqlite3"
    with SQLiteEpisodes(path, shared_embedder(DEFAULT_MODEL)) as store:
        store.record_many(_episodes())
        store.record(episode(8, "Rotate the expired TLS certificate", modified=(), read=()))
        hits = store.search(TaskContext(goal="night theme switch in preferences"), limit=3).hits
        assert "ep-0008" not in [hit.episode.id for hit in hits]
    expected = default_embedder().embed_passages(["Rotate the expired TLS certificate"])[0]
    assert np.array_equal(_vectors(path)["ep-0008"][1], expected)


def test_the_option_comes_through_the_registry_and_a_bad_one_is_refused() -> None:
    options = store_options("sqlite", {"embedding_model": DEFAULT_MODEL})
    assert options == EpisodeOptions(DEFAULT_MODEL)
    assert store_options("inprocess") == EpisodeOptions()
    with pytest.raises(InvalidArgument, match=r"options\.embedding_model"):
        store_options("sqlite", {"embedding_model": " e5-small-v2"})


def test_the_query_is_the_goal_and_the_free_text() -> None:
    assert query(TaskContext(goal="Fix the login"), "  on CI ") == "Fix the login on CI"
    row = episode(1, "Fix it", error=("KeyError", "no 'id'", "check the key")).to_dict()
    assert passage(row) == "Fix it. KeyError: no 'id' (resolved: check the key)"


def _postgres_vectors(database: Database, namespace: str) -> dict[str, str]:
    with database.transaction() as connection:
        rows = connection.execute(
            "SELECT v.id, v.model FROM himga_episode_vectors AS v JOIN himga_namespaces AS n "
            "ON n.id = v.namespace WHERE n.name = %s",
            (namespace,),
        ).fetchall()
    return dict(rows)


def test_postgresql_keeps_the_vectors_for_every_server_and_deletes_them_with_the_episode(
    database: Database,
) -> None:
    namespace = _namespace()
    model = shared_embedder(DEFAULT_MODEL)
    first = PostgresEpisodes(database, namespace, model)
    first.record_many(_episodes())
    assert _postgres_vectors(database, namespace) == {
        f"ep-{n:04d}": model.model_id for n in range(1, 11)
    }
    # Another server over the database reads them (and embeds nothing).
    second = PostgresEpisodes(database, namespace, model)
    assert _found(second) >= 5
    assert first.delete("ep-0008")
    assert "ep-0008" not in _postgres_vectors(database, namespace)
    hits = second.search(TaskContext(goal="night theme switch in preferences"), limit=3).hits
    assert "ep-0008" not in [hit.episode.id for hit in hits]
    # Recorded by a server without a model: one with it embeds them when it reads them.
    plain = PostgresEpisodes(database, namespace)
    plain.record(episode(11, "Add a dark mode toggle to the settings screen"))
    assert "ep-0011" not in _postgres_vectors(database, namespace)
    hits = second.search(TaskContext(goal="night theme switch in preferences"), limit=3).hits
    assert hits[0].episode.id == "ep-0011"
    assert _postgres_vectors(database, namespace)["ep-0011"] == model.model_id


def test_a_server_given_the_option_ranks_by_meaning_over_the_wire(tmp_path: Path) -> None:
    server, port = create_server(
        "127.0.0.1:0", data_dir=tmp_path, episode_options={"embedding_model": DEFAULT_MODEL}
    )
    try:
        remote = RemoteEpisodes(f"127.0.0.1:{port}", _namespace())
        remote.record_many(_episodes())
        assert _found(remote) >= 5
        remote.close()
    finally:
        server.stop(None)


def test_a_server_refuses_to_start_with_a_model_it_cannot_open(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    with pytest.raises(ModelError, match=rf"{model / 'card.json'}: missing"):
        create_server(
            "127.0.0.1:0", data_dir=tmp_path, episode_options={"embedding_model": str(model)}
        )
    with pytest.raises(InvalidArgument, match=r"options\.model: not an option of 'sqlite'"):
        create_server("127.0.0.1:0", data_dir=tmp_path, episode_options={"model": "x"})


def test_an_endpoint_that_fails_stores_nothing_and_the_store_goes_on(tmp_path: Path) -> None:
    with running() as endpoint:
        store = SQLiteEpisodes(tmp_path / "e.sqlite3", OpenAIEmbedder("x", base_url=endpoint.url))
        store.record(episode(1, "Add pagination to the orders API"))
        endpoint.status = 401
        with pytest.raises(ModelError, match="HTTP 401"):
            store.record(episode(2, "Fix the flaky login test"))
        assert [e.id for e in store.list().episodes] == ["ep-0001"]
        assert list(_vectors(tmp_path / "e.sqlite3")) == ["ep-0001"]
        endpoint.status = 200
        store.record(episode(2, "Fix the flaky login test"))
        assert sorted(_vectors(tmp_path / "e.sqlite3")) == ["ep-0001", "ep-0002"]
        store.close()
