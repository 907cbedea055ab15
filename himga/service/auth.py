"""Who may call what: the right each RPC needs (`METHOD_RIGHTS`, the one table) and `Auth`, which
the core (himga.service.core.core) asks of every call, whatever its door, to check its bearer token
against the auth file (himga.service.tokens).

Every call but those of `OPEN` services (health, reflection) carries `authorization: Bearer
TOKEN`. No token, or one the file does not hold: UNAUTHENTICATED. A token that does not grant
the method's right on the request's namespace: PERMISSION_DENIED. Both are decided from the
token and the request alone, never from what the store holds, so neither tells whether a
namespace exists (a namespace that breaks the naming rule, which cannot exist, is left to the
call to refuse as INVALID_ARGUMENT). A method the table does not list is refused
(PERMISSION_DENIED): a new RPC is closed until it is given a right here
(tests/service/test_auth.py fails until it is).

Rights are separate: `read` does not imply `write`, nor `admin` the others.
"""

import logging
import threading
from pathlib import Path
from typing import Any, Protocol

from himga.service import tokens
from himga.service.errors import PermissionDenied, Unauthenticated
from himga.service.namespaces import namespace_violations
from himga.service.tokens import Grant, Right, Tokens

_log = logging.getLogger(__name__)

OPEN = None
"""The "right" of a method anyone may call, with or without a token."""

_MEMORY = "/himga.memory.v1.MemoryService/"
_EPISODES = "/himga.memory.v1.EpisodeService/"
_HEALTH = "/grpc.health.v1.Health/"
_REFLECTION = "ServerReflection/ServerReflectionInfo"

# The one table: every method a himga server serves, by full name, with the right it needs.
# read: Retrieve, List*, Get*, Search*; write: Ingest*, Record*, Delete*; admin: Reset.
METHOD_RIGHTS: dict[str, Right | None] = {
    _MEMORY + "Ingest": "write",
    _MEMORY + "IngestBatch": "write",
    _MEMORY + "Retrieve": "read",
    _MEMORY + "Reset": "admin",
    _MEMORY + "Delete": "write",
    _MEMORY + "ListMessages": "read",
    _EPISODES + "RecordEpisode": "write",
    _EPISODES + "RecordEpisodes": "write",
    _EPISODES + "DeleteEpisode": "write",
    _EPISODES + "GetEpisode": "read",
    _EPISODES + "ListEpisodes": "read",
    _EPISODES + "SearchEpisodes": "read",
    _HEALTH + "Check": OPEN,
    _HEALTH + "List": OPEN,
    _HEALTH + "Watch": OPEN,
    "/grpc.reflection.v1alpha." + _REFLECTION: OPEN,
    "/grpc.reflection.v1." + _REFLECTION: OPEN,
}

_BEARER = "bearer "


class TokenSource(Protocol):
    """Where a server's tokens come from: an AuthFile, or the database's table
    (himga.service.database_tokens.DatabaseTokens)."""

    @property
    def tokens(self) -> Tokens: ...


class AuthFile:
    """The tokens of an auth file, read at start and again on `reload` (SIGHUP): calls in
    flight keep the tokens they were checked with; a file that no longer reads keeps the
    tokens loaded before (and says so in the log)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tokens = tokens.load(path)  # AuthFileError: the server does not start
        self._reloading = threading.Lock()

    @property
    def tokens(self) -> Tokens:
        return self._tokens

    def reload(self) -> bool:
        """Read the file again; False (keeping the tokens held) when it does not read."""
        with self._reloading:
            try:
                self._tokens = tokens.load(self.path)
            except tokens.AuthFileError as error:
                _log.error("auth file not reloaded, keeping its last tokens: %s", error)
                return False
        _log.info("auth file reloaded: %d tokens", len(self._tokens.grants))
        return True


class Auth:
    """Who may call what, as the core asks it once per call: `caller` before the request is
    read, `allow` once it is."""

    def __init__(self, source: TokenSource) -> None:
        self.source = source

    def caller(self, method: str, token: str | None) -> Grant | None:
        """The grant of `token` for a call of `method`; None for a method anyone may call.
        Unauthenticated without a token the source holds; PermissionDenied for a method the
        table does not list."""
        listed = method in METHOD_RIGHTS
        if listed and METHOD_RIGHTS[method] is OPEN:
            return None
        grant = self.source.tokens.find(token) if token is not None else None
        if grant is None:
            raise Unauthenticated(_UNAUTHENTICATED)
        if not listed:
            _log.warning("refused %s: no right is assigned to it (token %s)", method, grant.id)
            raise PermissionDenied(f"the server allows no one to call {method}")
        return grant

    def allow(self, grant: Grant | None, method: str, request: Any) -> None:
        """PermissionDenied unless `grant` gives the method's right on the request's namespace
        (a namespace that breaks the naming rule is left to the call to refuse)."""
        right = METHOD_RIGHTS.get(method)
        if grant is None or right is None:
            return
        namespace = _namespace(request)
        if namespace is _UNREAD or grant.allows(right, namespace):
            return
        if namespace is not None and namespace_violations(namespace):
            return  # no such namespace can exist: the call answers INVALID_ARGUMENT
        where = "every namespace" if namespace is None else f"namespace {namespace!r}"
        raise PermissionDenied(f"the token does not grant {right!r} on {where}")


def bearer_token(value: str | None) -> str | None:
    """The token of an `authorization` header or metadata value ("Bearer TOKEN"), or None."""
    if value is None or not value.lower().startswith(_BEARER):
        return None
    return value[len(_BEARER) :].strip()


_UNAUTHENTICATED = (
    "this server needs a token: send the metadata 'authorization: Bearer TOKEN' with a token "
    "from its auth file (`himga auth new-token`); the token sent, if any, is unknown or revoked"
)
_UNREAD = object()


def _namespace(request: Any) -> Any:
    """The namespace a request names; None when its message has no namespace field (the call
    then needs a grant of every namespace); _UNREAD for a request that could not be decoded
    (refused as such before this is asked)."""
    descriptor = getattr(request, "DESCRIPTOR", None)
    if descriptor is None:
        return _UNREAD
    if "namespace" not in descriptor.fields_by_name:
        return None
    return request.namespace
