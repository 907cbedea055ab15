"""The namespaces a server holds: the naming rule, and one memory per namespace, made on demand.

Memories need not be thread-safe (the seed's are not), while gRPC runs calls on a thread pool:
each namespace has its own lock, so calls to one namespace run one at a time and calls to
different namespaces run side by side.

A server with a data directory records the memory each namespace was opened with, in
`<data_dir>/namespaces/<namespace>-<hash>.memory` (written once, atomically); a server over a
database records it in the namespace's row (himga.storage.postgres.recorded_memory), where
every server over the database reads it. So a namespace keeps its memory across restarts too:
a durable memory's data is never shadowed by another memory of the same name after a restart.
That record is also what makes a namespace exist: a call that only reads or resets
(`using(..., create=False)`) opens nothing and creates nothing for a namespace that does not
exist.

With `max_open`, at most that many namespaces stay open: when another is opened, the least
recently used idle namespace whose memory is durable is closed (its files released), and opened
again, transparently, by its next call. In-process memories are never closed so (they would
lose what they hold).
"""

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from himga.memory.base import BaseMemory
from himga.memory.registry import MemoryFactory, memory_factory, namespace_file, place_problem
from himga.service import resources
from himga.service.errors import FieldViolation, InvalidRequest, MemoryMismatch, ResourceExhausted
from himga.storage.files import write_private
from himga.storage.place import Place

_WAIT_SECONDS = 0.01
"""How often `closing` looks whether the calls using a namespace have ended."""
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
    users: int = 0
    """Calls holding it now (counted under Namespaces' lock); only an unused one is closed."""


class Namespaces:
    """Opens each namespace on demand, with the memory its first call names, and keeps at most
    `max_open` open (None: all), kept in `place` (himga.storage.place)."""

    def __init__(self, default_memory: str, place: Place, max_open: int | None = None) -> None:
        self._factories: dict[str, MemoryFactory] = {}
        self.default_memory = default_memory
        self.place = place
        self.data_dir = place if isinstance(place, Path) else None
        self.database = None if place is None or isinstance(place, Path) else place
        self.max_open = max_open
        self._factory(default_memory)  # fail now, at start-up, on an unknown default
        problem = place_problem(default_memory, place)
        if problem is not None:
            raise ValueError(problem)
        self._open: OrderedDict[str, OpenNamespace] = OrderedDict()
        self._opening = threading.Lock()

    def __len__(self) -> int:
        """How many namespaces are open now."""
        return len(self._open)

    def memory_violations(self, memory: str) -> list[FieldViolation]:
        """What is wrong with `memory` as a memory name ("" is the default)."""
        if memory:
            try:
                self._factory(memory)
            except InvalidRequest as error:
                return error.violations
            problem = place_problem(memory, self.place)
            if problem is not None:
                return [FieldViolation("memory", problem)]
        return []

    def open(self, namespace: str, memory: str) -> OpenNamespace:
        """The namespace, opened now with `memory` ("" for the default) if it was not open.
        With `max_open` it may be closed as soon as this returns: a call uses `using`."""
        with self.using(namespace, memory) as opened:
            assert opened is not None
            return opened

    @contextmanager
    def using(
        self, namespace: str, memory: str, *, create: bool = True
    ) -> Iterator[OpenNamespace | None]:
        """The namespace, opened with `memory` ("" for the default) if it was not open, and
        kept open while the block runs. None, with nothing opened or created, when it does not
        exist and `create` is False.

        The name and the memory must have been checked (`namespace_violations`,
        `memory_violations`); a memory other than the namespace's is MemoryMismatch."""
        memory = memory or self.default_memory
        with self._opening:
            opened = self._open.get(namespace)
            if opened is None and (create or self._exists(namespace)):
                _check_memory(namespace, self._recorded(namespace, memory), memory)
                opened = self._open[namespace] = OpenNamespace(
                    memory, self._make(namespace, memory)
                )
            if opened is not None:
                self._open.move_to_end(namespace)
                opened.users += 1
        if opened is None:
            yield None
            return
        try:
            _check_memory(namespace, opened.memory_name, memory)
            yield opened
        finally:
            with self._opening:
                opened.users -= 1
                self._close_idle()

    def open_memories(self) -> dict[str, str]:
        """The namespaces open now, each with the name of its memory."""
        with self._opening:
            return {name: opened.memory_name for name, opened in self._open.items()}

    @contextmanager
    def closing(self, namespace: str) -> Iterator[None]:
        """Close `namespace` once no call uses it, and keep every call from opening it while the
        block runs (which then removes what it holds: himga.service.catalog.forget)."""
        while True:
            with self._opening:
                opened = self._open.get(namespace)
                if opened is None or opened.users == 0:
                    if opened is not None:
                        del self._open[namespace]
                        with opened.lock:
                            opened.memory.close()
                    yield
                    return
            time.sleep(_WAIT_SECONDS)

    def _make(self, namespace: str, memory: str) -> BaseMemory:
        """The memory of `namespace`; when the process is out of file descriptors, every idle
        durable namespace is closed and it is tried once more (called under the lock)."""
        factory = self._factory(memory)
        try:
            return factory(namespace, self.place)
        except Exception as error:
            if not isinstance(resources.classify(error), ResourceExhausted):
                raise
            self._close_idle(keep=0)
        return factory(namespace, self.place)

    def _exists(self, namespace: str) -> bool:
        """Whether a namespace that is not open was ever made (it has a record)."""
        if self.database is not None:
            from himga.storage.postgres import recorded_memory

            return recorded_memory(self.database, namespace, None) is not None
        if self.data_dir is None:
            return False
        return namespace_file(self.data_dir, "namespaces", namespace, ".memory").exists()

    def _close_idle(self, keep: int | None = None) -> None:
        """Close least recently used idle durable namespaces while more than `keep` (by default
        `max_open`) are open (called under the lock)."""
        keep = self.max_open if keep is None else keep
        if keep is None or len(self._open) <= keep:
            return
        idle = [
            name
            for name, opened in self._open.items()
            if opened.users == 0 and opened.memory.durable
        ]
        for name in idle[: len(self._open) - keep]:
            opened = self._open.pop(name)
            with opened.lock:
                opened.memory.close()

    def _recorded(self, namespace: str, memory: str) -> str:
        """The memory the data directory records for `namespace`; `memory`, recorded now, if it
        records none (or there is no data directory)."""
        if self.database is not None:
            from himga.storage.postgres import recorded_memory

            found = recorded_memory(self.database, namespace, memory)
            assert found is not None
            return found
        if self.data_dir is None:
            return memory
        from himga.service.catalog import remember_name  # catalog reads the naming rule here

        remember_name(self.data_dir, namespace)
        record = namespace_file(self.data_dir, "namespaces", namespace, ".memory")
        try:
            return record.read_text(encoding="utf-8")
        except FileNotFoundError:
            pass
        write_private(record, memory.encode("utf-8"))
        return memory

    def close(self) -> None:
        """Close every open namespace's memory (its files), once no call uses them any more."""
        with self._opening:
            opened, self._open = list(self._open.values()), OrderedDict()
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
