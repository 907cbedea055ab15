"""Conversation data: Message and Session (the schema models), Sample and QAPair, and loaders.

`load_dataset(name, path=None)` reads a benchmark by name: "locomo" (himga.data.locomo) or
"longmemeval" (himga.data.longmemeval). Without `path` the file comes from the dataset's
environment variable (`HIMGA_LOCOMO_PATH`, `HIMGA_LONGMEMEVAL_PATH`), else, for a dataset with a
published file (himga.data.download), from a cache it is downloaded into once.
"""

import os
from collections.abc import Callable
from pathlib import Path

from himga.data.conversation import Message, QAPair, Sample, Session
from himga.data.download import PUBLISHED, fetched
from himga.data.errors import DatasetError
from himga.data.locomo import load_locomo
from himga.data.longmemeval import load_longmemeval

__all__ = [
    "DATASETS",
    "DatasetError",
    "Message",
    "QAPair",
    "Sample",
    "Session",
    "load_dataset",
]

# name -> (loader, the environment variable naming its file when no path is given)
DATASETS: dict[str, tuple[Callable[[Path], list[Sample]], str]] = {
    "locomo": (load_locomo, "HIMGA_LOCOMO_PATH"),
    "longmemeval": (load_longmemeval, "HIMGA_LONGMEMEVAL_PATH"),
}


def load_dataset(name: str, path: str | Path | None = None) -> list[Sample]:
    """The samples of dataset `name`, read from `path`, from the dataset's environment variable,
    or from its published file (downloaded into a cache once, checked against its SHA-256).

    DatasetError for an unknown name (listing the known ones), no file to be had (saying where
    it looked), or a bad file.
    """
    try:
        loader, variable = DATASETS[name]
    except KeyError:
        raise DatasetError(
            f"unknown dataset {name!r}; known datasets: {', '.join(sorted(DATASETS))}"
        ) from None
    if path is None:
        path = os.environ.get(variable) or None
        if path is None and name in PUBLISHED:
            path = fetched(PUBLISHED[name])
        if path is None:
            raise DatasetError(
                f"dataset {name!r} needs a file: pass path=... or set the {variable} variable"
            )
    return loader(Path(path))
