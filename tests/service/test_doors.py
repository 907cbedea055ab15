"""A door is one module and one line in DOORS: the server opens it at the address its
configuration gives, over the same core as the gRPC port (a namespace written through one is
read through the other), and `himga serve` offers `--NAME-port` for it."""

import socket
from collections.abc import Iterator

import pytest

from himga.cli import build_parser
from himga.data import Message, Session
from himga.service import RemoteMemory, doors
from himga.service.server import ServerConfig, start_server

LINE = doors.DoorKind("tests.service.line_door", "a line of text a call")


@pytest.fixture
def with_line_door(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(doors.DOORS, "line", LINE)
    yield


def ask(port: int, line: str) -> str:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(line.encode() + b"\n")
        return connection.makefile().readline().strip()


def test_a_door_in_doors_is_opened_over_the_same_core(with_line_door: None) -> None:
    server, port = start_server(
        ServerConfig("127.0.0.1:0", memory="keyword", door_addresses={"line": ("127.0.0.1", 0)})
    )
    try:
        door = server.doors["line"]
        memory = RemoteMemory(f"127.0.0.1:{port}", "doors")
        try:
            said = Message(role="Ada", content="a kayak", turn_id="T1")
            memory.store([(said, Session(session_id="s"))])
        finally:
            memory.close()
        answer = ask(door.port, 'Retrieve {"namespace": "doors", "query": "kayak"}')
        assert '"T1"' in answer, answer
        refused = ask(door.port, 'Retrieve {"namespace": "no spaces allowed"}')
        assert refused.startswith("ERROR INVALID_ARGUMENT"), refused
    finally:
        server.stop(None).wait()


def test_serve_offers_a_port_option_for_each_door(with_line_door: None) -> None:
    args = build_parser().parse_args(["serve", "--line-port", "0", "--http-port", "0"])
    assert (args.line_port, args.http_port) == (0, 0)


def test_a_door_of_no_name_is_refused_before_anything_opens() -> None:
    with pytest.raises(ValueError, match="no door named nope"):
        start_server(ServerConfig("127.0.0.1:0", door_addresses={"nope": ("127.0.0.1", 0)}))
