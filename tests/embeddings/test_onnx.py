"""The `onnx` kind on the real default model (e5-small-v2, int8): meaning, the vectors' form,
a text's vector whatever its batch-mates and however many runs go at once, truncation to the
window, and refusals."""

import json
import os
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from himga.embeddings import DEFAULT_MODEL, ModelError, open_embedder
from himga.embeddings.base import unit_rows
from himga.embeddings.cache import models_dir
from himga.embeddings.card import CARD, MODEL, TOKENIZER, read_card
from himga.embeddings.onnx import MOST_RUNS, OnnxEmbedder, default_runs, default_threads
from himga.errors import InvalidArgument
from tests.embeddings.models import default_embedder

# Questions whose evidence shares no content word with them, and turns beside the evidence.
MEANING = [
    (
        "Where did Caroline go?",
        "Caroline: I went to an LGBTQ support group.",
        ["Melanie: My kids love painting with me.", "Caroline: The weather is nice today."],
    ),
    (
        "What beverage do I prefer?",
        "I like green tea.",
        ["I walk my dog every morning.", "My car is blue.", "I moved to Boston last year."],
    ),
    (
        "How many children does Melanie have?",
        "Melanie: My three kids keep me busy.",
        ["Melanie: I painted a lake last week.", "Caroline: I read a book on adoption."],
    ),
]


def _model() -> OnnxEmbedder:
    embedder = default_embedder()
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


@pytest.mark.parametrize(("question", "evidence", "others"), MEANING)
def test_a_question_is_nearest_the_turn_that_answers_it(
    question: str, evidence: str, others: list[str]
) -> None:
    embedder = _model()
    query = embedder.embed_queries([question])[0]
    passages = embedder.embed_passages([*others, evidence])
    assert int(np.argmax(passages @ query)) == len(others)


def test_vectors_are_unit_float32_rows_of_the_dimension_with_a_stable_model_id() -> None:
    embedder = _model()
    vectors = embedder.embed_passages(["one text", "and another, somewhat longer, text"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (2, embedder.dimension) == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sha = read_card(embedder.directory).files[MODEL]
    assert embedder.model_id == f"{DEFAULT_MODEL}:{sha[:16]}"
    assert embedder.embed_passages([]).shape == (0, 384)


def test_a_query_and_a_passage_of_one_text_differ_by_the_prefixes() -> None:
    embedder = _model()
    text = "I went hiking with my family."
    assert embedder.query_prefix == "query: " and embedder.passage_prefix == "passage: "
    query, passage = embedder.embed_queries([text])[0], embedder.embed_passages([text])[0]
    assert not np.array_equal(query, passage)
    assert np.array_equal(passage, unit_rows(embedder._embed(["passage: " + text]))[0])
    assert np.array_equal(query, unit_rows(embedder._embed(["query: " + text]))[0])


def test_a_text_has_the_same_vector_whatever_it_is_embedded_with() -> None:
    # The int8 model quantises activations over a whole run: a text run beside others would
    # move. A correction stored later must score as the text stored first.
    embedder = _model()
    text = "Caroline: I went to an LGBTQ support group yesterday and it was powerful."
    alone = embedder.embed_passages([text])[0]
    mates = ["ok", "Melanie: " + "we painted a sunset by the lake with the kids " * 8, text]
    assert np.array_equal(embedder.embed_passages(mates)[2], alone)
    assert np.array_equal(embedder.embed_passages([text, text])[1], alone)


def test_a_text_past_the_window_is_truncated_to_max_tokens() -> None:
    embedder = _model()
    long = " ".join(f"word{i}" for i in range(2000))
    assert len(embedder.token_ids("passage: " + long)) == embedder.max_tokens == 512
    assert len(embedder.token_ids("passage: a short one")) < 20
    # Anything past the window changes nothing: the text was cut, not split.
    longer = long + " and a different ending the model never sees"
    assert np.array_equal(embedder.embed_passages([long]), embedder.embed_passages([longer]))


@pytest.mark.parametrize("empty", ["", "   ", "\n\t"])
def test_an_empty_text_is_refused_naming_its_place(empty: str) -> None:
    with pytest.raises(InvalidArgument, match=r"texts\[1\].*empty"):
        _model().embed_passages(["fine", empty])


def test_one_string_instead_of_a_list_is_refused() -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        _model().embed_queries("a question?")  # type: ignore[arg-type]


def _copy_model(tmp_path: Path) -> Path:
    """A model directory beside the cache's: its weights linked, its small files copied."""
    source = _model().directory
    target = tmp_path / "model"
    target.mkdir()
    (target / MODEL).symlink_to(source / MODEL)
    for name in (TOKENIZER, CARD):
        shutil.copy(source / name, target / name)
    return target


def test_a_model_directory_opens_by_its_path(tmp_path: Path) -> None:
    directory = _copy_model(tmp_path)
    embedder = open_embedder(directory)
    assert embedder.model_id == _model().model_id
    text = ["Melanie: I ran a charity race."]
    assert np.array_equal(embedder.embed_passages(text), _model().embed_passages(text))
    assert open_embedder(str(directory)).model_id == embedder.model_id


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    directory = _copy_model(tmp_path)
    (directory / TOKENIZER).unlink()
    with pytest.raises(ModelError, match=rf"{directory / TOKENIZER}: missing"):
        open_embedder(directory)


def test_a_file_whose_checksum_differs_is_refused_naming_it(tmp_path: Path) -> None:
    directory = _copy_model(tmp_path)
    with (directory / TOKENIZER).open("a") as file:
        file.write(" ")
    with pytest.raises(ModelError, match=rf"{directory / TOKENIZER}: SHA-256 .* differs"):
        open_embedder(directory)


def test_a_catalog_model_that_differs_names_the_command_that_fetches_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_MODELS", str(tmp_path))
    directory = _copy_model(tmp_path)
    directory.rename(tmp_path / DEFAULT_MODEL)
    (tmp_path / DEFAULT_MODEL / TOKENIZER).write_text("{}")
    with pytest.raises(ModelError, match=rf"himga models fetch {DEFAULT_MODEL} --force"):
        open_embedder(DEFAULT_MODEL)


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("pooling", "max", "pooling must be one of mean, cls"),
        ("batching", "padded", "batching must be one of alone, by_length"),
        ("max_tokens", 0, "max_tokens must be a positive integer"),
        ("format", 2, "format must be 1"),
        ("files", {}, "files must name model.onnx"),
    ],
)
def test_a_card_that_breaks_a_rule_is_refused_naming_the_field(
    tmp_path: Path, key: str, value: object, says: str
) -> None:
    directory = _copy_model(tmp_path)
    card = json.loads((directory / CARD).read_text())
    card[key] = value
    (directory / CARD).write_text(json.dumps(card))
    with pytest.raises(ModelError, match=rf"{directory / CARD}: {says}"):
        open_embedder(directory)


@pytest.mark.parametrize(
    ("key", "value"),
    [("pooling", "cls"), ("query_prefix", ""), ("max_tokens", 128), ("batching", "by_length")],
)
def test_a_card_using_a_catalog_models_weights_otherwise_must_have_a_name_of_its_own(
    tmp_path: Path, key: str, value: object
) -> None:
    # The model id is the card's name and the weights' SHA-256: under the catalog's name, a
    # card saying another pooling would name vectors made another way with the catalog's id.
    directory = _copy_model(tmp_path)
    card = json.loads((directory / CARD).read_text())
    (directory / CARD).write_text(json.dumps({**card, key: value}))
    with pytest.raises(
        ModelError,
        match=rf"{directory / CARD}: holds the weights of catalog model '{DEFAULT_MODEL}' under "
        rf"its name, but says another {key} than the catalog; .* or give the card another name",
    ):
        open_embedder(directory)
    (directory / CARD).write_text(json.dumps({**card, key: value, "name": "my-e5"}))
    renamed = open_embedder(directory)
    assert renamed.model_id != _model().model_id and renamed.model_id.startswith("my-e5:")


def test_a_card_whose_dimension_is_not_the_models_is_refused_at_open(tmp_path: Path) -> None:
    directory = _copy_model(tmp_path)
    card = json.loads((directory / CARD).read_text())
    (directory / CARD).write_text(json.dumps({**card, "dimension": 768, "name": "wide"}))
    with pytest.raises(
        ModelError, match=rf"{directory / CARD}: dimension 768, but the model's vectors have 384"
    ):
        open_embedder(directory)


def test_another_dimension_of_a_model_of_no_fixed_width_is_named_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many exports leave the output's width a name; the open's run then finds the real one.
    import onnxruntime

    session = onnxruntime.InferenceSession

    class NamedWidth:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self._session = session(*args, **kwargs)

        def __getattr__(self, name: str) -> object:
            return getattr(self._session, name)

        def get_outputs(self) -> list[SimpleNamespace]:
            return [
                SimpleNamespace(name=o.name, shape=[*o.shape[:-1], "hidden"])
                for o in self._session.get_outputs()
            ]

    monkeypatch.setattr(onnxruntime, "InferenceSession", NamedWidth)
    directory = _copy_model(tmp_path)
    card = json.loads((directory / CARD).read_text())
    (directory / CARD).write_text(json.dumps({**card, "dimension": 768, "name": "wide"}))
    with pytest.raises(ModelError, match=r"dimension 768, but the model's vectors have shape"):
        open_embedder(directory)


def test_a_window_past_the_models_own_is_refused_at_open_naming_the_card_field(
    tmp_path: Path,
) -> None:
    directory = _copy_model(tmp_path)
    card = json.loads((directory / CARD).read_text())
    (directory / CARD).write_text(json.dumps({**card, "max_tokens": 4096, "name": "long"}))
    with pytest.raises(
        ModelError,
        match=rf"{directory / CARD}: max_tokens 4096, but the model fails on a text of 4096 "
        r"tokens \(its window is shorter\)",
    ):
        open_embedder(directory)
    # The model's own window opens, under a name of its own, and embeds as the catalog's.
    (directory / CARD).write_text(json.dumps({**card, "max_tokens": 512, "name": "long"}))
    embedder = open_embedder(directory)
    long = ["Melanie: " + "I ran a charity race. " * 200]
    assert np.array_equal(embedder.embed_passages(long), _model().embed_passages(long))


def test_a_text_holding_a_lone_surrogate_is_refused_naming_its_place() -> None:
    with pytest.raises(InvalidArgument, match=r"texts\[1\]: must be valid Unicode"):
        _model().embed_passages(["fine", "broken \udc80"])


def test_batching_by_length_keeps_each_text_in_its_place(tmp_path: Path) -> None:
    # An fp32 model may share runs between texts of one length (nothing padded); the int8 one
    # drifts a little in a shared run, so each vector stays close to its own text's alone.
    directory = _copy_model(tmp_path)
    card = json.loads((directory / CARD).read_text())
    (directory / CARD).write_text(
        json.dumps({**card, "batching": "by_length", "name": "e5-by-length"})
    )
    batched = open_embedder(directory)
    texts = [f"Melanie: I painted {n} pictures of the lake" for n in ("two", "three", "four")]
    texts += ["Caroline: adoption agencies", "ok", "Melanie: I painted five pictures, yes"]
    alone = np.concatenate([_model().embed_passages([t]) for t in texts])
    together = batched.embed_passages(texts)
    similarity = together @ alone.T
    assert list(np.argmax(similarity, axis=1)) == list(range(len(texts)))
    assert np.all(np.diag(similarity) > 0.99)


def test_an_unknown_name_is_refused_saying_what_a_model_can_be() -> None:
    with pytest.raises(ModelError, match=r"not a catalog name .*e5-small-v2.*openai:MODEL"):
        open_embedder("e5-large")


def test_a_catalog_model_not_in_the_cache_names_the_fetch_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_MODELS", str(tmp_path / "empty"))
    assert models_dir() == tmp_path / "empty"
    with pytest.raises(ModelError, match="run `himga models fetch all-minilm-l6-v2`"):
        open_embedder("all-minilm-l6-v2")


def test_the_model_runs_on_one_thread_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIMGA_EMBEDDING_THREADS", raising=False)
    assert default_threads() == 1
    monkeypatch.setenv("HIMGA_EMBEDDING_THREADS", "3")
    assert default_threads() == 3
    many = OnnxEmbedder(_model().directory)  # the same vectors on three threads
    text = ["Caroline: I went to an LGBTQ support group."]
    assert np.allclose(many.embed_passages(text), _model().embed_passages(text), atol=1e-5)


def test_a_batch_keeps_a_run_going_on_each_core_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HIMGA_EMBEDDING_RUNS", raising=False)
    assert default_runs() == min(MOST_RUNS, len(os.sched_getaffinity(0)))
    monkeypatch.setenv("HIMGA_EMBEDDING_RUNS", "3")
    assert default_runs() == 3
    assert OnnxEmbedder(_model().directory).runs == 3


@pytest.mark.parametrize("variable", ["HIMGA_EMBEDDING_THREADS", "HIMGA_EMBEDDING_RUNS"])
@pytest.mark.parametrize("bad", ["0", "-2", "four", "1.5", "100000"])
def test_a_bad_count_in_the_environment_is_refused_naming_it(
    variable: str, bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, bad)
    with pytest.raises(
        ModelError, match=f"{variable} must be a positive integer of at most 256, not '{bad}'"
    ):
        OnnxEmbedder(_model().directory)


@pytest.mark.parametrize("batching", ["alone", "by_length"])
def test_runs_side_by_side_give_each_text_the_vector_of_runs_one_at_a_time(
    batching: str,
) -> None:
    texts = [f"Melanie: I painted {n} pictures of the lake" for n in ("two", "six", "nine")]
    texts += ["Caroline: adoption agencies", "ok", "Caroline: " + "I read a book " * 30] * 3
    directory = _model().directory
    one = OnnxEmbedder(directory, batching=batching, runs=1).embed_passages(texts)
    assert np.array_equal(
        OnnxEmbedder(directory, batching=batching, runs=3).embed_passages(texts), one
    )


def test_a_run_that_fails_fails_the_batch_and_the_next_batch_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = OnnxEmbedder(_model().directory, runs=2)
    texts = ["Caroline: adoption agencies", "Melanie: the lake", "Caroline: a book", "ok"]
    run = embedder._run

    def failing(ids: list[list[int]], type_ids: list[list[int]]) -> np.ndarray:
        if len(ids[0]) == len(embedder.token_ids(embedder.passage_prefix + "ok")):
            raise ModelError("the model failed on this run")
        return run(ids, type_ids)

    monkeypatch.setattr(embedder, "_run", failing)
    with pytest.raises(ModelError, match="failed on this run"):
        embedder.embed_passages(texts)
    monkeypatch.setattr(embedder, "_run", run)
    assert np.array_equal(embedder.embed_passages(texts), _model().embed_passages(texts))


def test_a_batch_runs_on_the_pool_and_a_single_text_in_its_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = OnnxEmbedder(_model().directory, runs=2)
    run, where = embedder._run, []

    def noted(ids: list[list[int]], type_ids: list[list[int]]) -> np.ndarray:
        where.append(threading.current_thread().name)
        return run(ids, type_ids)

    monkeypatch.setattr(embedder, "_run", noted)
    embedder.embed_queries(["Where did Caroline go?"])
    assert where == [threading.current_thread().name]
    where.clear()
    embedder.embed_passages(["Caroline: adoption agencies", "Melanie: the lake", "ok"])
    assert len(where) == 3 and all(name.startswith("himga-embed") for name in where)
