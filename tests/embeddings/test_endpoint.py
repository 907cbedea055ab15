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


def test_prefixes_given_in_the_spec_are_sent_with_the_text_and_name_the_vectors() -> None:
    with running() as server:
        spec = f"openai:e5@{server.url}#query=query:%20&passage=passage:%20"
        embedder = open_embedder(spec)
        embedder.embed_queries(["where?"])
        embedder.embed_passages(["there"])
        assert [r["input"] for r in server.requests[1:]] == [["query: where?"], ["passage: there"]]
        # other prefixes, other vectors: the id says which, in one spelling of the spec's
        assert embedder.model_id == "openai:e5#query=query:%20&passage=passage:%20"
        assert open_embedder(f"openai:e5@{server.url}").model_id == "openai:e5"
        only = open_embedder(f"openai:e5@{server.url}#query=search_query:%20")
        assert only.model_id == "openai:e5#query=search_query:%20"
        only.embed_passages(["there"])
        assert server.requests[-1]["input"] == ["there"]


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


GARBLED = {
    "not JSON": (b"{not json", "application/json"),
    "a web page": (b"<html><body>Sign in</body></html>", "text/html"),
    "no data": (b'{"object": "list"}', "application/json"),
    "rows of unequal length": (
        b'{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1]}]}',
        "application/json",
    ),
    "base64": (b'{"data": [{"index": 0, "embedding": "AACAPw=="}]}', "application/json"),
}


@pytest.mark.parametrize("answer", GARBLED.values(), ids=GARBLED)
def test_an_answer_that_is_no_embeddings_is_a_model_error_naming_the_endpoint(
    answer: tuple[bytes, str],
) -> None:
    with running() as server:
        embedder = OpenAIEmbedder("letters", base_url=server.url)
        server.raw = answer  # later: a proxy's error page, say, which a later call may not meet
        with pytest.raises(ModelUnreachable, match=r"embeddings endpoint .*127\.0\.0\.1.*answered"):
            embedder.embed_passages(["text", "more"])
        # at the probe: the address is no embeddings endpoint
        with pytest.raises(ModelError, match="is it an OpenAI-compatible embeddings") as bad:
            OpenAIEmbedder("letters", base_url=server.url)
        assert not isinstance(bad.value, ModelUnreachable)


@pytest.mark.parametrize(
    "vector",
    [lambda _: [0.0] * DIMENSION, lambda _: [float("nan")] * DIMENSION,
     lambda _: [float("inf")] + [1.0] * (DIMENSION - 1)],
    ids=["zeros", "NaN", "infinity"],
)  # fmt: skip
def test_a_vector_without_a_direction_is_refused_before_it_is_stored(vector: object) -> None:
    with running() as server:
        embedder = OpenAIEmbedder("letters", base_url=server.url)
        server.vector = vector  # type: ignore[assignment]
        with pytest.raises(ModelError, match=r"zeros or of a NaN or infinity for texts\[0\]"):
            embedder.embed_passages(["text"])


def test_a_text_holding_a_lone_surrogate_is_refused_naming_it() -> None:
    with running() as server:
        embedder = OpenAIEmbedder("letters", base_url=server.url)
        with pytest.raises(InvalidArgument, match=r"texts\[1\]: must be valid Unicode"):
            embedder.embed_passages(["fine", "broken \ud800 text"])
        assert len(server.requests) == 1  # the probe only


def test_a_server_that_does_not_answer_fails_the_call_after_the_timeout_and_two_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with running() as server:
        embedder = open_embedder(f"openai:letters@{server.url}")
        monkeypatch.setenv("HIMGA_EMBEDDINGS_TIMEOUT", "0.2")
        slow = open_embedder(f"openai:letters@{server.url}")
        server.delay = 1.0
        with pytest.raises(ModelUnreachable, match=r"no answer in 0\.2 s, asked 3 times"):
            slow.embed_passages(["text"])
        assert len(server.requests) == 2 + 3  # each probe, then the call and its two retries
        assert isinstance(embedder, OpenAIEmbedder) and embedder.timeout == 20.0  # the default
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv("HIMGA_EMBEDDINGS_TIMEOUT", bad)
        with pytest.raises(ModelError, match="HIMGA_EMBEDDINGS_TIMEOUT must be a positive number"):
            open_embedder("openai:letters@http://127.0.0.1:9/v1")


def test_an_empty_text_is_refused_before_any_request() -> None:
    with running() as server:
        embedder = open_embedder(f"openai:letters@{server.url}")
        with pytest.raises(InvalidArgument, match=r"texts\[0\]"):
            embedder.embed_queries([""])
        assert len(server.requests) == 1  # the probe at open only


def test_the_openai_api_without_a_key_is_refused_saying_where_to_set_one() -> None:
    with pytest.raises(ModelError, match="HIMGA_EMBEDDINGS_API_KEY or OPENAI_API_KEY"):
        open_embedder("openai:text-embedding-3-small")


@pytest.mark.parametrize(
    "spec",
    ["openai:", "openai:@http://x", "openai:model@", "openai:m@not a url",
     "openai:m@127.0.0.1:8081/v1", "openai:m@ftp://host/v1", "openai:m@http:///v1",
     "openai:m#", "openai:m#query", "openai:m#prefix=x", "openai:m#query=a&query=b",
     "openai:m@http://[::1/v1", "openai:m@http://host:port/v1", "openai:m@http://host/v1\n"],
)  # fmt: skip
def test_a_malformed_spec_is_refused_showing_the_form(spec: str) -> None:
    with pytest.raises(ModelError, match="openai:MODEL@BASE_URL"):
        parse_spec(spec)


def test_a_spec_names_the_model_and_the_base_url() -> None:
    assert parse_spec("openai:nomic-embed-text@http://127.0.0.1:11434/v1") == (
        "nomic-embed-text",
        "http://127.0.0.1:11434/v1",
        "",
        "",
    )
    assert parse_spec("openai:text-embedding-3-small") == ("text-embedding-3-small", None, "", "")
    assert parse_spec("openai:e5@http://h:80/v1#passage=passage:+&query=") == (
        "e5",
        "http://h:80/v1",
        "",
        "passage: ",
    )
