"""Who may call what: the right each RPC needs (`METHOD_RIGHTS`, the one table) and the server
interceptor that checks a call's bearer token against the auth file (himga.service.tokens).

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

import contextvars
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import grpc

from himga.service import tokens
from himga.service.errors import PermissionDenied, Unauthenticated
from himga.service.interceptors import metadata_value, refusing, wrap
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
# read: Retrieve, List*, Get*, Search*; write: Ingest*, Record*, Delete*; admin: Reset,
# DeleteNamespace.
METHOD_RIGHTS: dict[str, Right | None] = {
    _MEMORY + "Ingest": "write",
    _MEMORY + "IngestBatch": "write",
    _MEMORY + "Retrieve": "read",
    _MEMORY + "Reset": "admin",
    _MEMORY + "Delete": "write",
    _MEMORY + "ListMessages": "read",
    _MEMORY + "ListNamespaces": "read",
    _MEMORY + "DeleteNamespace": "admin",
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

LISTS_NAMESPACES = frozenset({_MEMORY + "ListNamespaces"})
"""Methods that name no namespace but answer about many: any token with the method's right may
call them, and the handler shows only the namespaces it grants that right on (`readable`)."""

_BEARER = "bearer "
_GRANT: contextvars.ContextVar[Grant | None] = contextvars.ContextVar("himga_grant", default=None)


@contextmanager
def _granting(grant: Grant) -> Iterator[None]:
    reset = _GRANT.set(grant)
    try:
        yield
    finally:
        _GRANT.reset(reset)


def readable(context: object) -> Callable[[str], bool] | None:
    """For a call of LISTS_NAMESPACES: whether its token may read a namespace; None on a
    server that asks for no tokens (every namespace may be read)."""
    grant = _GRANT.get()
    if grant is None:
        return None
    return lambda namespace: grant.allows("read", namespace)


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


class AuthInterceptor(grpc.ServerInterceptor):
    """Refuses calls whose token is missing, unknown, or short of the method's right."""

    def __init__(self, auth: TokenSource, on_failure: Any = None) -> None:
        self._auth = auth
        self._on_failure = on_failure  # called with the failure's reason, as metrics count them

    def intercept_service(
        self, continuation: Any, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method: str = handler_call_details.method
        handler: grpc.RpcMethodHandler | None = continuation(handler_call_details)
        listed = method in METHOD_RIGHTS
        if listed and METHOD_RIGHTS[method] is OPEN:
            return handler
        grant = self._grant(handler_call_details)
        if grant is None:
            return refusing(handler, self._failed(Unauthenticated(_UNAUTHENTICATED), method))
        if not listed or handler is None:
            _log.warning("refused %s: no right is assigned to it (token %s)", method, grant.id)
            refused = PermissionDenied(f"the server allows no one to call {method}")
            return refusing(handler, self._failed(refused, method))
        right = METHOD_RIGHTS[method]
        assert right is not None
        if method in LISTS_NAMESPACES:
            if right not in grant.rights:
                refused = PermissionDenied(f"the token does not grant {right!r} on any namespace")
                return refusing(handler, self._failed(refused, method))
            return wrap(handler, method, around=lambda method, context: _granting(grant))

        def check(request: Any, context: grpc.ServicerContext) -> None:
            namespace = _namespace(request)
            if namespace is _UNREAD or grant.allows(right, namespace):
                return
            if namespace is not None and namespace_violations(namespace):
                return  # no such namespace can exist: the call answers INVALID_ARGUMENT
            where = "every namespace" if namespace is None else f"namespace {namespace!r}"
            raise self._failed(
                PermissionDenied(f"the token does not grant {right!r} on {where}"), method
            )

        return wrap(handler, method, check=check)

    def _grant(self, details: grpc.HandlerCallDetails) -> Grant | None:
        value = metadata_value(details, "authorization")
        if value is None or not value.lower().startswith(_BEARER):
            return None
        return self._auth.tokens.find(value[len(_BEARER) :].strip())

    def _failed(self, error: Exception, method: str) -> Exception:
        _log.info("refused %s: %s", method, type(error).__name__)
        if self._on_failure is not None:
            self._on_failure(type(error).__name__)
        return error


_UNAUTHENTICATED = (
    "this server needs a token: send the metadata 'authorization: Bearer TOKEN' with a token "
    "from its auth file (`himga auth new-token`); the token sent, if any, is unknown or revoked"
)
_UNREAD = object()


def _namespace(request: Any) -> Any:
    """The namespace a request names; None when its message has no namespace field (the call
    then needs a grant of every namespace); _UNREAD for a request that could not be decoded
    (refused as such right after)."""
    descriptor = getattr(request, "DESCRIPTOR", None)
    if descriptor is None:
        return _UNREAD
    if "namespace" not in descriptor.fields_by_name:
        return None
    return request.namespace
