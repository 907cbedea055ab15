"""Where a server keeps each namespace's files in its data directory:

    <data_dir>/namespaces/<namespace>-<hash>.memory    the memory the namespace holds (a record)
    <data_dir>/sqlite/<namespace>-<hash>.sqlite3       its messages (the sqlite memory)
    <data_dir>/episodes/<namespace>-<hash>.sqlite3     its episodes (the sqlite episode store)
    <data_dir>/namespaces/<namespace>-<hash>.messages-pending  its messages made by a write
                                                       under way (or killed with its process)
    <data_dir>/namespaces/<namespace>-<hash>.episodes-pending  the same, of its episodes
    <data_dir>/namespaces/<namespace>-<hash>.episodes-unmade   its episode database made by a
                                                       write that stored nothing (not held)

Every directory is 0700 and every file 0600 (himga.storage.files). A namespace that was never
written has none of them.
"""

import hashlib
import urllib.parse
from pathlib import Path

RECORDS = "namespaces"
MESSAGES = "sqlite"
EPISODES = "episodes"


def namespace_file(data_dir: Path, folder: str, namespace: str, suffix: str) -> Path:
    """Where `namespace` keeps a file of one kind in a data directory:
    `<data_dir>/<folder>/<namespace>-<hash><suffix>`.

    The namespace is percent-encoded in the name so a person can tell the files apart; the hash
    of the exact name keeps names distinct where file systems fold case or the encoded name had
    to be shortened."""
    readable = urllib.parse.quote(namespace, safe="")[:80]
    digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:16]
    return Path(data_dir) / folder / f"{readable}-{digest}{suffix}"


def memory_record(data_dir: Path, namespace: str) -> Path:
    """The file recording the memory `namespace` holds."""
    return namespace_file(data_dir, RECORDS, namespace, ".memory")


def messages_database(data_dir: Path, namespace: str) -> Path:
    """The SQLite database of `namespace`'s messages."""
    return namespace_file(data_dir, MESSAGES, namespace, ".sqlite3")


def episodes_database(data_dir: Path, namespace: str) -> Path:
    """The SQLite database of `namespace`'s episodes."""
    return namespace_file(data_dir, EPISODES, namespace, ".sqlite3")


def messages_pending(data_dir: Path, namespace: str) -> Path:
    """The mark that `namespace`'s messages were made (recorded) by a write not yet seen to
    store one: under way, or killed with its process before its call ended (a write that failed
    takes the record away and leaves the mark, which without a record nothing looks at). The
    namespace is held for them only once they hold a message (himga.storage.namespaces,
    himga.service.catalog)."""
    return namespace_file(data_dir, RECORDS, namespace, ".messages-pending")


def episodes_pending(data_dir: Path, namespace: str) -> Path:
    """The mark that `namespace`'s episode database was made by a write not yet seen to store
    an episode (as `messages_pending`)."""
    return namespace_file(data_dir, RECORDS, namespace, ".episodes-pending")


def episodes_unmade(data_dir: Path, namespace: str) -> Path:
    """The mark that `namespace`'s episode database was made by a write that stored nothing:
    the namespace is not held for it (himga.storage.namespaces, himga.service.catalog)."""
    return namespace_file(data_dir, RECORDS, namespace, ".episodes-unmade")
