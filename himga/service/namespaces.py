"""The namespaces a server holds: the naming rule, and one memory per namespace, made on demand.

Memories need not be thread-safe (the seed's are not), while gRPC runs calls on a thread pool:
each namespace has its own lock, so calls to one namespace run one at a time and calls to
different namespaces run side by side.

A server with a data directory records the memory each namespace was opened with, in
`<data_dir>/namespaces/<namespace>-<hash>.memory` (written once, atomically), so a namespace keeps
its memory across restarts too: a durable memory's data is never shadowed by another memory of
the same name after a restart.
"""

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from himga.memory.base import BaseMemory
from himga.memory.registry import MemoryFactory, memory_factory, namespace_file
from himga.service.errors import FieldViolation, InvalidRequest, MemoryMismatch

NAMESPACE_RULE = "1 to 128 characters of letters, digits, '.', '_', '-' and ':'"
_NAMESPACE = re.compile(r"[A-Za-z0-9._:-]{1,128}", re.ASCII)


def namespace_violations(namespace: str, path: str = "namespace") -> list[FieldViolation]:
    """What is wrong with `namespace` as a namespace name (nothing: an empty list)."""
    if not namespace:
        return [FieldViolation(path, f"required: {NAMESPACE_RULE}")]
    if _NAMESPACE.fullmatch(namespace) is None:
        return [FieldViolation(path, f"must be {NAMESPACE_RULE}")]
    return []


@dataclass(slots=True)
class OpenNamespace:
    """A namespace in use: the name of its memory, the memory, and the lock its calls take."""

    memory_name: str
    memory: BaseMemory
    lock: threading.Lock = field(default_factory=threading.Lock)


class Namespaces:
    """Opens each namespace once, with the memory its first call names, and keeps it open."""

    def __init__(self, default_memory: str, data_dir: Path | None) -> None:
        self._factories: dict[str, MemoryFactory] = {}
        self.default_memory = default_memory
        self.data_dir = data_dir
        self._factory(default_memory)  # fail now, at start-up, on an unknown default
        self._open: dict[str, OpenNamespace] = {}
        self._opening = threading.Lock()

    def memory_violations(self, memory: str) -> list[FieldViolation]:
        """What is wrong with `memory` as a memory name ("" is the default)."""
        if memory:
            try:
                self._factory(memory)
            except InvalidRequest as error:
                return error.violations
        return []

    def open(self, namespace: str, memory: str) -> OpenNamespace:
        """The namespace, opened now with `memory` ("" for the default) if it was not open.

        The name and the memory must have been checked (`namespace_violations`,
        `memory_violations`); a memory other than the open namespace's is MemoryMismatch."""
        memory = memory or self.default_memory
        opened = self._open.get(namespace)
        if opened is None:
            with self._opening:
                opened = self._open.get(namespace)
                if opened is None:
                    _check_memory(namespace, self._recorded(namespace, memory), memory)
                    made = self._factory(memory)(namespace, self.data_dir)
                    opened = self._open[namespace] = OpenNamespace(memory, made)
        _check_memory(namespace, opened.memory_name, memory)
        return opened

    def _recorded(self, namespace: str, memory: str) -> str:
        """The memory the data directory records for `namespace`; `memory`, recorded now, if it
        records none (or there is no data directory)."""
        if self.data_dir is None:
            return memory
        record = namespace_file(self.data_dir, "namespaces", namespace, ".memory")
        try:
            return record.read_text(encoding="utf-8")
        except FileNotFoundError:
            pass
        record.parent.mkdir(parents=True, exist_ok=True)
        scratch = record.with_name(record.name + ".tmp")
        with scratch.open("w", encoding="utf-8") as file:
            file.write(memory)
            file.flush()
            os.fsync(file.fileno())
        scratch.replace(record)
        return memory

    def close(self) -> None:
        """Close every open namespace's memory (its files), once no call uses them any more."""
        with self._opening:
            opened, self._open = list(self._open.values()), {}
        for namespace in opened:
            with namespace.lock:
                namespace.memory.close()

    def _factory(self, memory: str) -> MemoryFactory:
        factory = self._factories.get(memory)
        if factory is None:
            try:
                factory = self._factories[memory] = memory_factory(memory)
            except ValueError as error:
                raise InvalidRequest([FieldViolation("memory", str(error))]) from None
        return factory


def _check_memory(namespace: str, held: str, asked: str) -> None:
    """MemoryMismatch unless a call asking for memory `asked` may use a namespace holding `held`."""
    if held != asked:
        raise MemoryMismatch(f"namespace {namespace!r} holds memory {held!r}, not {asked!r}")
