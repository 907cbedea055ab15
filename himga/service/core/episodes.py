"""The EpisodeService handlers of the core: each checks a request, converts it, and hands it to
its namespace's episode store. They run under the core's one chain (.core), so errors reach
every door exactly as MemoryService's do."""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.bounds import Violations
from himga.episodes.base import (
    DEFAULT_PAGE_SIZE,
    EpisodeFilter,
    EpisodeStore,
    limit_problems,
    repeated_ids,
)
from himga.episodes.paging import after
from himga.service import convert, resources
from himga.service.core.context import CallContext
from himga.service.episode_stores import EpisodeStores
from himga.service.errors import FieldViolation, InvalidRequest
from himga.service.lifecycle import Calls
from himga.service.namespaces import namespace_violations
from himga.service.receipts import InProcessReceipts, W, request_id_violations, write_once

T = TypeVar("T")


class EpisodeHandlers:
    """EpisodeService over the episode stores of one server, as MemoryHandlers serves
    MemoryService."""

    def __init__(
        self,
        stores: EpisodeStores,
        calls: Calls | None = None,
        receipts: InProcessReceipts | None = None,
        max_response_bytes: int | None = None,
    ) -> None:
        self.stores = stores
        self.calls = calls or Calls()
        self._receipts = receipts or InProcessReceipts()
        self.max_response_bytes = max_response_bytes

    def RecordEpisode(
        self, request: pb.RecordEpisodeRequest, context: CallContext
    ) -> pb.RecordEpisodeResponse:
        found = request_id_violations(request.request_id)
        episode = _required(request, "episode", found, convert.episode_document)
        with self._store(request.namespace, found) as store:
            assert episode is not None  # no violation found: the episode was read
            self._write(store, request, context, lambda: store.record_documents([episode]))
        return pb.RecordEpisodeResponse()

    def RecordEpisodes(
        self, request: pb.RecordEpisodesRequest, context: CallContext
    ) -> pb.RecordEpisodesResponse:
        found = Violations(request_id_violations(request.request_id))
        episodes = []
        for i, episode in enumerate(request.episodes):
            if found.full:  # refused already: the rest is not read
                found.unchecked = True
                break
            try:
                episodes.append(convert.episode_document(episode, f"episodes[{i}]"))
            except InvalidRequest as error:
                found.extend(convert.violations_of(error, f"episodes[{i}]"))
        if not found:  # a batch is stored together: it cannot hold one episode twice
            for i, held in repeated_ids(episodes):
                if found.full:
                    found.more += 1
                else:
                    found.append(
                        FieldViolation(f"episodes[{i}].id", f"repeats episodes[{held}].id")
                    )
        with self._store(request.namespace, found) as store:
            recorded = self._write(
                store, request, context, lambda: store.record_documents(episodes)
            )
        return pb.RecordEpisodesResponse(recorded=recorded)

    def GetEpisode(
        self, request: pb.GetEpisodeRequest, context: CallContext
    ) -> pb.GetEpisodeResponse:
        with self._store(request.namespace, _id_violations(request.id), create=False) as store:
            episode = store.get_document(request.id)
        answer = pb.GetEpisodeResponse(episode=convert.episode_document_to_proto(episode))
        room = self._room()
        if room is not None and answer.ByteSize() > room:
            raise _episode_too_large(answer.episode, room, "GetEpisode")
        return answer

    def DeleteEpisode(
        self, request: pb.DeleteEpisodeRequest, context: CallContext
    ) -> pb.DeleteEpisodeResponse:
        found = _id_violations(request.id) + request_id_violations(request.request_id)
        with self._store(request.namespace, found, create=False) as store:
            deleted = self._write(store, request, context, lambda: store.delete(request.id))
        return pb.DeleteEpisodeResponse(deleted=bool(deleted))

    def ListEpisodes(
        self, request: pb.ListEpisodesRequest, context: CallContext
    ) -> pb.ListEpisodesResponse:
        found = [FieldViolation(*p) for p in limit_problems(page_size=request.page_size)]
        since, until = _time(request, "since", found), _time(request, "until", found)
        inverted = (
            since is not None
            and until is not None
            and _instant(request.until) <= _instant(request.since)
        )
        if inverted:
            found.append(FieldViolation("until", "must be later than since"))
        if until is _AFTER_ALL:
            until = None  # every time kept is before it
        # Rounded up to the microsecond, the bounds may meet, or `since` pass the last time a
        # store keeps: no time kept is in the range, and the listing is empty.
        empty = since is _AFTER_ALL or (since is not None and since == until)
        timed = not (inverted or empty)
        filters = EpisodeFilter(
            task_id=request.task_id,
            agent=request.agent,
            phase=request.phase,
            outcome=request.outcome,
            since=since if timed else None,
            until=until if timed else None,
            file=request.file,
        )
        if not inverted:  # a token is checked against the filters it was made for
            try:
                after(request.page_token, filters)
            except ValueError as error:
                found.append(FieldViolation("page_token", str(error).removeprefix("page_token: ")))
        with self._store(request.namespace, found, create=False) as store:

            def page(size: int) -> pb.ListEpisodesResponse:
                if empty:
                    return pb.ListEpisodesResponse()
                episodes, token = store.list_documents(filters, size, request.page_token)
                return pb.ListEpisodesResponse(
                    episodes=[convert.episode_document_to_proto(e) for e in episodes],
                    next_page_token=token,
                )

            return resources.fit_page(
                page,
                request.page_size or DEFAULT_PAGE_SIZE,
                lambda answer: answer.episodes,
                self.max_response_bytes,
                lambda episode, room: _episode_too_large(episode, room, "ListEpisodes"),
            )

    def SearchEpisodes(
        self, request: pb.SearchEpisodesRequest, context: CallContext
    ) -> pb.SearchEpisodesResponse:
        found = [
            FieldViolation(*p)
            for p in limit_problems(
                limit=request.limit, max_context_tokens=request.max_context_tokens
            )
        ]
        task = _required(request, "task", found, convert.task_from_proto)
        with self._store(request.namespace, found, create=False) as store:
            assert task is not None
            text, hits = store.search_documents(
                task, request.query, request.limit, request.max_context_tokens
            )
        answer = pb.SearchEpisodesResponse(
            context=text,
            hits=[
                pb.EpisodeHit(episode=convert.episode_document_to_proto(episode), score=score)
                for episode, score in hits
            ],
        )
        return resources.cut_to_fit(answer, self.max_response_bytes)

    def _room(self) -> int | None:
        """The most bytes an answer may take (None: no limit)."""
        if self.max_response_bytes is None:
            return None
        return self.max_response_bytes - resources.ANSWER_MARGIN_BYTES

    def _write(
        self,
        store: EpisodeStore,
        request: Any,
        context: CallContext,
        write: Callable[[], W],
    ) -> W:
        """Run `write` (which returns how many episodes it recorded, or whether it deleted one)
        so that it commits only while its caller still waits, and at most once per request id
        (himga.service.receipts), as MemoryService's writes do."""
        wanted = functools.partial(self.calls.still_wanted, context)
        return write_once(store, request.namespace, request, wanted, self._receipts, write)

    @contextmanager
    def _store(
        self, namespace: str, found: list[FieldViolation], *, create: bool = True
    ) -> Iterator[EpisodeStore]:
        """The namespace's store, held for this call, once the request is known to be well
        formed: InvalidRequest with `found` and whatever is wrong with the namespace, before
        anything is opened. Without `create` (a read, a delete), a namespace with no episodes
        is an empty store, and nothing of it is made."""
        violations = namespace_violations(namespace) + found
        if violations:
            if isinstance(found, Violations):
                raise InvalidRequest(violations, more=found.more, unchecked=found.unchecked)
            raise InvalidRequest(violations)
        with self.stores.using(namespace, create=create) as store:
            yield store


def _required(
    request: Any, name: str, found: list[FieldViolation], parse: Callable[[Any, str], T]
) -> T | None:
    """The record a request carries in field `name`, or None after adding what is wrong."""
    if not request.HasField(name):
        found.append(FieldViolation(name, "required"))
        return None
    try:
        return parse(getattr(request, name), name)
    except InvalidRequest as error:
        found.extend(convert.violations_of(error, name))
        return None


def _episode_too_large(episode: Any, room: int, method: str) -> Exception:
    """The error of an episode too large for any answer of `method`."""
    return resources.too_big(
        f"episode {episode.id!r}",
        episode.ByteSize(),
        room,
        method,
        "read it from the namespace's store in Python (SQLiteEpisodes or PostgresEpisodes), "
        "or delete it (DeleteEpisode)",
    )


def _id_violations(episode_id: str) -> list[FieldViolation]:
    return [] if episode_id else [FieldViolation("id", "required")]


_AFTER_ALL = datetime.max.replace(tzinfo=UTC)
"""A bound past the last microsecond a store keeps (9999-12-31T23:59:59.999999Z)."""


def _instant(moment: Timestamp) -> int:
    """A Timestamp in nanoseconds since 1970."""
    return moment.seconds * 1_000_000_000 + moment.nanos


def _time(
    request: pb.ListEpisodesRequest, name: Literal["since", "until"], found: list[FieldViolation]
) -> datetime | None:
    """An optional Timestamp of the request as an aware datetime (None when unset), rounded up
    to the microsecond (_AFTER_ALL past the last one): the stores keep episodes' times to the
    microsecond (digits past the sixth dropped), and a time so kept is at or after a bound
    exactly when it is at or after the bound rounded up, so `since` and `until` select what
    the listed times show."""
    if not request.HasField(name):
        return None
    moment = getattr(request, name)
    try:
        when: datetime = moment.ToDatetime(tzinfo=UTC)  # rounded down
    except (ValueError, OverflowError):
        found.append(FieldViolation(name, "must be a time between years 1 and 9999"))
        return None
    if moment.nanos % 1000 == 0:
        return when
    if when == _AFTER_ALL:
        return _AFTER_ALL  # identity marks it: past every time kept
    return when + timedelta(microseconds=1)
