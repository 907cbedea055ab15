"""The kit's side of the wire: stubs for a target, fresh namespaces, marker words, and what a
failed call's status says (its code; its field violations, read by himga.service.errors)."""

import http.client
import re
import secrets
import string
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.conformance.tls import http2_only, mismatch, ssl_context
from himga.status import ERROR_DOMAIN, field_violations, reason_of

if TYPE_CHECKING:
    from himga.client.channels import ClientTls


class CheckFailed(AssertionError):
    """A check saw the server break the contract; the message says what it saw."""


class NotExercised(Exception):
    """A check could not bring about what it holds the server to (a write meant to fail was
    answered in time): it passes, and the table says why it held nothing (the message)."""


GRPC, HTTP = "gRPC", "HTTP"
"""The transports the kit speaks: a gRPC port, or an HTTP port's Connect JSON."""


class Wire:
    """The stubs of one target over one transport, with the per-call deadline the checks use.
    `health` is None over a transport that has no health service (HTTP)."""

    def __init__(
        self, memory: Any, episodes: Any, health: Any, timeout: float, transport: str = GRPC
    ) -> None:
        self.memory = memory
        self.episodes = episodes
        self.health = health
        self.timeout = timeout
        self.transport = transport

    @classmethod
    def of_channel(cls, channel: grpc.Channel, timeout: float) -> "Wire":
        # Any: the typeshed stub of HealthStub does not declare its methods.
        health: Any = health_pb2_grpc.HealthStub(channel)
        memory = memory_pb2_grpc.MemoryServiceStub(channel)
        return cls(memory, memory_pb2_grpc.EpisodeServiceStub(channel), health, timeout)

    def ingest(self, namespace: str, *messages: pb.Message, session: str = "s1") -> None:
        """Store `messages` one Ingest each, in one session."""
        for message in messages:
            self.memory.Ingest(
                pb.IngestRequest(
                    namespace=namespace,
                    message=message,
                    session=pb.Session(session_id=session),
                ),
                timeout=self.timeout,
            )

    def retrieve(
        self,
        namespace: str,
        query: str,
        limit: int = 0,
        filter: pb.MessageFilter | None = None,
        max_context_tokens: int = 0,
    ) -> pb.RetrieveResponse:
        response: pb.RetrieveResponse = self.memory.Retrieve(
            pb.RetrieveRequest(
                namespace=namespace,
                query=query,
                limit=limit,
                filter=filter,
                max_context_tokens=max_context_tokens,
            ),
            timeout=self.timeout,
        )
        return response

    def store(self, namespace: str, *items: pb.IngestItem) -> list[str]:
        """Store `items` in one IngestBatch; the ids it answers."""
        response: pb.IngestBatchResponse = self.memory.IngestBatch(
            pb.IngestBatchRequest(namespace=namespace, items=items), timeout=self.timeout
        )
        return list(response.ids)

    def delete(
        self, namespace: str, ids: tuple[str, ...] = (), filter: pb.MessageFilter | None = None
    ) -> int:
        response: pb.DeleteResponse = self.memory.Delete(
            pb.DeleteRequest(namespace=namespace, ids=ids, filter=filter), timeout=self.timeout
        )
        return response.deleted

    def list_page(
        self,
        namespace: str,
        page_size: int = 0,
        page_token: str = "",
        filter: pb.MessageFilter | None = None,
    ) -> pb.ListMessagesResponse:
        response: pb.ListMessagesResponse = self.memory.ListMessages(
            pb.ListMessagesRequest(
                namespace=namespace, page_size=page_size, page_token=page_token, filter=filter
            ),
            timeout=self.timeout,
        )
        return response

    def reset(self, namespace: str) -> None:
        self.memory.Reset(pb.ResetRequest(namespace=namespace), timeout=self.timeout)


class _Bearer(grpc.UnaryUnaryClientInterceptor):
    """Sends `authorization: Bearer TOKEN` with every unary call."""

    def __init__(self, token: str) -> None:
        self._metadata = ("authorization", f"Bearer {token}")

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        details = client_call_details._replace(
            metadata=[*(client_call_details.metadata or ()), self._metadata]
        )
        return continuation(details, request)


SEND_ANY_SIZE = ("grpc.max_send_message_length", -1)
"""The kit sends requests of any size: the server's limit is what it checks."""


@contextmanager
def connect(
    target: str, timeout: float, token: str | None = None, tls: "ClientTls | None" = None
) -> Iterator[Wire]:
    """A Wire on a channel to `target` (TLS when `tls` is given: what it trusts and, for
    mutual TLS, presents; plaintext otherwise), once the channel is ready (ConnectionError when
    it is not within `timeout` seconds, or at once when the server's TLS and the kit's do not
    match), sending `token` as a bearer token with every call when given. ValueError when a
    file of `tls` cannot be read."""
    from himga.client.channels import channel as channel_to

    channel = channel_to(target, tls, [SEND_ANY_SIZE])
    try:
        _ready(channel, target, tls, timeout)
        called = grpc.intercept_channel(channel, _Bearer(token)) if token is not None else channel
        wire = Wire.of_channel(called, timeout)
        _answers_grpc(wire, target, tls)
        yield wire
    finally:
        channel.close()


def _ready(channel: grpc.Channel, target: str, tls: "ClientTls | None", timeout: float) -> None:
    """Return once `channel` is ready. Each time it fails to connect, the kit's own TLS
    handshake looks for what does not match (ConnectionError saying it, rather than waiting
    `timeout` seconds for a connection that cannot be made); ConnectionError too when it is not
    ready within `timeout` seconds."""
    woken = threading.Event()

    def seen(state: grpc.ChannelConnectivity) -> None:
        if state is grpc.ChannelConnectivity.TRANSIENT_FAILURE:
            woken.set()

    ready = grpc.channel_ready_future(channel)
    ready.add_done_callback(lambda _: woken.set())
    channel.subscribe(seen, try_to_connect=True)
    deadline = time.monotonic() + timeout
    try:
        while not ready.done():
            left = deadline - time.monotonic()
            waited = left > 0 and woken.wait(left)
            woken.clear()
            if ready.done():
                return
            if said := mismatch(target, tls, tls is not None, min(timeout, 5.0)):
                raise ConnectionError(said)
            if not waited:
                raise ConnectionError(f"no gRPC server answers at {target}")
    finally:
        channel.unsubscribe(seen)
        ready.cancel()


_NOT_GRPC = re.compile(r"Received http2 header with status: (\d+)")
"""What gRPC's client says of an HTTP/2 answer without a gRPC status: no gRPC server sent it."""


def _answers_grpc(wire: Wire, target: str, tls: "ClientTls | None" = None) -> None:
    """ConnectionError when what answers HTTP/2 at `target` does not answer a gRPC call (its
    health check) in gRPC: an HTTP port, most likely. Any gRPC status will do, even an error."""
    try:
        wire.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=wire.timeout)
    except grpc.RpcError as error:
        details = error.details() if isinstance(error, grpc.Call) else ""
        if found := _NOT_GRPC.search(details or ""):
            scheme = "https" if tls is not None else "http"
            raise ConnectionError(
                f"no gRPC server answers at {target}: an HTTP/2 server does, answering a gRPC "
                f"call with HTTP status {found.group(1)} and no gRPC status (an HTTP port?); "
                f"give an HTTP port as --http {scheme}://{target}, and the gRPC port as --target"
            ) from None


@contextmanager
def connect_http(
    url: str, timeout: float, token: str | None = None, tls: "ClientTls | None" = None
) -> Iterator[Wire]:
    """A Wire calling the HTTP port at `url` ("http://HOST:PORT", or "https://HOST:PORT" over
    TLS, trusting what `tls` trusts, the system's CAs without it, and presenting its client
    certificate for mutual TLS) in Connect JSON, once something answers HTTP there
    (ConnectionError when nothing does within `timeout` seconds, or the server's TLS and the
    kit's do not match), sending `token` as a bearer token with every call when given.
    ValueError for `tls` with a plaintext URL, or a file of `tls` that cannot be read."""
    from himga.conformance.connect import ConnectStub

    secure = check_http_url(url, tls)
    context = ssl_context(tls) if secure else None
    try:
        urllib.request.urlopen(
            urllib.request.Request(url, method="HEAD"), timeout=timeout, context=context
        )
    except urllib.error.HTTPError as error:  # an HTTP answer: something serves HTTP there
        if error.code == 421:  # but not to the name the kit calls it by
            raise ConnectionError(
                f"the HTTP port at {url} answers no request addressed to "
                f"{urllib.parse.urlsplit(url).netloc} (421 Misdirected Request): call it by a "
                "name it answers (localhost, 127.0.0.1, its --host), or start it with "
                "--allowed-host for this one"
            ) from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as error:
        said = mismatch(url, tls, secure, min(timeout, 5.0), http=True)
        if said is None and isinstance(error, http.client.HTTPException):
            said = _not_http(url, error)
        if said is None and secure and http2_only(url, tls, min(timeout, 5.0)):
            said = _http2_only(url, "it closes a TLS connection offering HTTP/1.1 alone")
        raise ConnectionError(said or f"no HTTP server answers at {url}: {error}") from None
    memory = ConnectStub(url, "MemoryService", token, context)
    episodes = ConnectStub(url, "EpisodeService", token, context)
    yield Wire(memory, episodes, None, timeout, HTTP)


def check_http_url(url: str, tls: "ClientTls | None") -> bool:
    """Whether the HTTP port at `url` is reached over TLS (https); ValueError for a plaintext
    URL given with `tls`, whose files are for TLS ports only."""
    secure = urllib.parse.urlsplit(url).scheme == "https"
    if tls is not None and not secure:
        raise ValueError(
            f"--http {url}: a plaintext URL, with --tls-ca given (the --tls-* files are for TLS "
            f"ports): give the HTTP port of a TLS server as https://HOST:PORT"
        )
    return secure


def _not_http(url: str, error: http.client.HTTPException) -> str | None:
    """What the answer to an HTTP/1.1 request at `url` that is not HTTP/1.1 says of who sent
    it: HTTP/2 alone (a frame: 3 bytes of length, then the type, 4 for SETTINGS) is how a gRPC
    port answers."""
    line = error.args[0] if isinstance(error, http.client.BadStatusLine) and error.args else ""
    if isinstance(line, str) and len(line) > 3 and line[3] == "\x04":
        return _http2_only(url, "an HTTP/2 SETTINGS frame came back")
    if isinstance(error, http.client.RemoteDisconnected):
        return None  # a TLS port with no TLS, or an HTTP/2-only one over TLS: the caller looks
    return f"no HTTP server answers at {url}: the answer is not HTTP ({error!r:.80})"


def _http2_only(url: str, seen: str) -> str:
    where = urllib.parse.urlsplit(url).netloc
    return (
        f"no HTTP server answers HTTP/1.1 at {url}: an HTTP/2-only server does ({seen}), as "
        f"a gRPC port does; give a gRPC port as --target {where}, and the HTTP port as --http"
    )


def fresh_namespace(check: str) -> str:
    """A namespace no one else uses (the kit may share the server with others)."""
    return f"conformance.{check}.{secrets.token_hex(6)}"


def marker() -> str:
    """A made-up word that no stored text holds by chance: letters only, so that any
    tokenizer keeps it whole."""
    return "zq" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(10))


def code_of(error: grpc.RpcError) -> grpc.StatusCode | None:
    return error.code() if isinstance(error, grpc.Call) else None


def expect_error(
    call: Callable[[], object],
    code: grpc.StatusCode,
    field: str | None = None,
    reason: str | None = None,
) -> None:
    """Fail unless `call` ends with `code`; when `field` is given, with a BadRequest field
    violation naming it; when `reason` is given, with a google.rpc.ErrorInfo of that reason in
    himga's domain."""
    try:
        call()
    except grpc.RpcError as error:
        got = code_of(error)
        if got != code:
            name = got.name if got is not None else type(error).__name__
            raise CheckFailed(f"got {name}, want {code.name}") from None
        if reason is not None and reason_of(error) != reason:
            raise CheckFailed(
                f"{code.name} without a google.rpc.ErrorInfo of domain {ERROR_DOMAIN!r} and "
                f"reason {reason!r} (reason: {reason_of(error)!r})"
            ) from None
        if field is not None:
            fields = [v.field for v in field_violations(error)]
            if field not in fields:
                raise CheckFailed(
                    f"{code.name} without a BadRequest field violation for {field!r} "
                    f"(violations: {fields})"
                ) from None
        return
    want = f"{code.name} naming {field!r}" if field else code.name
    raise CheckFailed(f"the call succeeded; want {want}")


def unsupported(error: grpc.RpcError) -> bool:
    """Whether a failed call was refused as something its memory cannot do: FAILED_PRECONDITION
    with the ErrorInfo reason UNSUPPORTED (the contract allows it for deletes, filters and
    listings, never a silent half answer)."""
    return code_of(error) == grpc.StatusCode.FAILED_PRECONDITION and reason_of(error) == (
        "UNSUPPORTED"
    )


def expect_absent(response: pb.RetrieveResponse, word: str, what: str) -> None:
    """Fail if a Retrieve answered with a text holding `word`, in a hit or in its context (a
    memory that finds by meaning may answer with other texts: the nearest it holds)."""
    held = [hit.turn_id for hit in response.hits if word in hit.content]
    if held or word in response.context:
        raise CheckFailed(f"{what}: {word!r} was retrieved (hits {held})")


def expect_empty(response: pb.RetrieveResponse, what: str) -> None:
    """Fail unless a Retrieve answered nothing: an empty context and no hits."""
    if response.context or response.hits:
        raise CheckFailed(
            f"{what}: want an empty answer, got {len(response.hits)} hits and context "
            f"{response.context[:80]!r}"
        )
