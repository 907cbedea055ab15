"""Files only their owner may read: every file himga writes holds conversations or secrets.

Directories are made 0700 and files 0600. A file is created with its mode (never created
readable and narrowed afterwards), so there is no moment when another user could open it. SQLite
gives its `-wal` and `-shm` files the mode of their database, so a database created here with
`create_private` keeps its companions private too.
"""

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: Path) -> Path:
    """`path` and its missing parents, each made 0700 (an existing directory is left as it is:
    `exposed_to_others` tells whether it is readable by others)."""
    missing = []
    walk = path
    while not walk.exists():
        missing.append(walk)
        walk = walk.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIRECTORY_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, DIRECTORY_MODE)  # mkdir's mode is narrowed by the umask only
    return path


def create_private(path: Path) -> None:
    """Create `path` empty and 0600 unless it exists (an existing file is kept as it is)."""
    make_private_dir(path.parent)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(descriptor)


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` by a 0600 file holding `data`, atomically and durably: a reader sees the
    old file or the new one, and after a crash the new one is there once this returned."""
    with replacing_private(path) as file:
        file.write(data)


@contextmanager
def replacing_private(path: Path) -> Iterator[BinaryIO]:
    """A file to write what replaces `path` into: a 0600 one beside it that, once the block
    ends, is made durable and put in `path`'s place atomically; on any error it is removed and
    `path` is left as it was."""
    make_private_dir(path.parent)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(descriptor, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(scratch, path)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def exposed_to_others(path: Path) -> bool:
    """Whether users other than the owner may read, write or enter `path`."""
    return bool(path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))


def mode_of(path: Path) -> str:
    """The permission bits of `path` as `0755`."""
    return f"{stat.S_IMODE(path.stat().st_mode):04o}"
