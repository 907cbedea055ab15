"""MessageFilter: which stored messages a call concerns (the proto's MessageFilter, by the same
field names), and what each memory needs to apply one.

Every criterion that is set must hold, so each one added narrows the selection: `session_ids`
(any of them), `roles` (any of them, exactly), `after` (the message's time is at or after it),
`before` (strictly before it; so `after`/`before` ranges that meet neither overlap nor leave a
gap) and `metadata` (every pair present, exactly). A message without a time never matches a
filter that sets `after` or `before`. The empty filter matches every message.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from himga.errors import InvalidArgument
from himga.memory.times import micros


@dataclass(frozen=True, slots=True)
class MessageFilter:
    """A selection of stored messages; see the module's text for what each field means."""

    session_ids: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    after: datetime | None = None
    before: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __init__(
        self,
        session_ids: Iterable[str] = (),
        roles: Iterable[str] = (),
        after: datetime | None = None,
        before: datetime | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if isinstance(session_ids, str) or isinstance(roles, str):
            # One id or role is a collection of one, not of its characters.
            raise InvalidArgument("filter", "session_ids and roles are lists of strings")
        for name, moment in (("after", after), ("before", before)):
            if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
                raise InvalidArgument(f"filter.{name}", "must be a datetime with a time zone")
        if after is not None and before is not None and before <= after:
            raise InvalidArgument("filter.before", "must be later than filter.after")
        object.__setattr__(self, "session_ids", frozenset(session_ids))
        object.__setattr__(self, "roles", frozenset(roles))
        object.__setattr__(self, "after", after)
        object.__setattr__(self, "before", before)
        object.__setattr__(self, "metadata", MappingProxyType(dict(metadata or {})))

    def __bool__(self) -> bool:
        """Whether the filter restricts anything (the empty filter matches every message)."""
        return bool(
            self.session_ids
            or self.roles
            or self.after is not None
            or self.before is not None
            or self.metadata
        )

    def time_range(self) -> tuple[int | None, int | None]:
        """`after` and `before` in microseconds since 1970 UTC (None where unset)."""
        return (
            None if self.after is None else micros(self.after),
            None if self.before is None else micros(self.before),
        )

    def matches(
        self, session_id: str, role: str, time: int | None, metadata: Mapping[str, str]
    ) -> bool:
        """Whether a message of `session_id`, said by `role`, at `time` (microseconds since
        1970 UTC, None for none) with `metadata` is selected. The one definition of a match:
        the stores' faster paths are tested against it."""
        if self.session_ids and session_id not in self.session_ids:
            return False
        if self.roles and role not in self.roles:
            return False
        after, before = self.time_range()
        if after is not None or before is not None:
            if time is None:
                return False
            if after is not None and time < after:
                return False
            if before is not None and time >= before:
                return False
        return all(metadata.get(key) == value for key, value in self.metadata.items())


EVERYTHING = MessageFilter()
"""The empty filter: every message."""


def deletion(
    ids: Iterable[str], filter: MessageFilter | None
) -> tuple[frozenset[str], MessageFilter]:
    """The ids and filter of a delete, checked: InvalidArgument when they name nothing, since a
    delete that names nothing must delete nothing rather than everything (reset does that)."""
    if isinstance(ids, str):
        raise InvalidArgument("ids", "a list of ids, not one string")
    wanted = frozenset(ids)
    chosen = filter if filter is not None else EVERYTHING
    if not wanted and not chosen:
        raise InvalidArgument(
            "ids",
            "name the ids or a filter of the messages to delete; a delete that names nothing "
            "deletes nothing (Reset forgets everything)",
        )
    return wanted, chosen
