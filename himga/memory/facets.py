"""Facets: what a filter reads of each stored turn besides its session (which Windows keeps):
its role, its time and its metadata, by turn number, for every keyword memory.

A filtered search checks only the turns the query's terms reach, and a filtered listing or
delete each stored turn once, all in process memory: about 16 bytes a turn (roles and distinct
metadata are kept once, and each turn holds their numbers). `selector` turns a MessageFilter
into one predicate over turn numbers, whose answers are those of MessageFilter.matches;
`selection` into the same test as the C ranking core applies it to each turn it scores (masks
over session, role and metadata numbers, and a range of times), built from the distinct
sessions, roles and metadata only, so a filtered search costs about what an unfiltered one does.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from himga.memory.filters import MessageFilter
from himga.memory.ranking import Selection
from himga.memory.windows import NO_SESSION, Windows

NO_TIME = -(2**63)
"""The time of a turn that has none (in microseconds since 1970 UTC, as times are kept)."""


class Facets:
    """Each turn's role, time and metadata, by turn number (numbers as Windows gives them)."""

    def __init__(self) -> None:
        self._role_of = array("i")  # turn number -> role number
        self._roles: list[str] = []  # role number -> role
        self._role_numbers: dict[str, int] = {}
        self._times = array("q")  # turn number -> time, or NO_TIME
        self._metadata_of = array("i")  # turn number -> metadata number (0: none)
        self._metadata: list[Mapping[str, str]] = [{}]  # metadata number -> the pairs
        self._metadata_numbers: dict[frozenset[tuple[str, str]], int] = {frozenset(): 0}

    def add(
        self,
        numbers: Iterable[int],
        roles: Sequence[str],
        times: Sequence[int | None],
        metadata: Sequence[Mapping[str, str]],
    ) -> None:
        """Record the facets of turns, new or replaced, by their numbers."""
        numbers = list(numbers)
        end = max(numbers, default=-1) + 1
        if end > len(self._times):
            missing = end - len(self._times)
            self._role_of.extend([0] * missing)
            self._times.extend([NO_TIME] * missing)
            self._metadata_of.extend([0] * missing)
        role_of, known_roles = self._role_of, self._role_numbers
        times_of, metadata_of = self._times, self._metadata_of
        for number, role, time, pairs in zip(numbers, roles, times, metadata, strict=True):
            role_number = known_roles.get(role)
            role_of[number] = self._number_of_role(role) if role_number is None else role_number
            times_of[number] = NO_TIME if time is None else time
            metadata_of[number] = self._number_of_metadata(pairs) if pairs else 0

    def role(self, number: int) -> str:
        return self._roles[self._role_of[number]]

    def time(self, number: int) -> int | None:
        time = self._times[number]
        return None if time == NO_TIME else time

    def times_of(self, numbers: np.ndarray) -> np.ndarray:
        """The times of turns `numbers` (an int array) as int64, NO_TIME for a turn without one."""
        times = np.frombuffer(self._times, dtype=np.int64)
        held = numbers < times.size
        found = np.full(numbers.size, NO_TIME, dtype=np.int64)
        found[held] = times[numbers[held]]  # a copy: the array may grow once this returns
        return found

    def metadata(self, number: int) -> Mapping[str, str]:
        return self._metadata[self._metadata_of[number]]

    def _number_of_role(self, role: str) -> int:
        number = self._role_numbers.get(role)
        if number is None:
            number = self._role_numbers[role] = len(self._roles)
            self._roles.append(role)
        return number

    def _number_of_metadata(self, pairs: Mapping[str, str]) -> int:
        if not pairs:
            return 0
        key = frozenset(pairs.items())
        number = self._metadata_numbers.get(key)
        if number is None:
            number = self._metadata_numbers[key] = len(self._metadata)
            self._metadata.append(dict(pairs))
        return number

    def selection(self, chosen: MessageFilter, windows: Windows) -> Selection:
        """`chosen` as the ranking's C core applies it: the Selection of the turns that match
        it (those `selector` allows)."""
        checks: list[tuple[array[int], bytes]] = []
        if chosen.session_ids:
            sessions = bytearray(windows.sessions)
            for number in windows.session_numbers(chosen.session_ids):
                sessions[number] = 1
            checks.append((windows.session_of(), bytes(sessions)))
        if chosen.roles:
            roles = bytearray(len(self._roles))
            for role in chosen.roles:
                if role in self._role_numbers:
                    roles[self._role_numbers[role]] = 1
            checks.append((self._role_of, bytes(roles)))
        if chosen.metadata:
            wanted = chosen.metadata.items()
            matching = bytes(wanted <= pairs.items() for pairs in self._metadata)
            checks.append((self._metadata_of, matching))
        after, before = chosen.time_range()
        times = None
        if after is not None or before is not None:
            low = after if after is not None else NO_TIME + 1
            high = before if before is not None else 2**63 - 1
            times = (self._times, low, high)
        return Selection(tuple(checks), times)

    def selector(self, chosen: MessageFilter, windows: Windows) -> Callable[[int], bool]:
        """A predicate over turn numbers: whether the stored turn of that number matches
        `chosen` (a number holding no turn never does)."""
        session_of = windows.session_of()
        sessions = windows.session_numbers(chosen.session_ids) if chosen.session_ids else None
        roles = (
            {self._role_numbers[r] for r in chosen.roles if r in self._role_numbers}
            if chosen.roles
            else None
        )
        after, before = chosen.time_range()
        timed = after is not None or before is not None
        low = after if after is not None else NO_TIME + 1
        high = before if before is not None else 2**63 - 1
        wanted = chosen.metadata.items()
        role_of, times, metadata_of, distinct = (
            self._role_of,
            self._times,
            self._metadata_of,
            self._metadata,
        )
        # metadata number -> whether it holds every wanted pair, worked out once for each
        matching: dict[int, bool] = {}

        def holds_wanted(metadata_number: int) -> bool:
            found = matching.get(metadata_number)
            if found is None:
                found = matching[metadata_number] = wanted <= distinct[metadata_number].items()
            return found

        def allowed(number: int) -> bool:
            session = session_of[number]
            if session == NO_SESSION or (sessions is not None and session not in sessions):
                return False
            if roles is not None and role_of[number] not in roles:
                return False
            if timed and not low <= times[number] < high:
                return False
            return not wanted or holds_wanted(metadata_of[number])

        return allowed
