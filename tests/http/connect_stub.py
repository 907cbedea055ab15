"""A stand-in for a generated gRPC stub that calls over the HTTP port instead (Connect JSON, as
a browser or curl sends it), so that a client written over gRPC stubs (RemoteMemory) runs the
same suites over HTTP. A failed call raises `ConnectCallError`, a grpc.RpcError and grpc.Call
carrying the Connect error's code, message and details as a gRPC call's status would, so the
client reads it as it reads any failed call."""

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf import any_pb2, json_format, message_factory
from himga_proto.memory.v1 import memory_pb2

from himga.conformance.connect import ConnectCallError
from himga.http.handlers import CODES

_BY_CONNECT = {code.value: status for status, code in CODES.items()}


class ConnectStub:
    """The methods of `service` ("MemoryService") at the HTTP port `base` ("http://h:p")."""

    def __init__(self, base: str, service: str) -> None:
        self._base = base
        self._service = memory_pb2.DESCRIPTOR.services_by_name[service]

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = self._service.methods_by_name[name]
        answer = message_factory.GetMessageClass(method.output_type)
        url = f"{self._base}/{self._service.full_name}/{name}"

        def call(request: Any, timeout: float | None = None, metadata: Any = None) -> Any:
            headers = {"Content-Type": "application/json"}
            for key, value in metadata or ():
                headers[key] = value
            if timeout is not None:
                headers["Connect-Timeout-Ms"] = str(int(timeout * 1000))
            body = json_format.MessageToJson(request, preserving_proto_field_name=True)
            sent = urllib.request.Request(url, data=body.encode(), headers=headers)
            try:
                with urllib.request.urlopen(sent) as reply:
                    return json_format.Parse(reply.read(), answer())
            except urllib.error.HTTPError as error:
                raise _failed(error.read()) from None

        return call


def _failed(body: bytes) -> ConnectCallError:
    error = json.loads(body)
    details = []
    for detail in error.get("details", []):
        packed = any_pb2.Any(
            type_url=f"type.googleapis.com/{detail['type']}",
            value=base64.b64decode(detail["value"] + "=="),
        )
        details.append(packed)
    code = _BY_CONNECT.get(error.get("code", ""), grpc.StatusCode.UNKNOWN)
    return ConnectCallError(code, error.get("message", ""), details)
