"""The EpisodeService checks: round trip, filters and paging, delete, search by files,
isolation between namespaces, episodes forgotten by DeleteNamespace (MemoryService's, which
forgets a namespace wholly), the context budget, refusing an invalid episode, and not
listing a namespace whose only write, an episode, failed. They run only against a server that
offers the service (`offers_episodes`)."""

import grpc
from google.protobuf import timestamp_pb2
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.checks import INVALID, NewNamespace, check
from himga.conformance.namespaces import (
    FAILED_WRITE_DEADLINE,
    failed_write_settles,
    listed,
    until_a_write_fails,
)
from himga.conformance.wire import CheckFailed, Wire, code_of, expect_error, marker

TOKEN_CHARS = 4
"""Characters per token of max_context_tokens, as the proto documents it."""


PROBE = "conformance.probe"
"""The namespace `offers_episodes` asks about."""


def offers_episodes(wire: Wire) -> bool:
    """Whether the server offers EpisodeService (anything but UNIMPLEMENTED counts)."""
    try:
        wire.episodes.ListEpisodes(pb.ListEpisodesRequest(namespace=PROBE), timeout=wire.timeout)
    except grpc.RpcError as error:
        return code_of(error) != grpc.StatusCode.UNIMPLEMENTED
    return True


def _episode(
    number: int,
    word: str,
    *,
    task_id: str = "",
    agent: str = "coder",
    phase: str = "ACT",
    outcome: str = "success",
    modified: str = "src/app.py",
) -> pb.EpisodeTrace:
    """An episode whose goal holds `word`, `number` hours into 2025, touching `modified`."""
    return pb.EpisodeTrace(
        id=f"ep-{word}-{number}",
        task_id=task_id or f"task-{word}-{number}",
        timestamp=timestamp_pb2.Timestamp(seconds=1_735_689_600 + 3600 * number),
        duration_seconds=30 + number,
        agent=agent,
        context=pb.EpisodeContext(
            goal=f"Work on {word} number {number}",
            phase=phase,
            files_involved=["src/read.py", modified],
        ),
        action_log=[pb.ActionEntry(t=3, action="edit_file", target=modified, result="edited")],
        outcome=outcome,
        errors_encountered=[
            pb.ErrorEntry(type="test_failure", message=f"{word} failed", resolution="fixed it")
        ],
        artifacts_produced=["build/app"],
        git_commit="0123abc",
        tokens_used=1200,
        files_read=["src/read.py"],
        files_modified=[modified],
        importance=0.75,
    )


def _record(wire: Wire, namespace: str, *episodes: pb.EpisodeTrace) -> None:
    for episode in episodes:
        wire.episodes.RecordEpisode(
            pb.RecordEpisodeRequest(namespace=namespace, episode=episode), timeout=wire.timeout
        )


def _list(wire: Wire, namespace: str, **filters: object) -> pb.ListEpisodesResponse:
    answer: pb.ListEpisodesResponse = wire.episodes.ListEpisodes(
        pb.ListEpisodesRequest(namespace=namespace, **filters),  # type: ignore[arg-type]
        timeout=wire.timeout,
    )
    return answer


def _search(
    wire: Wire, namespace: str, task: pb.TaskContext, **more: object
) -> pb.SearchEpisodesResponse:
    answer: pb.SearchEpisodesResponse = wire.episodes.SearchEpisodes(
        pb.SearchEpisodesRequest(namespace=namespace, task=task, **more),  # type: ignore[arg-type]
        timeout=wire.timeout,
    )
    return answer


def _get(wire: Wire, namespace: str, episode_id: str) -> pb.EpisodeTrace:
    answer: pb.GetEpisodeResponse = wire.episodes.GetEpisode(
        pb.GetEpisodeRequest(namespace=namespace, id=episode_id), timeout=wire.timeout
    )
    return answer.episode


@check(
    "episode-round-trip",
    "episodes",
    "an episode recorded comes back equal from ListEpisodes, and from GetEpisode with its "
    "access counted",
)
def _round_trip(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    sent = _episode(1, marker())
    _record(wire, namespace, sent)
    listed = list(_list(wire, namespace).episodes)
    if listed != [sent]:
        raise CheckFailed(f"ListEpisodes gave {listed}, recorded {sent}")
    got = _get(wire, namespace, sent.id)
    if got.access_count != 1 or not got.HasField("last_accessed"):
        raise CheckFailed(
            f"GetEpisode: access_count {got.access_count}, last_accessed "
            f"{'set' if got.HasField('last_accessed') else 'unset'}; want 1 and set"
        )
    got.access_count = 0
    got.ClearField("last_accessed")
    if got != sent:
        raise CheckFailed(f"GetEpisode gave {got}, recorded {sent}")


@check(
    "episode-filters",
    "episodes",
    "ListEpisodes honours each filter and pages through every episode once, newest first",
)
def _filters(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    episodes = [
        _episode(1, word, modified="src/one.py"),
        _episode(2, word, task_id="shared", outcome="failure"),
        _episode(3, word, task_id="shared", agent="reviewer"),
        _episode(4, word, phase="VERIFY"),
    ]
    _record(wire, namespace, *episodes)
    ids = [e.id for e in episodes]
    cases: list[tuple[dict[str, object], list[str]]] = [
        ({"task_id": "shared"}, [ids[2], ids[1]]),
        ({"agent": "reviewer"}, [ids[2]]),
        ({"phase": "VERIFY"}, [ids[3]]),
        ({"outcome": "failure"}, [ids[1]]),
        ({"file": "src/one.py"}, [ids[0]]),
        (
            {
                "since": episodes[1].timestamp,
                "until": episodes[3].timestamp,
            },
            [ids[2], ids[1]],
        ),
    ]
    for filters, want in cases:
        got = [e.id for e in _list(wire, namespace, **filters).episodes]
        if got != want:
            raise CheckFailed(f"filters {sorted(filters)}: got {got}, want {want}")
    walked: list[str] = []
    token = ""
    for _ in range(len(episodes) + 1):
        page = _list(wire, namespace, page_size=1, page_token=token)
        walked += [e.id for e in page.episodes]
        token = page.next_page_token
        if not token:
            break
    if walked != ids[::-1]:
        raise CheckFailed(f"pages of 1 gave {walked}, want {ids[::-1]}")


@check(
    "episode-delete",
    "episodes",
    "DeleteEpisode forgets the episode (GetEpisode: NOT_FOUND) and deleting again succeeds",
)
def _delete(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    episode = _episode(1, marker())
    _record(wire, namespace, episode)
    for _ in range(2):
        wire.episodes.DeleteEpisode(
            pb.DeleteEpisodeRequest(namespace=namespace, id=episode.id), timeout=wire.timeout
        )
    expect_error(
        lambda: _get(wire, namespace, episode.id), grpc.StatusCode.NOT_FOUND, reason="NOT_FOUND"
    )
    if _list(wire, namespace).episodes:
        raise CheckFailed("ListEpisodes still lists the deleted episode")


@check(
    "episode-search-files",
    "episodes",
    "SearchEpisodes finds a recorded episode by the files of a task alone, best first",
)
def _search_files(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    wanted = _episode(1, marker(), modified=f"src/{marker()}.py")
    _record(wire, namespace, wanted, _episode(2, marker()), _episode(3, marker()))
    task = pb.TaskContext(goal=f"Look into {marker()}", files_involved=list(wanted.files_modified))
    answer = _search(wire, namespace, task)
    found = [hit.episode.id for hit in answer.hits]
    if not found or found[0] != wanted.id:
        raise CheckFailed(f"hits {found}, want {wanted.id} first")
    if wanted.context.goal not in answer.context:
        raise CheckFailed("the context does not hold the episode's goal")


@check(
    "episode-isolation",
    "episodes",
    "an episode of one namespace is never listed, found or got from another",
)
def _isolation(wire: Wire, new_namespace: NewNamespace) -> None:
    holder, other = new_namespace(), new_namespace()
    word = marker()
    episode = _episode(1, word)
    _record(wire, holder, episode)
    if _list(wire, other).episodes:
        raise CheckFailed("another namespace lists the episode")
    if _search(wire, other, pb.TaskContext(goal=word, files_involved=["src/app.py"])).hits:
        raise CheckFailed("another namespace finds the episode")
    expect_error(lambda: _get(wire, other, episode.id), grpc.StatusCode.NOT_FOUND)


@check(
    "episode-namespace-deleted",
    "episodes",
    "after DeleteNamespace a namespace's episodes are gone (not listed, found or got) and it is "
    "not listed; another namespace's episodes stay",
)
def _namespace_deleted(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace, other = new_namespace(), new_namespace()
    word = marker()
    episode = _episode(1, word)
    for holder in (namespace, other):
        _record(wire, holder, episode)
    held = [info.name for info in listed(wire, namespace)] == [namespace]
    answer = wire.memory.DeleteNamespace(
        pb.DeleteNamespaceRequest(namespace=namespace), timeout=wire.timeout
    )
    if answer.deleted != held:
        raise CheckFailed(f"DeleteNamespace of a namespace listed {held} answered {answer}")
    if _list(wire, namespace).episodes:
        raise CheckFailed("ListEpisodes lists an episode of the deleted namespace")
    if _search(wire, namespace, pb.TaskContext(goal=word, files_involved=["src/app.py"])).hits:
        raise CheckFailed("SearchEpisodes finds an episode of the deleted namespace")
    if _got(wire, namespace, episode.id):
        raise CheckFailed("GetEpisode gets an episode of the deleted namespace")
    if [info.name for info in listed(wire, namespace)]:
        raise CheckFailed("the deleted namespace, which held an episode, is still listed")
    if (kept := [e.id for e in _list(wire, other).episodes]) != [episode.id]:
        raise CheckFailed(f"another namespace lists {kept}, want [{episode.id!r}]")


@check(
    "episode-budget",
    "episodes",
    f"the context of SearchEpisodes has at most {TOKEN_CHARS} * max_context_tokens characters",
)
def _budget(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    _record(wire, namespace, *(_episode(n, word) for n in range(1, 6)))
    for budget in (3, 12, 40, 400):
        answer = _search(
            wire, namespace, pb.TaskContext(goal=word), limit=5, max_context_tokens=budget
        )
        if not answer.hits or not answer.context:
            raise CheckFailed(f"budget {budget}: no hits or an empty context")
        if len(answer.context) > TOKEN_CHARS * budget:
            raise CheckFailed(
                f"budget {budget} tokens: a context of {len(answer.context)} characters"
            )


@check(
    "episode-invalid",
    "episodes",
    "RecordEpisode of an episode with an empty goal is INVALID_ARGUMENT naming "
    "episode.context.goal; nothing is stored",
)
def _invalid(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    episode = _episode(1, marker())
    episode.context.goal = ""
    expect_error(lambda: _record(wire, namespace, episode), INVALID, "episode.context.goal")
    if _list(wire, namespace).episodes:
        raise CheckFailed("the refused episode is listed")


@check(
    "failed-episode-write-unlisted",
    "episodes",
    "a namespace whose only write, an episode, failed (its deadline passed) is not listed once "
    "the call has ended on the server, unless the episode was stored after all",
)
def _failed_episode_write_unlisted(wire: Wire, new_namespace: NewNamespace) -> None:
    def attempt() -> bool:
        namespace = new_namespace()
        episode = _episode(1, marker())
        request = pb.RecordEpisodeRequest(namespace=namespace, episode=episode)
        return failed_write_settles(
            wire,
            namespace,
            lambda: wire.episodes.RecordEpisode(request, timeout=FAILED_WRITE_DEADLINE),
            lambda: _got(wire, namespace, episode.id),
            "episode",
        )

    until_a_write_fails(attempt)


def _got(wire: Wire, namespace: str, episode_id: str) -> bool:
    """Whether GetEpisode finds the episode (NOT_FOUND: it does not)."""
    try:
        _get(wire, namespace, episode_id)
    except grpc.RpcError as error:
        if code_of(error) == grpc.StatusCode.NOT_FOUND:
            return False
        raise
    return True
