"""Large JSON bodies parsed in a helper process, so that other calls are not held up.

Reading JSON is one call into C that holds the interpreter lock until the whole body is read: a
body of megabytes (valid, or 800,000 unknown keys) would stall every other call of the server
for as long, whatever its namespace. A body of at least `APART_BYTES` is therefore read in a
process of its own (unless the plan, which reads a valid body several times faster, reads it
first: `HERE_BYTES`) (started on first need, by spawning: never a fork of a server with gRPC's
threads), while the server's thread waits without the lock; the message comes back as its
binary form, which the server reads back far faster than JSON. Its answers are the same codec's
(himga.http.codec), valid or not.
"""

import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message

from himga.status import Undecodable

APART_BYTES = 1 << 20
"""A JSON body of at least this many bytes is read in the helper process (but see HERE_BYTES)."""
HERE_BYTES = 4 << 20
"""A JSON body of at most this many bytes is first read by the plan (himga.http.fastjson) in the
server's thread, and only one it is unsure of (invalid, or unusual) goes to the helper. msgspec
holds the lock for about 6 ms a MB, where the json module of the old plan held it for 20 to 50:
a valid body this large holds it no longer than a body of APART_BYTES did; an invalid one is
mostly refused by the plan at its first fault, before reading on."""
HELPERS = 1
"""Helper processes (each reads one body at a time)."""

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _helpers() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(HELPERS, mp_context=multiprocessing.get_context("spawn"))
        return _pool


def parse(data: bytes, kind: type[Message]) -> "Message | Undecodable":
    """`data` read as a `kind` by the JSON codec, in the helper process."""
    found = _helpers().submit(_parse_here, data, kind.DESCRIPTOR.full_name).result()
    if isinstance(found, bytes):
        return kind.FromString(found)
    result: Undecodable = found
    return result


def _parse_here(data: bytes, full_name: str) -> Any:
    """In the helper: the binary form of the message `data` reads as, or its Undecodable."""
    from himga_proto.memory.v1 import memory_pb2  # noqa: F401  (the types, registered)

    from himga.http import codec

    kind = message_factory.GetMessageClass(
        descriptor_pool.Default().FindMessageTypeByName(full_name)
    )
    found = codec.JSON.parse_here(data, kind)
    return found.SerializeToString() if isinstance(found, Message) else found


def shutdown() -> None:
    """Stop the helper, if one was started (a new one starts on the next large body)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True)
