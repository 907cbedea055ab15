"""A benchmark's published file, downloaded once into a cache and checked against its SHA-256.

`load_dataset(name)` with no path and no environment variable comes here for a dataset listed in
PUBLISHED. The file is kept as `<cache>/datasets/<file>` (the cache is `$HIMGA_CACHE_DIR`, else
`$XDG_CACHE_HOME/himga`, else `~/.cache/himga`, as the LLM answer cache's), private to its owner,
and read from there on later calls. It is checked against the pinned SHA-256 when it arrives and
every time it is read; a file that does not match is never kept. `HIMGA_<NAME>_URL` points at a
mirror, `HIMGA_<NAME>_SHA256` names the checksum when none is pinned here.
"""

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from himga.data.errors import DatasetError

CHUNK = 1 << 16
TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Published:
    """Where a dataset's published file is, and the SHA-256 it must have (None: not pinned)."""

    name: str
    file: str
    url: str
    sha256: str | None

    @property
    def variable(self) -> str:
        return f"HIMGA_{self.name.upper()}"


PUBLISHED: dict[str, Published] = {
    # The LoCoMo authors' release (Maharana et al., ACL 2024), the file the published figures use:
    # data/locomo10.json of the snap-research/locomo repository (git blob d95b872, 2,805,274 bytes).
    "locomo": Published(
        "locomo",
        "locomo10.json",
        "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json",
        "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
    ),
}


def cache_folder() -> Path:
    """Where downloaded datasets are kept."""
    folder = os.environ.get("HIMGA_CACHE_DIR")
    if folder:
        return Path(folder) / "datasets"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "himga" / "datasets"


def fetched(published: Published) -> Path:
    """The cached copy of `published`'s file, downloaded first when the cache lacks it.

    DatasetError, saying where it looked, when there is no checksum to check it against, or the
    download fails or does not match (nothing is kept then)."""
    url = os.environ.get(f"{published.variable}_URL") or published.url
    expected = (os.environ.get(f"{published.variable}_SHA256") or published.sha256 or "").lower()
    target = cache_folder() / published.file
    looked = (
        f"dataset {published.name!r}: no path given, {published.variable}_PATH is not set, "
        f"and {target} is not there"
    )
    if not expected:
        raise DatasetError(
            f"{looked}; no SHA-256 is pinned for {url}, so it is not downloaded: set "
            f"{published.variable}_SHA256 to the checksum you trust, or pass path=..."
        )
    if target.is_file() and _sha256(target) == expected:
        return target
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{published.file}.")
    try:
        digest = hashlib.sha256()
        with os.fdopen(handle, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as answer:
                    while chunk := answer.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            except (urllib.error.URLError, OSError, ValueError) as error:
                raise DatasetError(
                    f"{looked}, and {url} could not be downloaded ({error}): pass path=..., set "
                    f"{published.variable}_PATH, or {published.variable}_URL to a mirror"
                ) from None
        if digest.hexdigest() != expected:
            raise DatasetError(
                f"{url}: SHA-256 {digest.hexdigest()}, expected {expected}; not kept"
            )
        os.replace(temporary, target)  # mkstemp made it 0600
    finally:
        Path(temporary).unlink(missing_ok=True)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
