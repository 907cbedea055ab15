"""gRPC-Web requests whose framing is broken, answered INVALID_ARGUMENT naming what is wrong.

A unary gRPC-Web request is one frame: a flag byte (0, or 1 for a compressed message), a
four-byte big-endian length, and that many bytes of message. connect-python answers an empty
body, or bytes that are not a frame, as UNIMPLEMENTED "unary request has zero messages"; here
such a body is refused before it reaches connect-python, as gRPC-Web: a trailers frame (and the
same in the headers) with status INVALID_ARGUMENT, reason INVALID_REQUEST, and the violation.
"""

import base64
import struct
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf import any_pb2
from google.rpc import status_pb2

from himga.service.errors import FieldViolation, InvalidRequest, describe

_FRAME = 5
_TRAILERS = 0x80
_PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")
"""What gRPC's grpc-message leaves as it is (the rest is percent-encoded)."""


def broken_framing(environ: dict[str, Any]) -> str | None:
    """What is wrong with the framing of a gRPC-Web request's body; None when it is one
    whole frame, or the request is not gRPC-Web."""
    kind = environ.get("CONTENT_TYPE", "")
    if not kind.startswith("application/grpc-web") or environ.get("REQUEST_METHOD") != "POST":
        return None
    stream = environ["wsgi.input"]
    body: bytes = stream.read()
    stream.seek(0)
    if not body:
        return "the gRPC-Web body is empty: a unary call sends one message in a frame"
    if body[0] not in (0, 1):
        return (
            f"the gRPC-Web body is not framed: its first byte is {body[0]:#04x}, not a message "
            "frame's flag (0x00, or 0x01 compressed)"
        )
    if len(body) < _FRAME:
        return f"the gRPC-Web frame is short: {len(body)} bytes, less than its 5-byte header"
    (length,) = struct.unpack(">I", body[1:_FRAME])
    after = len(body) - _FRAME
    if after < length:
        return f"the gRPC-Web frame is short: its header says {length} bytes, {after} follow"
    if after > length:
        return (
            f"the gRPC-Web body has {after - length} bytes after its one message frame "
            "(a unary call sends one message)"
        )
    return None


def refuse(why: str, start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The gRPC-Web answer refusing a request for `why`: INVALID_ARGUMENT, INVALID_REQUEST."""
    described = describe(InvalidRequest([FieldViolation("", why)]))
    status = status_pb2.Status(code=described.kind.code.value[0], message=described.message)
    for detail in described.details():
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    return answer_status(status, start_response)


def answer_status(status: status_pb2.Status, start_response: Callable[..., Any]) -> Iterable[bytes]:
    """A gRPC-Web answer of no message, ending with `status` (in a trailers frame, and the same
    in the headers)."""
    trailers = [
        ("grpc-status", str(status.code)),
        ("grpc-message", urllib.parse.quote(status.message, safe=_PRINTABLE)),
        ("grpc-status-details-bin", base64.b64encode(status.SerializeToString()).decode()),
    ]
    block = "".join(f"{name}: {value}\r\n" for name, value in trailers).encode()
    frame = struct.pack(">BI", _TRAILERS, len(block)) + block
    headers = [("Content-Type", "application/grpc-web+proto"), *trailers]
    start_response("200 OK", [*headers, ("Content-Length", str(len(frame)))])
    return [frame]
