"""Answers kept on disk, so a rerun, or a run resumed after an interruption, pays for no prompt
twice.

The key is a SHA-256 over the client's identity (provider, model, and the server's address),
the messages and the generation settings: another model, prompt or limit is another answer. One
SQLite file (WAL) holds them; each answer is committed as it arrives. A cached Completion keeps
the tokens and latency of the call that paid for it, with `cached=True`.

The file holds whole prompts, memories included: it is created 0600 (SQLite's `-wal` and `-shm`
take its mode), and the directories made for it 0700, whatever the umask (himga.storage.files,
as the stores do). A cache of this user's that others may read (an earlier himga made it 0644)
is made 0600 when it opens. A path that cannot be opened as the cache (a directory, a file that
is not SQLite, no permission) is an AnswerCacheError.
"""

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from himga.llm.base import ChatMessage, Completion, LLMClient
from himga.llm.errors import AnswerCacheError
from himga.storage.files import FILE_MODE, create_private, exposed_to_others

CACHE_FILE = "llm-answers.sqlite3"


def default_cache_path() -> Path:
    """`$HIMGA_CACHE_DIR/llm-answers.sqlite3`, else under `$XDG_CACHE_HOME/himga` (or
    `~/.cache/himga`)."""
    folder = os.environ.get("HIMGA_CACHE_DIR")
    if folder:
        return Path(folder) / CACHE_FILE
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "himga" / CACHE_FILE


def cache_key(
    identity: dict[str, object],
    messages: Sequence[ChatMessage],
    max_tokens: int,
    temperature: float | None,
) -> str:
    """The hex SHA-256 naming one prompt to one model."""
    payload = {
        "client": identity,
        "messages": [[m.role, m.content] for m in messages],
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedClient(LLMClient):
    """`inner`, with every answer it gives kept in the SQLite file at `path`."""

    def __init__(self, inner: LLMClient, path: str | Path) -> None:
        self.provider = inner.provider
        self.model = inner.model
        self.inner = inner
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = _open(self.path)

    def __repr__(self) -> str:
        return f"CachedClient({self.inner!r}, path={str(self.path)!r})"

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float | None = 0.0,
    ) -> Completion:
        key = cache_key(self.inner.cache_identity(), messages, max_tokens, temperature)
        with self._lock:
            row = self._db.execute(
                "SELECT completion FROM answers WHERE key = ?", (key,)
            ).fetchone()
        if row is not None:
            stored = json.loads(row[0])
            return Completion(**{**stored, "cached": True})
        completion = self.inner.complete(messages, max_tokens=max_tokens, temperature=temperature)
        record = {**completion.usage(), "text": completion.text, "cached": False}
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?)",
                (key, json.dumps(record, ensure_ascii=False)),
            )
        return completion

    def cached_answers(self) -> int:
        """How many answers the file holds."""
        with self._lock:
            count: int = self._db.execute("SELECT count(*) FROM answers").fetchone()[0]
        return count

    def cache_identity(self) -> dict[str, object]:
        return self.inner.cache_identity()

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self.inner.close()


def _open(path: Path) -> sqlite3.Connection:
    """The cache database at `path`, created private if it is not there."""
    db = None
    try:
        create_private(path)
        _narrow(path)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA busy_timeout=10000")
        db.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, completion TEXT NOT NULL)"
        )
    except (OSError, sqlite3.Error) as error:
        if db is not None:
            db.close()
        if path.is_dir():
            reason = "it is a directory (name a file in it)"
        elif isinstance(error, OSError) and error.strerror:
            reason = error.strerror
        else:
            reason = str(error)
        raise AnswerCacheError(path, reason) from None
    return db


def _narrow(path: Path) -> None:
    """Make a cache an earlier himga created readable by others (0644) private to its owner,
    with its log's files: it is ours to narrow, and it holds prompts."""
    for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if each.is_file() and each.stat().st_uid == os.getuid() and exposed_to_others(each):
            os.chmod(each, FILE_MODE)
