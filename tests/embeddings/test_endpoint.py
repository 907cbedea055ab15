"""The `openai` kind against a local OpenAI-compatible embeddings endpoint, through the SDK."""

import numpy as np
import pytest

from himga.embeddings import ModelError, open_embedder
from himga.embeddings.base import unit_rows
from himga.embeddings.endpoint import OpenAIEmbedder, parse_spec
from himga.errors import InvalidArgument, ModelUnreachable
from tests.embeddings.fake_embeddings import DIMENSION, letters, running


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIMGA_EMBEDDINGS_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_a_local_server_embeds_in_order_as_unit_vectors() -> None:
    with running() as server:
        embedder = open_embedder(f"openai:letters@{server.url}")
        assert (embedder.model_id, embedder.dimension) == ("openai:letters", DIMENSION)
        texts = ["green tea", "a beverage", "zzz"]
        vectors = embedder.embed_passages(texts)
        expected = unit_rows(np.asarray([letters(t) for t in texts], dtype=np.float32))
        assert vectors.dtype == np.float32
        assert np.allclose(vectors, expected, atol=1e-6)
        assert server.requests[-1] == {
            "model": "letters",
            "input": texts,
            "encoding_format": "float",
        }
        assert server.keys[-1] == "EMPTY"  # a local server needs no key
        embedder.close()


def test_prefixes_are_sent_with_the_text() -> None:
    with running() as server:
        embedder = OpenAIEmbedder(
            "e5", base_url=server.url, query_prefix="query: ", passage_prefix="passage: "
        )
        embedder.embed_queries(["where?"])
        embedder.embed_passages(["there"])
        assert [r["input"] for r in server.requests[1:]] == [["query: where?"], ["passage: there"]]


def test_many_texts_go_in_several_requests() -> None:
    with running() as server:
        embedder = open_embedder(f"openai:letters@{server.url}")
        texts = [f"text {'a' * n}" for n in range(600)]
        vectors = embedder.embed_passages(texts)
        assert [len(r["input"]) for r in server.requests[1:]] == [256, 256, 88]
        assert np.allclose(vectors[599], unit_rows(np.asarray([letters(texts[599])]))[0])


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with running(api_key="secret") as server:
        with pytest.raises(ModelError, match="HTTP 401"):
            open_embedder(f"openai:letters@{server.url}")
        monkeypatch.setenv("OPENAI_API_KEY", "secret")
        assert open_embedder(f"openai:letters@{server.url}").dimension == DIMENSION
        monkeypatch.setenv("HIMGA_EMBEDDINGS_API_KEY", "wrong")  # it comes first
        with pytest.raises(ModelError, match="HTTP 401"):
            open_embedder(f"openai:letters@{server.url}")


def test_a_failing_server_is_a_model_error_naming_the_endpoint() -> None:
    with running() as server:
        embedder = OpenAIEmbedder("letters", base_url=server.url)
        server.status = 401  # the model refused: asking again cannot help
        with pytest.raises(
            ModelError, match=r"embeddings endpoint .*127\.0\.0\.1.* HTTP 401"
        ) as refused:
            embedder.embed_passages(["text"])
        assert not isinstance(refused.value, ModelUnreachable)
        server.status = 400  # these texts refused (too long, say): the caller's, no address
        with pytest.raises(
            InvalidArgument, match="text: the embeddings endpoint refused it: HTTP 400"
        ) as texts:
            embedder.embed_passages(["text"])
        assert "127.0.0.1" not in str(texts.value)
        server.status = 503  # overloaded: the SDK asks again, then it is worth a later call
        with pytest.raises(ModelUnreachable, match="HTTP 503"):
            embedder.embed_passages(["text"])
    with pytest.raises(ModelUnreachable, match="embeddings endpoint"):  # nobody answers now
        embedder.embed_passages(["text"])
    with running() as server:
        server.status = 400  # at the probe that opens it, any refusal is the model's
        with pytest.raises(ModelError, match="HTTP 400"):
            OpenAIEmbedder("letters", base_url=server.url)


def test_an_empty_text_is_refused_before_any_request() -> None:
    with running() as server:
        embedder = open_embedder(f"openai:letters@{server.url}")
        with pytest.raises(InvalidArgument, match=r"texts\[0\]"):
            embedder.embed_queries([""])
        assert len(server.requests) == 1  # the probe at open only


def test_the_openai_api_without_a_key_is_refused_saying_where_to_set_one() -> None:
    with pytest.raises(ModelError, match="HIMGA_EMBEDDINGS_API_KEY or OPENAI_API_KEY"):
        open_embedder("openai:text-embedding-3-small")


@pytest.mark.parametrize("spec", ["openai:", "openai:@http://x", "openai:model@"])
def test_a_malformed_spec_is_refused_showing_the_form(spec: str) -> None:
    with pytest.raises(ModelError, match="openai:MODEL@BASE_URL"):
        parse_spec(spec)


def test_a_spec_names_the_model_and_the_base_url() -> None:
    assert parse_spec("openai:nomic-embed-text@http://127.0.0.1:11434/v1") == (
        "nomic-embed-text",
        "http://127.0.0.1:11434/v1",
    )
    assert parse_spec("openai:text-embedding-3-small") == ("text-embedding-3-small", None)
