"""The auth file: the tokens a server accepts, each with the namespaces and rights it grants.

A token is `himga.<id>.<secret>`: `id` (8 hex digits) names its entry, so `himga auth list` and
`himga auth revoke ID` can speak of it without the secret; `secret` is 32 random bytes
(base64url). The file keeps only the SHA-256 of the whole token, never the token.

Why a plain SHA-256 and not a slow password hash: slow hashes (bcrypt, scrypt, Argon2) protect
secrets people choose, which can be guessed; a token of 256 random bits cannot be guessed, so one
fast hash already makes a stolen file useless for calling the server, and a slow hash would cost
milliseconds on every call. A presented token is looked up by its id and its hash compared with
`hmac.compare_digest` (constant time), an unknown id against a dummy hash the same way.

The file is JSON, written 0600 and replaced atomically:
    {"himga_auth": 1, "tokens": [{"id": "1f0c9a2e", "sha256": "<64 hex>",
      "namespaces": ["agent-7", "eval-*"], "rights": ["read", "write"], "created": "..."}]}
A namespace pattern is a namespace, or a prefix ending in `*` (`*` alone: every namespace).
"""

import base64
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast, get_args

from himga.storage.files import make_private_dir, write_private
from himga.timeutil import to_utc_isoformat

Right = Literal["read", "write", "admin"]
RIGHTS: tuple[Right, ...] = get_args(Right)
FORMAT = 1
"""The version of the file's layout (its `himga_auth` key)."""

_PREFIX = "himga"
_TOKEN = re.compile(r"himga\.([0-9a-f]{8})\.[A-Za-z0-9_-]{43}")
_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}|[A-Za-z0-9._:-]{0,127}\*", re.ASCII)
_DUMMY = hashlib.sha256(b"no such token").hexdigest()


class AuthFileError(ValueError):
    """The auth file cannot be read or breaks its format; the message names the file and why."""


@dataclass(frozen=True, slots=True)
class Grant:
    """One token's entry: its id, the hash of the token, what it may do, and when it was made."""

    id: str
    sha256: str
    namespaces: tuple[str, ...]
    rights: frozenset[Right]
    created: str

    def allows(self, right: Right, namespace: str | None) -> bool:
        """Whether this token may use `right` on `namespace` (None: a call naming no single
        namespace, which needs the pattern `*`)."""
        if right not in self.rights:
            return False
        return any(_matches(pattern, namespace) for pattern in self.namespaces)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sha256": self.sha256,
            "namespaces": list(self.namespaces),
            "rights": sorted(self.rights, key=RIGHTS.index),
            "created": self.created,
        }


def _matches(pattern: str, namespace: str | None) -> bool:
    if pattern == "*":
        return True
    if namespace is None:
        return False
    if pattern.endswith("*"):
        return namespace.startswith(pattern[:-1])
    return namespace == pattern


def pattern_problem(pattern: str) -> str | None:
    """What is wrong with `pattern` as a namespace pattern, or None."""
    if _PATTERN.fullmatch(pattern) is None:
        return (
            f"namespace pattern {pattern!r} must be a namespace (1 to 128 letters, digits, "
            "'.', '_', '-', ':') or a prefix of one ending in '*'"
        )
    return None


def parse_rights(text: str) -> frozenset[Right]:
    """`read,write` as rights; ValueError naming the known ones."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in RIGHTS]
    if unknown or not names:
        raise ValueError(f"rights must be a comma-separated list of {', '.join(RIGHTS)}: {text!r}")
    return frozenset(cast(Right, name) for name in names)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Tokens:
    """The grants of one auth file, looked up by token."""

    def __init__(self, grants: Iterable[Grant] = ()) -> None:
        self.grants: dict[str, Grant] = {grant.id: grant for grant in grants}

    def find(self, token: str) -> Grant | None:
        """The grant of `token`, or None for an unknown, revoked or malformed one. Takes the
        same time whether the id is known or not, and compares hashes in constant time."""
        found = _TOKEN.fullmatch(token)
        grant = self.grants.get(found.group(1)) if found else None
        expected = grant.sha256 if grant is not None else _DUMMY
        if hmac.compare_digest(_hash(token), expected) and grant is not None:
            return grant
        return None

    def new(self, namespaces: Iterable[str], rights: Iterable[Right]) -> tuple[str, Grant]:
        """Add a new token granting `rights` on `namespaces`; return the token (shown once) and
        its grant. ValueError on a bad pattern or no rights."""
        patterns = tuple(dict.fromkeys(namespaces))
        problems = [p for p in map(pattern_problem, patterns) if p] or (
            [] if patterns else ["at least one namespace pattern is needed"]
        )
        if problems:
            raise ValueError("; ".join(problems))
        granted = frozenset(rights)
        if not granted:
            raise ValueError("at least one right is needed")
        while (token_id := secrets.token_hex(4)) in self.grants:
            pass
        secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
        token = f"{_PREFIX}.{token_id}.{secret}"
        grant = Grant(
            token_id, _hash(token), patterns, granted, to_utc_isoformat(datetime.now(UTC))
        )
        self.grants[token_id] = grant
        return token, grant

    def revoke(self, token_id: str) -> Grant:
        """Remove the token `token_id`; KeyError if there is none."""
        return self.grants.pop(token_id)

    def to_json(self) -> dict[str, Any]:
        return {"himga_auth": FORMAT, "tokens": [g.to_json() for g in self.grants.values()]}


def load(path: Path) -> Tokens:
    """The tokens of the auth file at `path`; AuthFileError saying what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise AuthFileError(f"{path}: cannot read: {error.strerror or error}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise AuthFileError(f"{path}: not JSON: {error}") from None
    return from_json(data, str(path))


def from_json(data: Any, name: str) -> Tokens:
    """The tokens of an auth file's JSON (or of rows shaped so); AuthFileError saying what is
    wrong, starting with `name`."""
    if not isinstance(data, dict) or data.get("himga_auth") != FORMAT:
        raise AuthFileError(f'{name}: not a himga auth file (want {{"himga_auth": {FORMAT}, ...}})')
    grants = []
    for number, entry in enumerate(data.get("tokens", [])):
        try:
            grants.append(_grant(entry))
        except (KeyError, TypeError, ValueError) as error:
            raise AuthFileError(f"{name}: tokens[{number}]: {error}") from None
    return Tokens(grants)


def _grant(entry: dict[str, Any]) -> Grant:
    token_id, digest = str(entry["id"]), str(entry["sha256"])
    if re.fullmatch(r"[0-9a-f]{8}", token_id) is None or len(digest) != 64:
        raise ValueError("id must be 8 hex digits and sha256 64")
    patterns = tuple(str(p) for p in entry["namespaces"])
    problem = next((p for p in map(pattern_problem, patterns) if p), None)
    if problem:
        raise ValueError(problem)
    rights = parse_rights(",".join(entry["rights"]))
    return Grant(token_id, digest, patterns, rights, str(entry.get("created", "")))


@contextmanager
def editing(path: Path, *, create: bool = False) -> Iterator[Tokens]:
    """The tokens of the auth file at `path` (none yet, with `create`, if it does not exist),
    saved when the block ends without an error. Edits of one file wait for each other (a lock
    on its directory), so two `himga auth` commands never lose one another's change."""
    make_private_dir(path.parent)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
        held = load(path) if (path.exists() or not create) else Tokens()
        yield held
        save(path, held)
    finally:
        os.close(directory)  # releases the lock


def save(path: Path, tokens: Tokens) -> None:
    """Write `tokens` to `path`, 0600, replacing the file atomically."""
    text = json.dumps(tokens.to_json(), indent=2) + "\n"
    write_private(path, text.encode("utf-8"))
