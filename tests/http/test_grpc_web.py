"""gRPC-Web requests with broken framing are answered INVALID_ARGUMENT (reason INVALID_REQUEST)
naming what is wrong, in the gRPC-Web trailers, and the port keeps serving."""

import base64
import struct
import urllib.parse

import pytest
from google.rpc import error_details_pb2, status_pb2
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.status import ERROR_DOMAIN
from tests.http.conftest import MEMORY, Served

REQUEST = pb.RetrieveRequest(namespace="n", query="x").SerializeToString()
BROKEN = {
    "empty": (b"", "the gRPC-Web body is empty"),
    "unframed": (REQUEST, "the gRPC-Web body is not framed"),
    "short header": (b"\x00\x00\x00", "less than its 5-byte header"),
    "short frame": (
        struct.pack(">BI", 0, len(REQUEST) + 10) + REQUEST,
        f"its header says {len(REQUEST) + 10} bytes, {len(REQUEST)} follow",
    ),
    "two frames": (
        (struct.pack(">BI", 0, len(REQUEST)) + REQUEST) * 2,
        "after its one message frame",
    ),
}


def trailers(raw: bytes) -> dict[str, str]:
    """The trailers frame of a gRPC-Web answer."""
    flags, size = struct.unpack(">BI", raw[:5])
    assert flags == 0x80, raw
    found = {}
    for line in raw[5 : 5 + size].decode().split("\r\n"):
        if line:
            name, _, value = line.partition(":")
            found[name.strip().lower()] = value.strip()
    return found


@pytest.mark.parametrize("case", BROKEN)
def test_broken_framing_is_invalid_argument_naming_what_is_wrong(served: Served, case: str) -> None:
    body, wanted = BROKEN[case]
    status, headers, raw = served.post(
        MEMORY + "Retrieve", body, {"Content-Type": "application/grpc-web+proto"}
    )
    assert status == 200
    found = trailers(raw)
    assert found["grpc-status"] == "3" == headers["grpc-status"]
    assert wanted in urllib.parse.unquote(found["grpc-message"])
    details = status_pb2.Status.FromString(base64.b64decode(found["grpc-status-details-bin"]))
    info, bad = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
    assert details.details[0].Unpack(info) and details.details[1].Unpack(bad)
    assert (info.reason, info.domain) == ("INVALID_REQUEST", ERROR_DOMAIN)
    assert wanted in bad.field_violations[0].description
    # The port keeps serving a well-framed call.
    framed = struct.pack(">BI", 0, len(REQUEST)) + REQUEST
    status, _, raw = served.post(
        MEMORY + "Retrieve", framed, {"Content-Type": "application/grpc-web+proto"}
    )
    assert (
        status == 200
        and trailers(raw[5 + struct.unpack(">I", raw[1:5])[0] :])["grpc-status"] == "0"
    )
