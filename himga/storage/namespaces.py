"""NamespaceStores: the one way to open a namespace's stores, for the server, `himga mcp`, the
CLI and the tests alike. It knows the place (himga.storage.place: a data directory, a
PostgreSQL database, or None) and the kinds it opens there: the memory of a namespace whose
call names none, and the episode store of every namespace.

    stores = NamespaceStores(data_dir, memory="sqlite", episodes="sqlite", max_open=256)
    with stores.messages("agent-1") as opened:       # creates the namespace if it has to
        with opened.held(read=False):                  # if other threads share it
            opened.memory.ingest(message, session)
    with stores.episodes("agent-1", create=False) as episodes:
        ...                                             # None: never written; nothing was made
    stores.close()

Each namespace has two sides, its messages (a memory) and its episodes (an episode store).
- It creates: a write (`create=True`) makes what the namespace lacks: its record and its store.
  A namespace whose messages were so made and hold nothing when their last call ends (the first
  write failed: the caller gone, the disk full, the model unreachable) is unmade again: in
  process it is dropped, in a data directory its record goes (its empty database file stays,
  for its next write), so it is not listed as if something had been stored. Only the record
  goes, never a file another process could be writing; should a second process over the data
  directory (`himga mcp --data-dir`) store the namespace's first message as it goes, the
  record is made again: by this side, which looks once more after taking it, or by that
  process, whose every write ends by looking that the record is there. Over a database the
  record stays (servers there open a namespace by its record) and the listing passes over a
  namespace that never numbered a message (himga.service.catalog). Episodes made so are
  unmade the same way: in process dropped; in a data directory, where their database is their
  record and a file another process may hold, marked unmade beside it (the listing passes over
  a marked database), the mark taken away again by the write that stores the namespace's first
  episode, in this process or another (each write into a marked namespace looks whether its
  store holds an episode); over a database the listing passes over a namespace with no episode
  already. A process killed during a namespace's first write settles nothing, so in a data
  directory each side is also marked pending before that write makes it (layout.
  messages_pending, episodes_pending): the listing holds a side marked pending only once it
  holds something, looking into it (`messages_stored`, `episodes_stored`). The mark is taken
  away once the side is seen holding something (by the write's settling, any later write, or
  the listing); the messages' mark only then (unrecorded, they are not looked at, and another
  process's first write begun meanwhile may rely on that mark), the episodes' also when the
  settling marks them unmade. A data directory of an earlier himga has no marks: its records
  and databases are held as before.
- It records the memory a namespace holds, so that the namespace keeps it across restarts and
  every server over the place reads the same one: in a data directory a file written once,
  atomically (himga.storage.layout), in a database the namespace's row
  (himga.storage.postgres.recorded_memory). A memory other than the recorded one is
  MemoryMismatch.
- It opens only what exists for a read (`create=False`): a namespace never written is None,
  and nothing of it (no file, no row) is made. Messages exist when their record does; episodes
  when their database file does (in a data directory) or the namespace's row (in a database).
- It bounds: with `max_open`, at most that many stores stay open, messages and episodes
  counted alike; beyond it the least recently used idle durable store is closed (its files
  released) and opened again, transparently, by its next call. In a data directory, before a
  store is opened, idle stores are closed the same way while fewer than `ROOM_DESCRIPTORS`
  descriptors are free, so a server below its descriptor limit keeps room for new connections
  and answers; when every open store is in use and not even a store's few are free, the call is
  refused with OSError EMFILE (the server answers RESOURCE_EXHAUSTED: nothing changed). Stores
  in process memory are never closed so (they would lose what they hold).
- It closes every store at `close()`.

Memories need not be thread-safe: each open namespace's messages come with a lock its callers
take (`held`): the server's calls to one namespace run one at a time, to different ones side by
side, except that the reads of a memory that is thread-safe (BaseMemory.thread_safe) run side by
side too, and beside its writes (the memory orders them itself).
Episode stores are thread-safe.
"""

import errno
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from himga.episodes import registry as episode_kinds
from himga.episodes.base import EpisodeStore
from himga.episodes.meaning import embedder_of
from himga.errors import MemoryMismatch
from himga.memory import registry as memory_kinds
from himga.memory.base import BaseMemory
from himga.storage import exhaustion, layout
from himga.storage.files import write_private
from himga.storage.place import Place

T = TypeVar("T")

MAX_OPEN = 256
"""The default bound of a server on stores open at once (`himga serve --max-open-namespaces`):
about three file descriptors each for SQLite."""
ROOM_DESCRIPTORS = 48
"""Descriptors kept free when a store is opened in a data directory: for new connections, the
health probe and a store being opened (a SQLite database takes three: its file, -wal, -shm)."""
STORE_DESCRIPTORS = 4
"""The descriptors a store may take as it opens (SQLite: its file, -wal, -shm, and one spare)."""
MESSAGES = "messages"
EPISODES = "episodes"


def make_store(
    factory: Callable[[str, Place, Any], T], namespace: str, place: Place, options: Any
) -> T:
    """The one call of a registry's factory (memory or episode store): the store of `namespace`
    in `place`, with its kind's `options`."""
    return factory(namespace, place, options)


@dataclass(slots=True, eq=False)
class OpenNamespace:
    """A namespace's messages in use: the name of its memory, the memory, and the lock its
    calls take."""

    memory_name: str
    memory: BaseMemory
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0
    """Calls holding it now (counted under the opener's lock); only an unused one is closed."""
    fresh: bool = False
    """Made by a write into a namespace that had no record, and not yet seen holding anything
    by the end of its last call (the opener's to check: `_settle`)."""

    @property
    def durable(self) -> bool:
        return self.memory.durable

    @contextmanager
    def held(self, *, read: bool) -> Iterator[BaseMemory]:
        """The memory, for one call: `read` for one that only reads (a search, a listing),
        which takes no lock when the memory is thread-safe; any other call takes the lock."""
        if read and self.memory.thread_safe:
            yield self.memory
            return
        with self.lock:
            yield self.memory

    def close(self) -> None:
        with self.lock:
            self.memory.close()


@dataclass(slots=True, eq=False)
class OpenEpisodes:
    """A namespace's episode store in use."""

    store: EpisodeStore
    users: int = 0
    fresh: bool = False
    """Made by a write into a namespace that held no episodes, and not yet seen holding one by
    the end of its last call (the opener's to check: `_settle_episodes`)."""

    @property
    def durable(self) -> bool:
        return self.store.durable

    def close(self) -> None:
        self.store.close()


class NamespaceStores:
    """Opens namespaces' stores in `place` on demand (see the module's text): messages in the
    memory their first call names (`memory` when it names none), episodes in stores of kind
    `episodes` with `episode_options` (NAME -> value, himga.kinds.parse_options); at most
    `max_open` stores open (None: no bound); `memory_options`: the options of memory kinds (by
    name) not to be given their defaults. ValueError on an unknown kind or one `place` cannot
    keep, InvalidArgument on a bad option."""

    def __init__(
        self,
        place: Place,
        *,
        memory: str | None = None,
        episodes: str | None = None,
        max_open: int | None = None,
        memory_options: Mapping[str, Any] | None = None,
        episode_options: Mapping[str, object] | None = None,
    ) -> None:
        self.place = place
        self.memory_options = dict(memory_options or {})
        self.data_dir = place if isinstance(place, Path) else None
        self.database = None if place is None or isinstance(place, Path) else place
        over_database = self.database is not None
        self.default_memory = memory or (
            memory_kinds.DATABASE_MEMORY if over_database else memory_kinds.DEFAULT_MEMORY
        )
        self.episodes_kind = episodes or (
            episode_kinds.DATABASE_STORE if over_database else episode_kinds.DEFAULT_STORE
        )
        self.max_open = max_open
        self._memories: dict[str, Callable[[str, Place, Any], BaseMemory]] = {}
        problem = self.memory_problem(self.default_memory)  # fail now, at start-up
        if problem is not None:
            raise ValueError(problem)
        self._episodes = episode_kinds.store_factory(self.episodes_kind)
        problem = episode_kinds.place_problem(self.episodes_kind, place)
        if problem is not None:
            raise ValueError(problem)
        # Checked, and a model they name loaded, now: a bad one fails at start-up.
        self.episode_options = episode_kinds.store_options(
            self.episodes_kind, dict(episode_options or {})
        )
        embedder_of(self.episode_options)
        self._open: OrderedDict[tuple[str, str], OpenNamespace | OpenEpisodes] = OrderedDict()
        self._opening = threading.Lock()

    def __len__(self) -> int:
        """How many stores are open now (messages and episodes alike)."""
        return len(self._open)

    def memory_problem(self, memory: str) -> str | None:
        """Why memory `memory` cannot keep this place's namespaces (unknown, or kept elsewhere),
        or None when it can."""
        try:
            self._memory_factory(memory)
        except ValueError as error:
            return str(error)
        return memory_kinds.place_problem(memory, self.place)

    # --- using a namespace ---------------------------------------------------------------

    @contextmanager
    def messages(
        self, namespace: str, memory: str = "", *, create: bool = True
    ) -> Iterator[OpenNamespace | None]:
        """The namespace's messages, opened with `memory` ("" for the default) if they were
        not open, and kept open while the block runs; None, with nothing opened or made, when
        the namespace has none and `create` is False. MemoryMismatch when the namespace holds
        another memory; the names must have been checked (`memory_problem`)."""
        memory = memory or self.default_memory
        key = (MESSAGES, namespace)
        with self._opening:
            opened = self._open.get(key)
            if opened is None and (create or self._has_messages(namespace)):
                opened = self._opened_messages(key, memory, create=create)
            if opened is not None:
                self._hold(key, opened)
        if opened is None:
            yield None
            return
        assert isinstance(opened, OpenNamespace)
        try:
            _check_memory(namespace, opened.memory_name, memory)
            yield opened
        finally:
            if create and not opened.fresh:  # (fresh: the last call's release settles it)
                self._record_again(namespace, opened)
            self._release(opened, key)

    def _opened_messages(
        self, key: tuple[str, str], memory: str, *, create: bool
    ) -> OpenNamespace | None:
        """The namespace's messages opened with `memory` (called under the lock): made, and
        recorded, for a write that finds them unrecorded; None for a read that finds their
        record gone since its look (another process deleted the namespace): nothing is made."""
        namespace = key[1]
        self._make_room()
        fresh = self._record_missing(namespace)
        if fresh and not create:
            return None
        wrote: list[bool] = []

        def pending() -> None:  # marked before it is recorded: a kill during the write leaves both
            self._mark_pending(layout.messages_pending, namespace)
            wrote.append(True)

        recorded = self._recorded(namespace, memory, write=create, before_writing=pending)
        if recorded is None:  # a read, the record gone since the look: deleted meanwhile
            return None
        _check_memory(namespace, recorded, memory)
        if self.data_dir is not None:  # made by this call, if it wrote the record
            fresh = bool(wrote)
        factory = self._memory_factory(memory)
        options = self.memory_options.get(memory) or (
            memory_kinds.memory_kind(memory).default_options()
        )
        try:
            opened = OpenNamespace(memory, self._make(factory, namespace, options))
        except BaseException:
            # not opened (its model cannot load, say): the namespace holds nothing yet, so the
            # record just made would bind it to a memory for no message
            if fresh:  # (the pending mark stays: it may be another process's too)
                self._unrecord(namespace)
            raise
        opened.fresh = fresh
        self._open[key] = opened
        return opened

    @contextmanager
    def episodes(self, namespace: str, *, create: bool = True) -> Iterator[EpisodeStore | None]:
        """The namespace's episode store, opened if it was not, and kept open while the block
        runs; None, with nothing opened or made, when the namespace has none and `create` is
        False."""
        key = (EPISODES, namespace)
        with self._opening:
            opened = self._open.get(key)
            if opened is None and (create or self._has_episodes(namespace)):
                self._make_room()
                fresh = create and not self._episodes_held(namespace)
                if fresh:  # marked before the database is made: a kill leaves it marked
                    self._mark_pending(layout.episodes_pending, namespace)
                opened = OpenEpisodes(self._make(self._episodes, namespace, self.episode_options))
                opened.fresh = fresh
                self._open[key] = opened
            if opened is not None:
                self._hold(key, opened)
        if opened is None:
            yield None
            return
        assert isinstance(opened, OpenEpisodes)
        try:
            yield opened.store
        finally:
            if create:
                self._episodes_kept(namespace, opened)
            self._release(opened, key)

    def close(self) -> None:
        """Close every open store, once no call uses them any more."""
        with self._opening:
            opened, self._open = list(self._open.values()), OrderedDict()
        for store in opened:
            store.close()

    # --- records -----------------------------------------------------------------------

    def _has_messages(self, namespace: str) -> bool:
        """Whether a namespace whose messages are not open has a record (was ever written)."""
        if self.database is not None:
            from himga.storage.postgres import recorded_memory

            return recorded_memory(self.database, namespace, None) is not None
        if self.data_dir is None:
            return False
        return layout.memory_record(self.data_dir, namespace).exists()

    def _has_episodes(self, namespace: str) -> bool:
        """Whether a namespace whose episodes are not open has any kept."""
        if self.database is not None:
            from himga.storage.postgres import namespace_exists

            return namespace_exists(self.database, namespace)
        if self.data_dir is None:
            return False
        return layout.episodes_database(self.data_dir, namespace).exists()

    def _episodes_held(self, namespace: str) -> bool:
        """Whether a namespace whose episodes are not open is held for them, where a write may
        unmake what it made: in a data directory their database, unless marked unmade; in
        process never (they would be open). Over a database always (nothing is unmade there)."""
        if self.database is not None:
            return True
        if self.data_dir is None:
            return False
        return (
            layout.episodes_database(self.data_dir, namespace).exists()
            and not layout.episodes_unmade(self.data_dir, namespace).exists()
        )

    def messages_stored(self, namespace: str, memory: str) -> bool:
        """Whether `namespace`'s messages, recorded as memory `memory` and marked pending in a
        data directory, hold a message now: the listing's question (himga.service.catalog).
        They are opened if need be (nothing is made); when they hold one the mark is taken
        away. True where it cannot say (they cannot be opened, or the look failed)."""
        try:
            with self.messages(namespace, memory, create=False) as opened:
                if opened is None:
                    return False
                with opened.held(read=True) as held:
                    holds = _holds_something(held)
        except Exception:
            return True
        if holds:
            with suppress(OSError):  # left, the mark only costs the next listing a look
                self._unmark(layout.messages_pending, namespace)
        return holds

    def episodes_stored(self, namespace: str) -> bool:
        """Whether `namespace`'s episode store, marked pending in a data directory, holds an
        episode now (as `messages_stored`), its unmade mark taken away too when it does. Should
        the pending mark be gone and the store hold nothing (another process deleted the
        namespace between this look's test and its open, which made the store again, or its
        first write failed meanwhile), the store is marked unmade, then looked at once more,
        as `_settle_episodes` does."""
        assert self.data_dir is not None
        pending = layout.episodes_pending(self.data_dir, namespace)
        unmade = layout.episodes_unmade(self.data_dir, namespace)
        try:
            with self.episodes(namespace, create=False) as store:
                if store is None:
                    return False
                holds = _holds_episodes(store)
                if not holds and not pending.exists():
                    write_private(unmade, b"")
                    holds = _holds_episodes(store)
        except Exception:
            return True
        if holds:
            with suppress(OSError):  # left, the marks only cost the next listing a look
                pending.unlink(missing_ok=True)
                unmade.unlink(missing_ok=True)
        return holds

    def _episodes_kept(self, namespace: str, opened: OpenEpisodes) -> None:
        """After a write, while the call still holds the store: in a data directory, take the
        unmade and pending marks away should the store now hold an episode (stored by this
        write, or by another process's). A look at two files; the store is read only when one
        is there."""
        if self.data_dir is None:
            return
        marks = [
            mark(self.data_dir, namespace)
            for mark in (layout.episodes_unmade, layout.episodes_pending)
        ]
        if any(mark.exists() for mark in marks) and _holds_episodes(opened.store):
            for mark in marks:
                mark.unlink(missing_ok=True)

    def _record_missing(self, namespace: str) -> bool:
        """Whether `namespace` has no memory recorded yet, where a write may unmake what it
        made (see the module's text): in a data directory, or in process."""
        if self.database is not None:
            return False
        if self.data_dir is None:
            return True
        return not layout.memory_record(self.data_dir, namespace).exists()

    def _unrecord(self, namespace: str) -> None:
        """Take back the record a write made for `namespace`, which holds nothing."""
        if self.data_dir is not None:
            layout.memory_record(self.data_dir, namespace).unlink(missing_ok=True)

    def _recorded(
        self,
        namespace: str,
        memory: str,
        *,
        write: bool = True,
        before_writing: Callable[[], None] | None = None,
    ) -> str | None:
        """The memory recorded for `namespace`; `memory`, recorded now, if none is (or there is
        nowhere to record it). In a data directory, with `write` False (a read) nothing is
        recorded: None when there is no record; `before_writing` is called before a record is
        written (to mark the namespace pending first)."""
        if self.database is not None:
            from himga.storage.postgres import recorded_memory

            found = recorded_memory(self.database, namespace, memory)
            assert found is not None
            return found
        if self.data_dir is None:
            return memory
        record = layout.memory_record(self.data_dir, namespace)
        try:
            return record.read_text(encoding="utf-8")
        except FileNotFoundError:
            pass
        if not write:
            return None
        if before_writing is not None:
            before_writing()
        write_private(record, memory.encode("utf-8"))
        return memory

    # --- the bound -----------------------------------------------------------------------

    def _memory_factory(self, memory: str) -> Callable[[str, Place, Any], BaseMemory]:
        factory = self._memories.get(memory)
        if factory is None:
            factory = self._memories[memory] = memory_kinds.memory_factory(memory)
        return factory

    def _make(self, factory: Callable[[str, Place, Any], T], namespace: str, options: Any) -> T:
        """A store made by `factory` (room made for it by the caller); when the process ran
        out of descriptors all the same, every idle durable store is closed and it is tried
        once more (called under the lock)."""
        try:
            return make_store(factory, namespace, self.place, options)
        except Exception as error:
            if not exhaustion.out_of_descriptors(error):
                raise
            self._close_idle(keep=0)
        return make_store(factory, namespace, self.place, options)

    def _make_room(self) -> None:
        """In a data directory, close idle stores, least recently used first, while fewer than
        ROOM_DESCRIPTORS descriptors are free; OSError EMFILE when none is left to close and
        fewer than a store's STORE_DESCRIPTORS are free."""
        if self.data_dir is None:
            return
        free = exhaustion.free_descriptors()
        if free is None or free >= ROOM_DESCRIPTORS:
            return
        for key in self._idle():
            self._open.pop(key).close()
            free = exhaustion.free_descriptors()
            if free is None or free >= ROOM_DESCRIPTORS:
                return
        if free < STORE_DESCRIPTORS:
            raise OSError(errno.EMFILE, f"{free} file descriptors free, every open store in use")

    def _hold(self, key: tuple[str, str], opened: OpenNamespace | OpenEpisodes) -> None:
        self._open.move_to_end(key)
        opened.users += 1

    def _release(
        self, opened: OpenNamespace | OpenEpisodes, key: tuple[str, str] | None = None
    ) -> None:
        with self._opening:
            opened.users -= 1
            if opened.fresh and opened.users == 0:
                assert key is not None
                if isinstance(opened, OpenNamespace):
                    self._settle(key, opened)
                else:
                    self._settle_episodes(key, opened)
            self._close_idle()

    def _settle(self, key: tuple[str, str], opened: OpenNamespace) -> None:
        """After the last call of a fresh namespace (called under the lock, no call using it):
        kept when it holds something, else closed and unmade (the module's text). Looked at
        again once the record is gone: a message another process stored meanwhile keeps it."""
        opened.fresh = False
        namespace = key[1]
        if _holds_something(opened.memory):
            # recorded again should another process's failed first write have taken the record
            # away meanwhile (both found none), then the mark goes
            self._recorded(namespace, opened.memory_name)
            self._unmark(layout.messages_pending, namespace)
            return
        self._unrecord(namespace)
        if _holds_something(opened.memory):  # stored by another process as the record went
            self._recorded(namespace, opened.memory_name)
            self._unmark(layout.messages_pending, namespace)
            return
        self._open.pop(key)
        opened.close()
        # the pending mark stays (without a record nothing lists the namespace): another
        # process's first write, begun as the record went, may have found it and made none

    def _settle_episodes(self, key: tuple[str, str], opened: OpenEpisodes) -> None:
        """After the last call of a fresh episode store (called under the lock, no call using
        it): kept when it holds an episode, else closed and unmade (the module's text): in a
        data directory marked, and looked at again once marked: an episode another process
        stored meanwhile keeps it (that process's write may have looked before the mark). The
        pending mark goes once it is settled, kept or unmade; an error on the way leaves it,
        so that the listing looks into the store."""
        opened.fresh = False
        if not _holds_episodes(opened.store):
            if self.data_dir is not None:
                mark = layout.episodes_unmade(self.data_dir, key[1])
                write_private(mark, b"")
                if _holds_episodes(opened.store):
                    mark.unlink(missing_ok=True)
                else:
                    self._open.pop(key)
                    opened.close()
            else:
                self._open.pop(key)
                opened.close()
        self._unmark(layout.episodes_pending, key[1])

    def _record_again(self, namespace: str, opened: OpenNamespace) -> None:
        """After a write, while the call still holds the namespace (so it stays open) but not
        its lock: in a data directory, record the namespace's memory again should another
        process have unmade it as this one stored its first message, and take its pending mark
        away should one be left (by a process killed during the first write, or by another
        process's write under way) now that it holds a message (the module's text). A look at
        two files; the memory is read only when the record is gone or the mark is there."""
        if self.data_dir is None:
            return
        missing = not layout.memory_record(self.data_dir, namespace).exists()
        marked = layout.messages_pending(self.data_dir, namespace).exists()
        if not (missing or marked):
            return
        with opened.lock:  # other calls may be using it: wait for the one writing
            if _holds_something(opened.memory):
                if missing:
                    self._recorded(namespace, opened.memory_name)
                self._unmark(layout.messages_pending, namespace)

    def _mark_pending(self, mark: Callable[[Path, str], Path], namespace: str) -> None:
        """In a data directory, mark one side of `namespace` pending (layout.messages_pending or
        layout.episodes_pending): a write is about to make it."""
        if self.data_dir is not None:
            path = mark(self.data_dir, namespace)
            if not path.exists():
                write_private(path, b"")

    def _unmark(self, mark: Callable[[Path, str], Path], namespace: str) -> None:
        if self.data_dir is not None:
            mark(self.data_dir, namespace).unlink(missing_ok=True)

    def _idle(self) -> list[tuple[str, str]]:
        """The open stores no call uses that can be closed, least recently used first."""
        return [key for key, opened in self._open.items() if opened.users == 0 and opened.durable]

    def _close_idle(self, keep: int | None = None) -> None:
        """Close least recently used idle durable stores while more than `keep` (by default
        `max_open`) are open (called under the lock)."""
        keep = self.max_open if keep is None else keep
        if keep is None or len(self._open) <= keep:
            return
        for key in self._idle()[: len(self._open) - keep]:
            self._open.pop(key).close()


def _holds_something(memory: BaseMemory) -> bool:
    """Whether `memory` holds a message; True where it cannot say (it cannot list, or the
    listing failed): a namespace is unmade only when it is known to hold nothing."""
    try:
        return bool(memory.list(page_size=1).messages)
    except Exception:
        return True


def _holds_episodes(store: EpisodeStore) -> bool:
    """Whether `store` holds an episode; True where it cannot say (the listing failed): a
    namespace is unmade only when it is known to hold nothing."""
    try:
        return bool(store.list(page_size=1).episodes)
    except Exception:
        return True


def _check_memory(namespace: str, held: str, asked: str) -> None:
    """MemoryMismatch unless a call asking for memory `asked` may use a namespace holding `held`."""
    if held != asked:
        raise MemoryMismatch(f"namespace {namespace!r} holds memory {held!r}, not {asked!r}")
