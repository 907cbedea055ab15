"""RemoteEpisodes: an EpisodeStore kept in a himga server, so code holding a store never needs
to know whether it is in-process or remote."""

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import grpc
from google.protobuf import timestamp_pb2
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

import himga.service.convert as convert
from himga.client.channels import ClientTls, bearer, channel, channel_options
from himga.episodes.base import (
    EpisodeFilter,
    EpisodeHit,
    EpisodePage,
    EpisodeSearch,
    EpisodeStore,
    check_limits,
)
from himga.limits import MAX_MESSAGE_BYTES
from himga.records import EpisodeTrace, TaskContext
from himga.service.errors import InvalidRequest, from_rpc_error
from himga.service.names import namespace_violations

R = TypeVar("R")


class RemoteEpisodes(EpisodeStore):
    """The episodes of `namespace` in the server at `target` ("host:port").

    Episodes and tasks are checked here first (`check()`: an InvalidRecordError, a ValueError,
    names each field) and again by the server; a request the server refuses raises the class
    its ErrorInfo reason names (InvalidRequest, NotFoundError, ...); an unreachable server
    raises grpc.RpcError (UNAVAILABLE). Close it (or use it as a context manager) to release
    the connection. `token` and `tls` are RemoteMemory's.
    """

    def __init__(
        self,
        target: str,
        namespace: str,
        *,
        timeout: float | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        token: str | None = None,
        tls: ClientTls | None = None,
    ) -> None:
        problems = namespace_violations(namespace)
        if problems:
            raise InvalidRequest(problems)
        self.target = target
        self.namespace = namespace
        self.timeout = timeout
        self._metadata = bearer(token)
        self._channel = channel(target, tls, options=channel_options(max_message_bytes))
        self._stub = memory_pb2_grpc.EpisodeServiceStub(self._channel)

    def record(self, episode: EpisodeTrace, *, request_id: str = "") -> None:
        """Store one episode with one RecordEpisode call; with a `request_id`, the same episode
        sent again with it is recorded once (a safe retry)."""
        request = pb.RecordEpisodeRequest(
            namespace=self.namespace,
            episode=convert.episode_to_proto(episode.check()),
            request_id=request_id,
        )
        self._call(self._stub.RecordEpisode, request)

    def record_many(self, episodes: Iterable[EpisodeTrace], *, request_id: str = "") -> int:
        """Store every episode in one RecordEpisodes call: all of them, or none on an error.
        With a `request_id`, the same episodes sent again with it are recorded once."""
        request = pb.RecordEpisodesRequest(
            namespace=self.namespace,
            episodes=[convert.episode_to_proto(e.check()) for e in episodes],
            request_id=request_id,
        )
        response: pb.RecordEpisodesResponse = self._call(self._stub.RecordEpisodes, request)
        return response.recorded

    def get(self, episode_id: str) -> EpisodeTrace:
        request = pb.GetEpisodeRequest(namespace=self.namespace, id=episode_id)
        response: pb.GetEpisodeResponse = self._call(self._stub.GetEpisode, request)
        return convert.episode_from_proto(response.episode, "episode")

    def delete(self, episode_id: str, *, request_id: str = "") -> bool:
        """Forget the episode with one DeleteEpisode call; whether it was stored. With a
        `request_id`, a retry answers as the first did."""
        request = pb.DeleteEpisodeRequest(
            namespace=self.namespace, id=episode_id, request_id=request_id
        )
        response: pb.DeleteEpisodeResponse = self._call(self._stub.DeleteEpisode, request)
        return response.deleted

    def list(
        self, filters: EpisodeFilter | None = None, page_size: int = 0, page_token: str = ""
    ) -> EpisodePage:
        check_limits(page_size=page_size)
        filters = filters or EpisodeFilter()
        times: dict[str, Any] = {}
        for name in ("since", "until"):
            moment = getattr(filters, name)
            if moment is not None:
                times[name] = timestamp_pb2.Timestamp()
                times[name].FromDatetime(moment)
        request = pb.ListEpisodesRequest(
            namespace=self.namespace,
            task_id=filters.task_id,
            agent=filters.agent,
            phase=filters.phase,
            outcome=filters.outcome,
            file=filters.file,
            page_size=page_size,
            page_token=page_token,
            **times,
        )
        response: pb.ListEpisodesResponse = self._call(self._stub.ListEpisodes, request)
        episodes = [convert.episode_from_proto(e, "episodes") for e in response.episodes]
        return EpisodePage(episodes, response.next_page_token)

    def search(
        self, task: TaskContext, query: str = "", limit: int = 0, max_context_tokens: int = 0
    ) -> EpisodeSearch:
        check_limits(limit=limit, max_context_tokens=max_context_tokens)
        request = pb.SearchEpisodesRequest(
            namespace=self.namespace,
            task=convert.task_to_proto(task.check()),
            query=query,
            limit=limit,
            max_context_tokens=max_context_tokens,
        )
        response: pb.SearchEpisodesResponse = self._call(self._stub.SearchEpisodes, request)
        hits = [
            EpisodeHit(convert.episode_from_proto(hit.episode, "hits.episode"), hit.score)
            for hit in response.hits
        ]
        return EpisodeSearch(response.context, hits)

    def close(self) -> None:
        """Release the connection; the episodes are kept by the server."""
        self._channel.close()

    def _call(self, method: Callable[..., R], request: Any) -> R:
        try:
            return method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            translated = from_rpc_error(error)
            if translated is error:
                raise
            raise translated from error
