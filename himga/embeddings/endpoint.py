"""The `openai` kind: an OpenAI-compatible embeddings endpoint (`POST {base_url}/embeddings`)
through OpenAI's official SDK (the `llm` extra), so the OpenAI API, Hugging Face's
text-embeddings-inference, vLLM, Ollama and llama.cpp's server all serve as the model.

Spec: `openai:MODEL@BASE_URL` (`openai:e5-small-v2@http://127.0.0.1:8081/v1`), or `openai:MODEL` for
the OpenAI API itself, either ending in `#query=PREFIX&passage=PREFIX` for a model that wants its
texts prefixed (URL-encoded: e5's `#query=query:%20&passage=passage:%20`, nomic-embed-text's
`#query=search_query:%20&passage=search_document:%20`); a server that adds them itself
(text-embeddings-inference's prompts) is given none. The key comes from HIMGA_EMBEDDINGS_API_KEY,
else OPENAI_API_KEY; a local server needs none (the placeholder "EMPTY" is sent). The model's
dimension is learnt when it is opened, from one probe text's vector, so a server that does not
answer is found at start-up. The window is the server's: it truncates (text-embeddings-inference
with `--auto-truncate`) or refuses a longer text. The model id is `openai:MODEL`, then its prefixes
when there are any (`#query=...&passage=...`, in that order, URL-encoded; `model_id`): the same
model behind another address gives the same vectors, and other prefixes other ones.
"""

import os
from typing import NamedTuple
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import numpy as np

from himga.embeddings.base import Embedder, ModelError
from himga.errors import InvalidArgument, ModelUnreachable

KEY_VARIABLES = ("HIMGA_EMBEDDINGS_API_KEY", "OPENAI_API_KEY")
LOCAL_SERVER_KEY = "EMPTY"
DEFAULT_TIMEOUT = 20.0
"""Seconds one request may take (HIMGA_EMBEDDINGS_TIMEOUT sets it)."""
RETRIES = 2
"""How many times a request that timed out, or met a 408, 409, 429 or 5xx, is sent again (with
the SDK's backoff): a call that gets no answer fails after about (RETRIES + 1) * the timeout."""
# The OpenAI API's window (8,192 tokens); another server holds its own.
DEFAULT_MAX_TOKENS = 8191
# Texts one request carries (the OpenAI API takes at most 2,048 inputs a request).
REQUEST_SIZE = 256
_PROBE = "dimension probe"
_RETRY_LATER = {408, 409, 429}
"""HTTP statuses that ask for the call again later (as OpenAI's SDK retries them), like 5xx."""
_REFUSED_TEXTS = {400, 413, 422}
"""HTTP statuses that refuse the texts of one call (OpenAI's and vLLM's 400 for a text past the
model's window, TEI's 413 and 422), not the model."""


def default_timeout() -> float:
    """HIMGA_EMBEDDINGS_TIMEOUT (seconds, a positive number), else DEFAULT_TIMEOUT."""
    configured = os.environ.get("HIMGA_EMBEDDINGS_TIMEOUT", "").strip()
    if not configured:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(configured)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ModelError(
            f"HIMGA_EMBEDDINGS_TIMEOUT must be a positive number of seconds, not {configured!r}"
        )
    return seconds


class Spec(NamedTuple):
    """What `openai:MODEL[@BASE_URL][#query=PREFIX&passage=PREFIX]` names."""

    model: str
    base_url: str | None = None
    query_prefix: str = ""
    passage_prefix: str = ""


_FORM = (
    "an endpoint is written openai:MODEL@BASE_URL (openai:e5-small-v2@http://127.0.0.1:8081/v1) "
    "or openai:MODEL, and may end in #query=PREFIX&passage=PREFIX (the texts' prefixes, "
    "URL-encoded: #query=query:%20&passage=passage:%20)"
)


def parse_spec(spec: str) -> Spec:
    """What `openai:MODEL[@BASE_URL][#query=PREFIX&passage=PREFIX]` names; ModelError saying
    the form."""
    body, marked, fragment = spec.removeprefix("openai:").partition("#")
    model, _, base_url = body.partition("@")
    try:
        address = urlsplit(base_url)
        port = address.port  # ValueError for a port that is no number
        well_formed = address.scheme in ("http", "https") and bool(address.hostname)
        well_formed = well_formed and (port is None or port > 0)
    except ValueError:  # an unclosed IPv6 bracket, a port that is no number
        well_formed = False
    well_formed = well_formed and base_url.isprintable() and " " not in base_url
    if not model or (body.count("@") and not (base_url and well_formed)):
        raise ModelError(f"embedding model {spec!r}: {_FORM}")
    prefixes: dict[str, str] = {}
    if marked:
        try:
            pairs = parse_qsl(fragment, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            pairs = [("", "")]
        prefixes = dict(pairs)
        if not pairs or len(prefixes) < len(pairs) or not prefixes.keys() <= {"query", "passage"}:
            raise ModelError(f"embedding model {spec!r}: {_FORM}")
    return Spec(model, base_url or None, prefixes.get("query", ""), prefixes.get("passage", ""))


def model_id(model: str, query_prefix: str = "", passage_prefix: str = "") -> str:
    """The id of the vectors of `model` with these prefixes: `openai:MODEL`, then the prefixes
    when there are any, in one spelling of the spec's (query first, URL-encoded but for ":"):
    other prefixes, other vectors."""
    given = {"query": query_prefix, "passage": passage_prefix}
    prefixes = urlencode({k: v for k, v in given.items() if v}, safe=":", quote_via=quote)
    return f"openai:{model}" + (f"#{prefixes}" if prefixes else "")


class OpenAIEmbedder(Embedder):
    """A model served by an OpenAI-compatible embeddings endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        try:
            import openai
        except ImportError:
            raise ModelError(
                "an openai: embedding model needs OpenAI's SDK: pip install 'himga-memory[llm]'"
            ) from None
        self._openai = openai
        if api_key is None:
            api_key = next((os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None)
        if api_key is None:
            if base_url is None:
                raise ModelError(
                    "openai embeddings: no API key; set HIMGA_EMBEDDINGS_API_KEY or "
                    "OPENAI_API_KEY, or name a local server (openai:MODEL@BASE_URL)"
                )
            api_key = LOCAL_SERVER_KEY
        self.model = model
        self.model_id = model_id(model, query_prefix, passage_prefix)
        self.max_tokens = DEFAULT_MAX_TOKENS
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.timeout = timeout if timeout is not None else default_timeout()
        self._sdk = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=self.timeout, max_retries=RETRIES
        )
        self.dimension = int(self._request([_PROBE], probe=True).shape[1])

    def close(self) -> None:
        self._sdk.close()

    def _embed(self, texts: list[str]) -> np.ndarray:
        parts = [
            self._request(texts[start : start + REQUEST_SIZE])
            for start in range(0, len(texts), REQUEST_SIZE)
        ]
        return np.concatenate(parts)

    def _request(self, texts: list[str], probe: bool = False) -> np.ndarray:
        """The vectors of `texts`. ModelUnreachable when the endpoint does not answer now;
        InvalidArgument when it refuses these texts (HTTP 400, 413, 422: too long, say), which
        other texts may pass; ModelError when it refuses the model (any other status, or any
        at the probe that opens it)."""
        where = f"embeddings endpoint {self._sdk.base_url} (model {self.model!r})"
        try:
            answer = self._sdk.embeddings.create(
                model=self.model, input=texts, encoding_format="float"
            )
        except self._openai.APIStatusError as error:
            failed = f"{where}: HTTP {error.status_code}: {error.message}"
            if error.status_code in _RETRY_LATER or error.status_code >= 500:
                raise ModelUnreachable(failed) from None
            if error.status_code in _REFUSED_TEXTS and not probe:  # no address: the caller's
                said = f"the embeddings endpoint refused it: HTTP {error.status_code}"
                raise InvalidArgument("text", f"{said}: {error.message}") from None
            raise ModelError(failed) from None  # refused: asking again cannot help
        except self._openai.APITimeoutError:
            raise ModelUnreachable(
                f"{where}: no answer in {self.timeout:g} s, asked {RETRIES + 1} times "
                "(HIMGA_EMBEDDINGS_TIMEOUT sets the seconds)"
            ) from None
        except self._openai.APIError as error:  # no answer: down
            raise ModelUnreachable(f"{where}: {error}") from None
        except ValueError as error:  # an answer that is not JSON (the SDK's json.loads)
            raise _garbled(where, f"not JSON ({error})", probe) from None
        try:
            rows = sorted(answer.data, key=lambda item: item.index)
            indexes = [row.index for row in rows]
            vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        except (AttributeError, TypeError, ValueError) as error:
            # a page of HTML, an object without `data`, rows of unequal length or of base64
            raise _garbled(where, f"not a list of float vectors ({error})", probe) from None
        if indexes != list(range(len(texts))):
            raise ModelError(f"{where}: answered {len(rows)} vectors for {len(texts)} texts")
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ModelError(f"{where}: answered no vectors")
        return vectors


def _garbled(where: str, what: str, probe: bool) -> ModelError:
    """An answer that is no embeddings answer: at the probe, the address is not such an
    endpoint (ModelError); later, a proxy's error page or a server restarting, say, which a
    later call may not meet (ModelUnreachable)."""
    said = f"{where}: answered something that is {what}"
    if probe:
        return ModelError(f"{said}; is it an OpenAI-compatible embeddings endpoint?")
    return ModelUnreachable(said)
