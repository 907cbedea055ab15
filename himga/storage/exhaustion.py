"""What ran out, as a store sees it: file descriptors, or room to write (a full disk, a read-only
or failing file system). The server answers each as the proto documents
(himga.service.resources); the namespaces' opener (himga.storage.namespaces) closes idle stores
when descriptors run short; an episode store skips an access count it cannot write.

SQLite says "unable to open database file" both when the process has no descriptor left and
when the file cannot be made, so that error counts as running out of descriptors when few are
left now (`descriptors_short`).
"""

import errno
import os
import resource
import sqlite3

NO_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})
CANNOT_WRITE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})
# SQLite's primary result codes (the low byte of an extended code).
SQLITE_NOMEM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 7, 8, 10, 13, 14

SHORT_DESCRIPTORS = 16
"""Fewer free descriptors than this, and a store that cannot open its file blames them."""


def free_descriptors() -> int | None:
    """How many more descriptors this process may open now (its soft RLIMIT_NOFILE less those
    open), or None when that cannot be told (no limit, no /proc)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        used = len(os.listdir("/proc/self/fd")) - 1  # less the one listdir held
    except OSError as error:
        return 0 if error.errno in NO_DESCRIPTORS else None
    return max(0, soft - used)


def descriptors_short() -> bool:
    """Whether the process has (almost) no descriptor left."""
    free = free_descriptors()
    if free is not None:
        return free < SHORT_DESCRIPTORS
    try:
        descriptor = os.open(os.devnull, os.O_RDONLY)
    except OSError as error:
        return error.errno in NO_DESCRIPTORS
    os.close(descriptor)
    return False


def sqlite_code(error: BaseException) -> int:
    """The primary result code of a sqlite3 error (0 for anything else)."""
    if not isinstance(error, sqlite3.Error):
        return 0
    return (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF


def out_of_descriptors(error: BaseException) -> bool:
    """Whether `error` says the process ran out of file descriptors."""
    if isinstance(error, OSError) and error.errno in NO_DESCRIPTORS:
        return True
    return sqlite_code(error) == SQLITE_CANTOPEN and descriptors_short()


def cannot_write(error: BaseException) -> bool:
    """Whether `error` says the store cannot write now (a full disk, a read-only or failing
    file system), as opposed to a mistake of the call's."""
    if isinstance(error, OSError):
        return error.errno in CANNOT_WRITE
    if sqlite_code(error) in (SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY, SQLITE_CANTOPEN):
        return not out_of_descriptors(error)
    # PostgreSQL: a full disk or an exceeded quota (class 53: insufficient resources).
    return getattr(error, "sqlstate", None) in ("53100", "53400")
