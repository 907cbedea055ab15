"""`himga serve` with one extra memory, "gated", whose Retrieve blocks until the test lets it
finish: the query names a directory; the memory writes `started` there, then waits for
`release`. test_serve.py uses it to hold a call in flight while it stops the server."""

import sys
import time
from pathlib import Path

from himga.cli import main
from himga.data.conversation import Message, Session
from himga.kinds import Keeps, Kind, NoOptions
from himga.memory import registry
from himga.memory.base import BaseMemory


class GatedMemory(BaseMemory):
    @classmethod
    def for_namespace(
        cls, namespace: str, data_dir: Path | None, options: NoOptions
    ) -> "GatedMemory":
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        pass

    def retrieve(self, query: str) -> str:
        gate = Path(query)
        (gate / "started").touch()
        while not (gate / "release").exists():
            time.sleep(0.01)
        return "released"

    def reset(self) -> None:
        pass


if __name__ == "__main__":
    registry.register(
        "gated", Kind("__main__", "GatedMemory.for_namespace", Keeps.PROCESS, shared=False)
    )
    sys.exit(main(["serve", *sys.argv[1:]]))
