"""The namespaces a server holds, as things: which there are (ListNamespaces) and forgetting one
wholly (DeleteNamespace), on each place a server keeps them (himga.storage.place).

A namespace is held once something was stored in it: a message (its memory is then recorded),
or an episode. One whose first write failed is not (himga.storage.namespaces).

- In process (no place): the namespaces open now, messages or episodes.
- A data directory: every file of a namespace, in every folder, is named by
  himga.memory.registry.namespace_file (`<readable>-<hash><suffix>`). A namespace is held when
  `namespaces/` records its memory or `episodes/` holds its database, unless `namespaces/` marks
  that database unmade (made by a write that stored nothing); where `namespaces/` marks a side
  pending (made by a first write under way, or killed with its process), only once it holds
  something when the listing looks into it, whatever other mark it has
  (himga.storage.namespaces); its name is read back from the file name (the readable part,
  checked against the hash). A name too long to be read back
  so also gets `namespaces/<readable>-<hash>.name`, written when it is opened (`remember_name`):
  a long-named namespace an earlier himga made is listed from its next call on. Deleting removes
  every file of the namespace in every folder.
- A database: a namespace's row in himga_namespaces is held when it has episodes, or records a
  memory and has numbered a message since it was last deleted (`next_number`, kept past deletes
  and resets, beyond `listed_from`: a first write that failed records the memory, as the
  servers open namespaces by it, but numbers nothing). Deleting empties the row (its messages,
  episodes, receipts and change log go, its memory is unset, `listed_from` is raised to
  `next_number`, and its counters are raised, so every other server reads it anew as after a
  reset) rather than removing it: servers keep the row's id for as long as they hold the
  namespace, and number its messages on from where they were.
"""

import base64
import binascii
import hashlib
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from himga.service.errors import FieldViolation, InvalidRequest
from himga.service.namespaces import namespace_violations
from himga.storage.files import write_private
from himga.storage.layout import (
    episodes_pending,
    episodes_unmade,
    messages_pending,
    namespace_file,
)

if TYPE_CHECKING:
    from himga.service.namespaces import Namespaces
    from himga.storage.postgres import Database

_READABLE = 80
"""How much of the percent-encoded name a file name keeps (himga.memory.registry)."""
_SEPARATOR = "\x00"
_NOT_MADE = FieldViolation("page_token", "not a token this server made")


@dataclass(frozen=True, slots=True)
class Held:
    """One namespace a server holds, and the memory of its messages ("" with episodes only)."""

    name: str
    memory: str


def page_token(prefix: str, last: str) -> str:
    """The token of the page after `last` among the names starting with `prefix`."""
    raw = (prefix + _SEPARATOR + last).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def after_token(token: str, prefix: str) -> str:
    """The last name of the previous page, from its token ("" for none); InvalidRequest naming
    page_token for a token the server did not make or one of another prefix."""
    if not token:
        return ""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8")
        made_for, last = raw.split(_SEPARATOR)
    except (ValueError, binascii.Error):
        raise InvalidRequest([_NOT_MADE]) from None
    if made_for != prefix:
        raise InvalidRequest(
            [FieldViolation("page_token", "was made for another prefix: pass the same prefix")]
        )
    if namespace_violations(last):
        raise InvalidRequest([_NOT_MADE])
    return last


def held(
    namespaces: "Namespaces",
    prefix: str,
    after: str,
    count: int | None = None,
) -> list[Held]:
    """The first `count` (None: all) namespaces the server holds whose name starts with
    `prefix` and comes after `after`, in the byte order of their names."""
    found: dict[str, str] = {}
    if namespaces.database is not None:
        found.update(_database_held(namespaces.database, prefix, after, count))
    elif namespaces.data_dir is not None:
        found.update(_directory_held(namespaces, namespaces.data_dir, prefix, after))
    else:
        found.update(namespaces.open_names())
    names = [
        name
        for name in sorted(found, key=_bytes)
        if name.startswith(prefix) and _bytes(name) > _bytes(after)
    ]
    return [Held(name, found[name]) for name in names[:count]]


def forget(namespaces: "Namespaces", namespace: str) -> bool:
    """Forget `namespace` wholly, once the calls using its stores have ended; whether the
    server held it."""
    was = any(h.name == namespace for h in held(namespaces, namespace, ""))
    with namespaces.closing(namespace):
        if namespaces.database is not None:
            _database_forget(namespaces.database, namespace)
        elif namespaces.data_dir is not None:
            _directory_forget(namespaces.data_dir, namespace)
    return was


def remember_name(data_dir: Path | None, namespace: str) -> None:
    """Keep the name of a namespace whose file names cannot give it back (see the module)."""
    if data_dir is None or len(urllib.parse.quote(namespace, safe="")) <= _READABLE:
        return
    record = namespace_file(data_dir, "namespaces", namespace, ".name")
    if not record.exists():
        write_private(record, namespace.encode("utf-8"))


def _bytes(name: str) -> bytes:
    return name.encode("utf-8")


def _directory_held(
    namespaces: "Namespaces", data_dir: Path, prefix: str, after: str
) -> dict[str, str]:
    """The namespaces held in `data_dir` (the module's text) among those whose name starts with
    `prefix` and comes after `after`: only those are looked into when marked pending."""

    def asked(name: str) -> bool:
        return name.startswith(prefix) and _bytes(name) > _bytes(after)

    found: dict[str, str] = {}
    for path in sorted((data_dir / "episodes").glob("*.sqlite3")):
        name = _name_of(data_dir, path.name.removesuffix(".sqlite3"))
        if name is None or not asked(name):
            continue
        if episodes_pending(data_dir, name).exists():  # a first write under way, or killed
            if namespaces.episodes_stored(name):
                found[name] = ""
        elif not episodes_unmade(data_dir, name).exists():
            found[name] = ""
    for path in (data_dir / "namespaces").glob("*.memory"):
        name = _name_of(data_dir, path.name.removesuffix(".memory"))
        if name is None or not asked(name):
            continue
        try:
            memory = path.read_text(encoding="utf-8")
        except FileNotFoundError:  # unmade (its first write failed) or deleted since the look
            continue
        if not messages_pending(data_dir, name).exists() or namespaces.messages_stored(
            name, memory
        ):
            found[name] = memory
    return found


def _name_of(data_dir: Path, stem: str) -> str | None:
    """The namespace whose files are named `stem` (`<readable>-<hash>`), or None when neither
    the stem nor a `.name` record gives it back."""
    readable, _, digest = stem.rpartition("-")
    name = urllib.parse.unquote(readable)
    if hashlib.sha256(name.encode("utf-8")).hexdigest()[:16] == digest:
        return name
    try:
        name = (data_dir / "namespaces" / f"{stem}.name").read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return name if hashlib.sha256(name.encode("utf-8")).hexdigest()[:16] == digest else None


def _directory_forget(data_dir: Path, namespace: str) -> None:
    stem = namespace_file(data_dir, "", namespace, "").name
    for folder in data_dir.iterdir():
        if not folder.is_dir():
            continue
        for path in folder.glob(f"{stem}.*"):
            path.unlink(missing_ok=True)


_HELD = """
    SELECT name, CASE WHEN next_number > listed_from THEN coalesce(memory, '') ELSE '' END
    FROM himga_namespaces AS n
    WHERE starts_with(name, %s) AND name COLLATE "C" > %s
      AND ((memory IS NOT NULL AND next_number > listed_from)
           OR EXISTS (SELECT 1 FROM himga_episodes WHERE namespace = n.id))
    ORDER BY name COLLATE "C" LIMIT %s
"""
_EMPTIED = (
    "DELETE FROM himga_messages WHERE namespace = %s",
    "DELETE FROM himga_episode_files WHERE namespace = %s",
    "DELETE FROM himga_episodes WHERE namespace = %s",
    "DELETE FROM himga_receipts WHERE namespace = %s",
    "DELETE FROM himga_changes WHERE namespace = %s",
    """UPDATE himga_namespaces SET memory = NULL, listed_from = next_number,
        version = version + 1, generation = generation + 1, episode_version = episode_version + 1,
        episode_generation = episode_generation + 1 WHERE id = %s""",
)


def _database_held(
    database: "Database", prefix: str, after: str, count: int | None
) -> dict[str, str]:
    with database.transaction(snapshot=True) as connection:
        rows = connection.execute(_HELD, (prefix, after, count)).fetchall()
    return {str(name): str(memory) for name, memory in rows}


def _database_forget(database: "Database", namespace: str) -> None:
    with database.transaction() as connection:
        row = connection.execute(
            "SELECT id FROM himga_namespaces WHERE name = %s FOR UPDATE", (namespace,)
        ).fetchone()
        if row is None:
            return
        for statement in _EMPTIED:
            connection.execute(statement, (row[0],))
