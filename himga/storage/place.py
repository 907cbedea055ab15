"""Place: where a server keeps its namespaces, as the memory and episode registries' factories
take it: a data directory (each namespace in files of its own), a PostgreSQL database (every
namespace in one, shared by every server over it: himga.storage.postgres), or None (nothing
kept: in process only)."""

from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from himga.storage.postgres import Database

Place: TypeAlias = "Path | Database | None"
