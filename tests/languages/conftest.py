"""Shared by the other languages' drivers: the LoCoMo file their clients ingest."""

import os
from pathlib import Path

import pytest

from tests.languages.commands import REPO


@pytest.fixture(scope="session")
def locomo_file() -> Path:
    """HIMGA_LOCOMO_PATH when set, else the development file beside the clone, else the fixture."""
    if os.environ.get("HIMGA_LOCOMO_PATH"):
        return Path(os.environ["HIMGA_LOCOMO_PATH"])
    dev = REPO.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
    if dev.is_file():
        return dev
    fixtures = sorted((REPO / "tests" / "fixtures" / "locomo").glob("*.json"))
    if not fixtures:
        pytest.fail("no LoCoMo file: set HIMGA_LOCOMO_PATH")
    return fixtures[0]
