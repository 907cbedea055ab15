"""A door of a test's own, to show that a door is one module and one line in DOORS: over TCP,
each line a client sends is `METHOD JSON` (a method's short name, its request in ProtoJSON),
and the line it gets back is the answer's ProtoJSON, or `ERROR CODE message`."""

import socketserver
import threading

from google.protobuf import json_format

from himga.service.core.context import CallContext
from himga.service.core.core import Core
from himga.service.doors import DoorConfig
from himga.service.errors import describe

SERVICE = "/himga.memory.v1.MemoryService/"


class LineDoor:
    def __init__(self, core: Core, address: tuple[str, int]) -> None:
        self.core = core
        door = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for raw in self.rfile:
                    self.wfile.write(door.answer(raw.decode(), self.client_address) + b"\n")

        self._server = socketserver.ThreadingTCPServer(address, Handler)
        self._server.daemon_threads = True

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def answer(self, line: str, peer: tuple[str, int]) -> bytes:
        name, _, body = line.strip().partition(" ")
        method = self.core.methods[SERVICE + name]
        context = CallContext(method.name, peer=f"line:{peer[0]}:{peer[1]}")
        try:
            request = json_format.Parse(body, method.input())
            answer = self.core.call(request, context)
        except Exception as error:
            described = describe(error)
            return f"ERROR {described.kind.code.name} {described.message}".encode()
        return json_format.MessageToJson(answer, indent=None).encode()

    def start(self) -> None:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def build(core: Core, config: DoorConfig) -> LineDoor:
    return LineDoor(core, config.addresses["line"])
