"""ReadWriteLock: many readers at once or one writer, for the keyword memories' index
(himga.memory.indexed).

Searches and listings only read the index a memory derives, so they run side by side (the
ranking's C core runs without the interpreter's lock, so on several cores at once); a write, a
read-in of what others committed and a reset change it, so each runs alone. Writers are not
starved: once a writer waits, readers arriving after it wait behind it, so a steady stream of
searches cannot hold a write off; the readers already in finish first. Not reentrant: a thread
holding either side takes neither again.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Shared (`reading`) and exclusive (`writing`) holds, writers preferred."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Held with other readers, never with a writer; waits while a writer holds or waits."""
        with self._changed:
            while self._writing or self._writers_waiting:
                self._changed.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                if self._readers == 0:
                    self._changed.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Held alone: waits for the readers in and any writer to finish."""
        with self._changed:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._changed.wait()
            except BaseException:  # gave up waiting: the readers behind it go on
                self._writers_waiting -= 1
                self._changed.notify_all()
                raise
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()
