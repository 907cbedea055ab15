"""A write whose COMMIT reached the database but whose answer was lost with the connection:
the server cannot know it committed, answers UNAVAILABLE (STORE_UNAVAILABLE), and the client's
retry with the same request id is answered from the receipt the write left, storing nothing
twice."""

import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from himga.data import Message, Session
from himga.service import RemoteMemory, create_server
from himga.service.errors import StoreUnavailable
from himga.storage.postgres import Database
from tests.postgres.servers import listed
from tests.postgres_cluster import Postgres

RECEIPT = b"INSERT INTO himga_receipts"


class CommitCutter:
    """A TCP proxy to PostgreSQL that, while `armed`, lets through the COMMIT of a transaction
    that wrote a receipt, gives the database time to commit it, then cuts the connection before
    the answer gets back."""

    def __init__(self, port: int) -> None:
        self._upstream = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.armed = False
        self.cut = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self._upstream))
            cutting = threading.Event()  # set: the answers of this connection are dropped
            threading.Thread(target=self._up, args=(client, server, cutting), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, cutting), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, cutting: threading.Event) -> None:
        wrote_receipt = False
        try:
            while data := client.recv(65536):
                wrote_receipt = wrote_receipt or RECEIPT in data
                if data.endswith(b"COMMIT\0"):
                    if self.armed and wrote_receipt:
                        cutting.set()
                        server.sendall(data)
                        time.sleep(0.5)  # the database commits; its answer is never passed on
                        self.cut += 1
                        self.armed = False
                        break
                    wrote_receipt = False
                server.sendall(data)
        except OSError:
            pass
        for end in (client, server):
            end.close()

    def _down(self, server: socket.socket, client: socket.socket, cutting: threading.Event) -> None:
        try:
            while data := server.recv(65536):
                if not cutting.is_set():
                    client.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def cutter(postgres: Postgres) -> Iterator[CommitCutter]:
    proxy = CommitCutter(postgres.port)
    yield proxy
    proxy.close()


def test_a_write_whose_commit_answer_was_lost_is_answered_from_its_receipt_on_retry(
    cutter: CommitCutter, postgres: Postgres
) -> None:
    url = postgres.url.replace(f":{postgres.port}/", f":{cutter.port}/")
    namespace = f"lost-{uuid.uuid4().hex}"
    with Database(url) as database:
        server, port = create_server("127.0.0.1:0", database=database)
        memory = RemoteMemory(f"127.0.0.1:{port}", namespace, timeout=30)
        try:
            memory.store([(Message(role="Ada", content="first"), Session(session_id="s0"))])
            # No turn_id: the server makes an id, so a write stored twice would show two.
            item = (Message(role="Ada", content="kayak on the lake"), Session(session_id="s"))
            cutter.armed = True
            with pytest.raises(StoreUnavailable, match="database is unavailable"):
                memory.store([item], request_id="lost-1")
            assert cutter.cut == 1
            (made,) = memory.store([item], request_id="lost-1")  # the retry
            ids = listed(memory)
            assert len(ids) == 2 and ids[1] == made  # stored once, by the first call
            assert [hit.turn_id for hit in memory.search("kayak")] == [made]
        finally:
            memory.close()
            server.stop(None).wait()
