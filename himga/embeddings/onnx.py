"""The `onnx` kind: a model directory (`model.onnx`, `tokenizer.json`, `card.json`) run in
process by onnxruntime, its text split into tokens by Hugging Face's `tokenizers`.

Every file the card names is checked against its SHA-256 before the model is loaded, and a card
not in the catalog (himga.embeddings.catalog) has its model run once, when it opens, on a text
of its `max_tokens` tokens: a window past the model's own is refused then, not at the first long
text an ingest meets. A text is truncated to the card's `max_tokens` tokens (special tokens
included); nothing is padded: a text runs alone, or (a card whose `batching` is `by_length`)
with texts of its own token length only, so a text's vector never depends on the texts embedded
with it. A batch's runs are shared out to `default_runs()` threads, each running the model on
its own runs: the vectors are the same, and a batch of passages is embedded about as many times
faster as there are cores (one text, a query, runs in its caller).
"""

import logging
import os
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np

from himga.embeddings.base import Embedder, ModelError
from himga.embeddings.card import BATCHINGS, CARD, MODEL, TOKENIZER, Card, read_card, verify
from himga.embeddings.catalog import catalog_problem, is_catalog_model
from himga.pools import started

log = logging.getLogger(__name__)

# Texts of one length sharing a run (batching "by_length"): past a few dozen, a bigger run
# gains nothing on a CPU and holds more memory.
RUN_SIZE = 32


def default_threads() -> int:
    """onnxruntime's threads a run: `HIMGA_EMBEDDING_THREADS`, else 1. A small model's run of
    a text or a few gains nothing from more on a CPU: each operator is too short to share, and
    threads that do not spin wake for each one (measured by `make bench-embeddings`: on one
    2-core machine one thread embedded LoCoMo turns faster than two, and a query too; on CI's,
    two were 1.25x faster for a query and 1.70x for a batch, where two runs side by side were
    1.94x). A batch's cores go to runs side by side instead (`default_runs`)."""
    return _positive("HIMGA_EMBEDDING_THREADS", 1)


def default_runs() -> int:
    """How many runs of the model a batch keeps going at once: `HIMGA_EMBEDDING_RUNS`, else the
    cores this process may use, at most MOST_RUNS. Runs side by side share nothing but the
    weights, so a batch of turns is embedded nearly that many times faster (`make
    bench-embeddings` on CI's two cores: 1.94x, 1.94x to 2.20x, the same vectors); a single
    text is one run.
    1 keeps a batch on its caller's thread, leaving the other cores to a server's other calls
    while it ingests."""
    return _positive("HIMGA_EMBEDDING_RUNS", min(MOST_RUNS, len(os.sched_getaffinity(0))))


MOST_RUNS = 4
"""The default's cap on runs side by side: past a few, they wait on the memory the weights are
read from more than on the cores."""


def _positive(name: str, default: int) -> int:
    """The positive integer the environment variable `name` holds, else `default`; anything
    else is a ModelError naming the variable."""
    configured = os.environ.get(name, "")
    if not configured.strip():
        return default
    try:
        value = int(configured)
    except ValueError:
        value = 0
    if not 1 <= value <= MOST_THREADS:
        raise ModelError(
            f"{name} must be a positive integer of at most {MOST_THREADS}, not {configured!r}"
        )
    return value


MOST_THREADS = 256
"""The most threads or runs the environment may ask for: far past any machine's cores here,
short of asking the system for a hundred thousand."""


class OnnxEmbedder(Embedder):
    """A model directory's ONNX weights, run by onnxruntime on the CPU."""

    in_process = True

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        remedy: str = "copy the model directory again",
        threads: int | None = None,
        batching: str | None = None,
        runs: int | None = None,
    ) -> None:
        """`threads`: onnxruntime's (default `default_threads()`); `batching`: the card's
        unless given (`alone` or `by_length`; the benchmark compares them); `runs`: how many
        runs a batch keeps going at once (default `default_runs()`)."""
        import onnxruntime
        import tokenizers

        self.directory = Path(directory)
        card = read_card(self.directory)
        verify(self.directory, card, remedy)
        problem = catalog_problem(card, str(self.directory / CARD), remedy)
        if problem is not None:
            raise ModelError(problem)
        self.card: Card = card
        self.model_id = f"{card.name}:{card.files[MODEL][:16]}"
        self.dimension = card.dimension
        self.max_tokens = card.max_tokens
        self.query_prefix = card.query_prefix
        self.passage_prefix = card.passage_prefix
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(self.directory / TOKENIZER))
        except Exception as error:  # tokenizers raises a bare Exception on a bad file
            raise ModelError(f"{self.directory / TOKENIZER}: not a tokenizer ({error})") from None
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=card.max_tokens)
        self._tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        self.runs = runs or default_runs()
        self._pool: ThreadPoolExecutor | None = None  # made by the first batch of several runs
        self._pool_made = threading.Lock()
        options.intra_op_num_threads = threads or default_threads()
        options.inter_op_num_threads = 1
        # Threads that spin between runs would take a shared machine's cores while idle.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            self._session = onnxruntime.InferenceSession(
                str(self.directory / MODEL), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime's own exception types
            raise ModelError(f"{self.directory / MODEL}: not a loadable model ({error})") from None
        width = self._session.get_outputs()[0].shape[-1]
        if isinstance(width, int) and width != card.dimension:  # else a name: known when run
            raise ModelError(
                f"{self.directory / CARD}: dimension {card.dimension}, but the model's vectors "
                f"have {width}; {remedy}"
            )
        self._inputs = {i.name for i in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise ModelError(
                f"{self.directory / MODEL}: takes no {', '.join(sorted(missing))} input"
            )
        batching = batching or card.batching
        if batching not in BATCHINGS:
            raise ModelError(f"batching must be one of {', '.join(BATCHINGS)}, not {batching!r}")
        self.batching = batching
        self._by_length = batching == "by_length"
        if not is_catalog_model(card):
            self._check_window(remedy)

    def _check_window(self, remedy: str) -> None:
        """Refuse a card whose `max_tokens` is past the window the model runs on."""
        encoding = self._tokenizer.encode("the " * self.max_tokens)
        try:
            hidden = self._hidden([encoding.ids], [encoding.type_ids])
        except ModelError:
            raise ModelError(
                f"{self.directory / CARD}: max_tokens {self.max_tokens}, but the model fails on "
                f"a text of {len(encoding.ids)} tokens (its window is shorter); {remedy}, or "
                "lower max_tokens"
            ) from None
        self._pooled(hidden)  # a card's other dimension, named as it is

    def token_ids(self, text: str) -> list[int]:
        """The tokens the model sees of `text` as given (no prefix added), truncated to
        `max_tokens`."""
        ids: list[int] = self._tokenizer.encode(text).ids
        return ids

    def _embed(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not self._by_length:
            runs = [[index] for index in range(len(texts))]
        else:
            by_length: defaultdict[int, list[int]] = defaultdict(list)
            for index, encoding in enumerate(encodings):
                by_length[len(encoding.ids)].append(index)
            runs = [
                indices[start : start + RUN_SIZE]
                for indices in by_length.values()
                for start in range(0, len(indices), RUN_SIZE)
            ]

        def run(chosen: list[int]) -> None:
            out[chosen] = self._run(
                [encodings[i].ids for i in chosen], [encodings[i].type_ids for i in chosen]
            )

        pool = self._side_by_side() if len(runs) > 1 else None
        if pool is None:
            for chosen in runs:
                run(chosen)
            return out
        going = [started(pool, run, chosen) for chosen in runs]  # each writes its own rows
        wait(going)  # all of them ended before any error is raised
        for future in going:
            future.result()
        return out

    def _side_by_side(self) -> ThreadPoolExecutor | None:
        """The threads a batch's runs are shared out to (None: runs on the caller's thread)."""
        if self.runs < 2:
            return None
        with self._pool_made:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.runs, thread_name_prefix="himga-embed")
            return self._pool

    def _run(self, ids: list[list[int]], type_ids: list[list[int]]) -> np.ndarray:
        """Pooled vectors of equally long token sequences (no padding: every mask is 1)."""
        return self._pooled(self._hidden(ids, type_ids))

    def _hidden(self, ids: list[list[int]], type_ids: list[list[int]]) -> np.ndarray:
        """The model's last hidden states of equally long token sequences."""
        input_ids = np.asarray(ids, dtype=np.int64)
        mask = np.ones_like(input_ids)
        feed: dict[str, Any] = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.asarray(type_ids, dtype=np.int64)
        try:
            hidden = self._session.run(None, feed)[0]
        except Exception as error:  # onnxruntime's own exception types
            log.error("%s: onnxruntime failed: %s", self.model_id, error)  # its detail: the log's
            raise ModelError(
                f"{self.model_id}: the model failed on a text of {input_ids.shape[1]} tokens; is "
                f"its card's max_tokens ({self.max_tokens}) past the model's window?"
            ) from None
        return np.asarray(hidden)

    def _pooled(self, hidden: np.ndarray) -> np.ndarray:
        """The pooled vectors of the model's hidden states (the card's pooling)."""
        if hidden.ndim != 3 or hidden.shape[2] != self.dimension:
            raise ModelError(
                f"{self.directory / CARD}: dimension {self.dimension}, but the model's vectors "
                f"have shape {hidden.shape[1:]}"
            )
        if self.card.pooling == "cls":
            return np.asarray(hidden[:, 0, :], dtype=np.float32)
        return np.asarray(hidden.mean(axis=1), dtype=np.float32)
