"""NullMemory: stores nothing, recalls nothing. The pipeline check and the "LLM only" baseline."""

from pathlib import Path

from himga.data.schema import Message, Session
from himga.memory.base import BaseMemory


class NullMemory(BaseMemory):
    """Discards every message; `retrieve` always returns `""`; `reset` does nothing."""

    @classmethod
    def for_namespace(cls, namespace: str, data_dir: Path | None) -> "NullMemory":
        """The registry's factory: a NullMemory needs neither name nor directory."""
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        pass

    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None:
        pass
