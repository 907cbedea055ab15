"""The conformance vectors (schemas/conformance/), read once for the contract tests, and the
bundled schemas (generated/bundled/v1/) they also run through."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from himga import validation

REPO = Path(__file__).resolve().parents[2]
VECTOR_DIR = REPO / "schemas" / "conformance"
SHAPE_FILE = VECTOR_DIR / "vectors.schema.json"
SOURCE_DIR = REPO / "schemas" / "v1"
BUNDLE_DIR = REPO / "generated" / "bundled" / "v1"
VECTOR_FILES = sorted(p for p in VECTOR_DIR.glob("*.json") if p != SHAPE_FILE)


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _vectors() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(type name, pytest id, vector) for every vector of every file."""
    for path in VECTOR_FILES:
        for group in load(path):
            type_name = validation.type_for_id(group["schema"]["$ref"])
            for test in group["tests"]:
                yield type_name, f"{path.stem}: {group['description']}: {test['description']}", test


VECTORS = list(_vectors())


def verdict_without_formats(vector: dict[str, Any]) -> bool:
    """The verdict of a validator that leaves `format` unchecked (2020-12's default): the
    vector's own, but for the days the calendar lacks, which only format assertion rejects."""
    return True if vector.get("needs_format_assertion") else bool(vector["valid"])


def bundle_path(type_name: str) -> Path:
    """The bundled schema of a type: the file named as its schema in schemas/v1."""
    return BUNDLE_DIR / validation.schema_id(type_name).rsplit("/", 1)[1]
