"""`himga serve --database` processes for the PostgreSQL tests and benchmark: started on
127.0.0.1 port 0, their logs kept (read by a thread, so a full pipe never blocks a server),
stopped with SIGTERM at the end."""

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from himga.service import RemoteMemory
from tests.server_process import start_listening


@dataclass
class Serving:
    """A running `himga serve`: its process, its HOST:PORT and what it has logged so far."""

    process: subprocess.Popen[str]
    target: str
    log: list[str] = field(default_factory=list)


@contextmanager
def serving(url: str, *extra: str) -> Iterator[Serving]:
    """One `himga serve --database url` until the block ends."""
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--database", url, *extra]
    process, target = start_listening(command)
    served = Serving(process, target)
    assert process.stderr is not None
    stderr = process.stderr

    def drain() -> None:
        for line in stderr:
            served.log.append(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        yield served
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(5)


@contextmanager
def several(url: str, count: int, *extra: str) -> Iterator[list[Serving]]:
    """`count` servers over one database, started one after the other."""
    with ExitStack() as stack:
        yield [stack.enter_context(serving(url, *extra)) for _ in range(count)]


def listed(memory: RemoteMemory) -> list[str]:
    """Every id a namespace lists, in order, page after page."""
    ids: list[str] = []
    token = ""
    while True:
        page = memory.list(page_size=1000, page_token=token)
        ids += [stored.id for stored in page.messages]
        token = page.next_page_token
        if not token:
            return ids
