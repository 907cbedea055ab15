"""The seed's import path of the memory records (`from memory.schemas import EpisodeTrace`):
the records themselves live in `himga.records`."""

from himga.records.episode import *  # noqa: F403
from himga.records.episode import __all__ as __all__
