"""Running out: of file descriptors, memory, disk, or room in an answer.

`classify` gives what ran out the status it is documented to have (the proto lists them):
  no file descriptors, no memory      RESOURCE_EXHAUSTED  (reason RESOURCE_EXHAUSTED)
  the store cannot write (disk full,  UNAVAILABLE         (reason STORE_UNAVAILABLE)
  read-only or failing file system,
  an embeddings endpoint that does
  not answer)
Each changed nothing: the write rolled back. An endpoint that does not answer leaves health
as it is (the store can still write). An embedding model that cannot be used at all (not
fetched, a file missing or corrupt, an endpoint refusing it) is FAILED_PRECONDITION (reason
UNSUPPORTED): asking again cannot help until the server's operator fixes it, as the server's
log says how. While the store cannot write, `StoreHealth` says
so (the server's health is NOT_SERVING) and probes the data directory each second; the first
probe that can write a `PROBE_BYTES` file turns it back to SERVING. It probes once as the server
starts too, so a server started on a full disk is NOT_SERVING from its first health check.
Reading never needs a write, so reads go on answering meanwhile (an episode's access count that
cannot be written is skipped). Running out of descriptors leaves health SERVING: the namespaces'
opener closes idle stores to make room (himga.storage.namespaces).

`cut_to_fit` keeps a Retrieve or SearchEpisodes answer under the message limit: hits are
dropped from the end (the weakest first), then the context's end, until it fits. `fit_page`
keeps a page of a listing (ListMessages, ListEpisodes) under it: the page holds fewer items, and
is asked of the store again with that page size, so its next_page_token goes on right after the
last item it holds (nothing skipped, nothing repeated). An item that alone is over the limit
cannot be sent at all: `too_big` is the error that says so, naming it and what to do.
"""

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from google.protobuf.message import Message as ProtoMessage
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.errors import (
    DatabaseUnavailable,
    HimgaError,
    IncompatibleStoreError,
    ModelError,
    ModelUnreachable,
    Unsupported,
)
from himga.service.errors import ResourceExhausted, StoreUnavailable
from himga.storage import exhaustion
from himga.storage.files import make_private_dir

_log = logging.getLogger(__name__)

PROBE_BYTES = 256 * 1024
PROBE_SECONDS = 1.0
ANSWER_MARGIN_BYTES = 1024
"""Room left in the message limit for gRPC's framing of an answer."""

Cut = TypeVar("Cut", pb.RetrieveResponse, pb.SearchEpisodesResponse)
Page = TypeVar("Page", bound=ProtoMessage)

_OUT_OF_DESCRIPTORS = "the server has no file descriptors left; nothing changed, call again later"
_OUT_OF_MEMORY = "the server ran out of memory for this call; nothing changed: send less at once"
_STORE = "the store cannot write ({}); nothing of this call was stored, call again later"
_MODEL = "the embedding model did not answer; nothing of this call was stored, call again later"
_NO_MODEL = (
    "this server cannot use its embedding model, so a memory that searches by meaning cannot "
    "open; nothing of this call was stored. The server's log names the file or the command "
    "that fixes it (for a catalog model, `himga models fetch NAME`)"
)


def classify(error: Exception, store: "StoreHealth | None" = None) -> Exception:
    """The error a call answers for `error`: a himga kind for what ran out, else `error`.
    A store that cannot write (a database that cannot be reached) is reported to `store`."""
    if isinstance(error, DatabaseUnavailable):
        if store is not None:
            store.failed(str(error))
        return StoreUnavailable(str(error))
    if isinstance(error, ModelUnreachable):  # an endpoint down: its address stays here
        _log.warning("the embedding model failed a call: %s", error)
        return StoreUnavailable(_MODEL)
    if isinstance(error, ModelError):  # its file or its command stays here too
        _log.error("the embedding model cannot be used: %s", error)
        return Unsupported(_NO_MODEL)
    if isinstance(error, IncompatibleStoreError) and error.public is not None:
        _log.error("a store cannot be opened as it is: %s", error)  # with its command
        return IncompatibleStoreError(error.public)
    if isinstance(error, HimgaError):
        return error
    found = _classify(error)
    if isinstance(found, StoreUnavailable) and store is not None:
        store.failed(str(error))
    return found


def _classify(error: Exception) -> Exception:
    if isinstance(error, MemoryError) or exhaustion.sqlite_code(error) == exhaustion.SQLITE_NOMEM:
        return ResourceExhausted(_OUT_OF_MEMORY)
    if exhaustion.out_of_descriptors(error):
        return ResourceExhausted(_OUT_OF_DESCRIPTORS)
    if exhaustion.cannot_write(error):
        if isinstance(error, OSError):
            return StoreUnavailable(_STORE.format(os.strerror(error.errno or 0).lower()))
        return StoreUnavailable(_STORE.format(str(error)))
    return error


class StoreHealth:
    """Whether the store can write. `failed` (a call found it cannot) tells the listener
    False and probes until a write succeeds, then tells it True. The probe is a write in
    `data_dir`, or `probe` (a server over a database: whether the database takes writes)."""

    def __init__(self, data_dir: Path | None, probe: Callable[[], bool] | None = None) -> None:
        self.data_dir = data_dir
        self._probe = probe if probe is not None else (self.can_write if data_dir else None)
        self.writable = True
        self.listener: Callable[[bool], None] | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def failed(self, why: str) -> None:
        with self._lock:
            if not self.writable or self._probe is None:
                return
            self.writable = False
        _log.error("the store cannot write (%s): health NOT_SERVING until it can", why)
        self._tell(False)
        threading.Thread(target=self._probe_until_writable, name="himga-probe").start()

    def check(self) -> None:
        """Probe now (as the server starts): a store that cannot write is NOT_SERVING from the
        first health check, not from the first write that fails."""
        if self.data_dir is not None:
            with contextlib.suppress(OSError):  # the probe says what is wrong
                make_private_dir(self.data_dir)  # a server's data dir is made as it starts
        if self._probe is not None and not self._probe():
            self.failed("no write could land as the server started")

    def stop(self) -> None:
        self._stopped.set()

    def _probe_until_writable(self) -> None:
        assert self._probe is not None
        while not self._stopped.wait(PROBE_SECONDS):
            if self._probe():
                with self._lock:
                    self.writable = True
                _log.info("the store can write again: health SERVING")
                self._tell(True)
                return

    def can_write(self) -> bool:
        """Whether a PROBE_BYTES file can be written, synced and removed in the data dir."""
        assert self.data_dir is not None
        probe = self.data_dir / ".himga-write-probe"
        try:
            descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(descriptor, bytes(PROBE_BYTES))
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
                probe.unlink(missing_ok=True)
        except OSError:
            return False
        return True

    def _tell(self, writable: bool) -> None:
        if self.listener is not None:
            self.listener(writable)


def cut_to_fit(response: Cut, max_bytes: int | None) -> Cut:
    """`response`, its weakest hits and then the end of its context dropped until it is at
    most `max_bytes` less ANSWER_MARGIN_BYTES (unchanged when it fits, or with no limit)."""
    if max_bytes is None:
        return response
    room = max_bytes - ANSWER_MARGIN_BYTES
    size = response.ByteSize()
    if size <= room:
        return response
    while response.hits and size > room:
        size -= _field_size(response.hits[-1].ByteSize())
        response.hits.pop()
    if size > room:
        over = size - room
        encoded = response.context.encode("utf-8")
        keep = max(0, len(encoded) - over - 8)  # 8: the length prefix may shrink by a few bytes
        response.context = encoded[:keep].decode("utf-8", errors="ignore")
    _log.info("a %s was cut to fit the %d-byte message limit", type(response).__name__, max_bytes)
    return response


def fit_page(
    fetch: Callable[[int], Page],
    page_size: int,
    items: Callable[[Page], Sequence[ProtoMessage]],
    max_bytes: int | None,
    too_large: Callable[[ProtoMessage, int], Exception],
) -> Page:
    """The page `fetch(page_size)` answers, or when it is over `max_bytes` less
    ANSWER_MARGIN_BYTES, the page `fetch` answers for as many of its first `items` as fit:
    asked of the store again, so that its next page token goes on right after its last item
    (a page cut here would need a token only the store can make). `too_large(item, room)` is
    raised when not even the first item fits."""
    page = fetch(page_size)
    if max_bytes is None:
        return page
    room = max_bytes - ANSWER_MARGIN_BYTES
    first = len(items(page))
    while (size := page.ByteSize()) > room:
        held = items(page)
        sizes = [_field_size(item.ByteSize()) for item in held]
        used = size - sum(sizes)  # the fields beside the items: the page token
        keep = 0
        while keep < len(held) and used + sizes[keep] <= room:
            used += sizes[keep]
            keep += 1
        if keep == 0:
            if not held:  # nothing but its token, which the store keeps short
                raise AssertionError(f"a {type(page).__name__} of no items is {size} bytes")
            raise too_large(held[0], room)
        # Fewer than it held (all of them do not fit): the loop ends.
        page = fetch(keep)
    if len(items(page)) < first:
        _log.info(
            "a %s was cut from %d items to %d to fit the %d-byte message limit",
            type(page).__name__,
            first,
            len(items(page)),
            max_bytes,
        )
    return page


def too_big(what: str, size: int, room: int, method: str, remedy: str) -> Unsupported:
    """The error of an item (`what`: "message 'D1:3'") that alone is `size` bytes, more than an
    answer of `method` may hold (`room`): it cannot be sent, and asking again will not help."""
    return Unsupported(
        f"{what} is {size} bytes, more than one {method} answer may hold ({room} bytes), so "
        f"the server cannot send it: {remedy}"
    )


def _field_size(length: int) -> int:
    """The bytes a length-delimited field of `length` bytes takes (tag, length, content)."""
    return 1 + len(_varint(length)) + length


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)
