"""Realistic, seeded sets of episodes with known answers, for `himga eval-episodes`.

A made-up code base has modules, each with source and test files, plus files every kind of
task touches (settings, helpers, the README). Work on it comes as topics:
- a bug: someone investigates it and fails (the error unresolved), then someone fixes it (the
  error with its resolution), and later a test for it is added;
- a feature: it is built, then extended.
Episodes of other topics in the same module, and of the same kinds of error elsewhere, make the
near misses a ranking must tell apart. Goals are worded with varying verbs and synonyms, as
different agents write them, and errors quote identifiers and line numbers.

A query is a later task on one topic, worded afresh: for a bug, "it is back" with the error it
shows now (other line numbers) and the files the agent opens first; for a feature, the next
change to it. The topic's earlier episodes are the relevant ones; the episode that fixed the
bug is the one a debugging agent needs first.
"""

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from himga.records import ActionEntry, EpisodeTrace, ErrorEntry, TaskContext

MODULES = (
    "auth", "billing", "orders", "search", "notifications", "reports", "users", "payments",
    "inventory", "shipping", "analytics", "admin", "scheduler", "exports", "webhooks", "cache",
)  # fmt: skip
PARTS = (
    "service", "models", "views", "handlers", "client", "tasks", "serializers", "validators",
    "queries", "api", "utils", "config",
)  # fmt: skip
SHARED = ("config/settings.py", "README.md", "utils/helpers.py", "requirements.txt")
THINGS = (
    "session token", "invoice total", "retry counter", "page cursor", "email template",
    "date filter", "cache key", "currency rounding", "timezone offset", "rate limit",
    "upload size", "search index", "user locale", "webhook signature", "batch size",
    "export header", "discount code", "stock level", "tracking number", "cron schedule",
)  # fmt: skip
SYMPTOMS = (
    ("KeyError", "KeyError: '{ident}' in {file}:{line}", "expires too early", "read {ident} with .get and a default"),  # noqa: E501
    ("TypeError", "TypeError: unsupported operand for {ident} at {file}:{line}", "is computed wrong", "convert {ident} to Decimal before adding"),  # noqa: E501
    ("test_failure", "AssertionError in test_{ident}: expected 200, got 500 ({file}:{line})", "breaks the endpoint", "return early when {ident} is empty"),  # noqa: E501
    ("timeout", "TimeoutError after 30s waiting for {ident} ({file}:{line})", "hangs under load", "add an index on {ident} and batch the query"),  # noqa: E501
    ("ValueError", "ValueError: invalid {ident} format at {file}:{line}", "rejects valid input", "parse {ident} with the ISO format"),  # noqa: E501
    ("race", "IntegrityError: duplicate {ident} ({file}:{line})", "is duplicated sometimes", "wrap the {ident} update in a transaction"),  # noqa: E501
)  # fmt: skip
FIX_VERBS = ("Fix", "Repair", "Resolve", "Correct", "Patch")
LOOK_VERBS = ("Investigate", "Debug", "Look into", "Diagnose", "Track down")
BUILD_VERBS = ("Add", "Implement", "Build", "Introduce", "Create")
EXTEND_VERBS = ("Extend", "Improve", "Rework", "Update", "Enhance")
FEATURES = (
    "CSV export", "audit log", "bulk update", "pagination", "dark mode setting", "retry policy",
    "health endpoint", "usage metrics", "soft delete", "admin filter", "rate limiting",
    "webhook replay", "search suggestions", "invoice preview", "password reset flow",
)  # fmt: skip
SYNONYMS = {
    "expires too early": ("runs out before its time", "times out too soon", "expires early"),
    "is computed wrong": ("comes out wrong", "has the wrong value", "is miscalculated"),
    "breaks the endpoint": ("makes the endpoint fail", "returns 500", "crashes the endpoint"),
    "hangs under load": ("is slow under load", "stalls with many requests", "times out"),
    "rejects valid input": ("refuses good input", "fails on valid values", "is too strict"),
    "is duplicated sometimes": ("shows up twice", "gets duplicated", "is written twice"),
}

KIND_DEBUGGING = "debugging"
KIND_IMPLEMENTATION = "implementation"
_START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Query:
    """A new task with the ids of the episodes that matter for it; `first` matters most."""

    kind: str
    task: TaskContext
    text: str
    relevant: frozenset[str]
    first: str


@dataclass(frozen=True, slots=True)
class EpisodeSet:
    seed: int
    episodes: list[EpisodeTrace]
    queries: list[Query]


@dataclass
class _Topic:
    number: int
    kind: str
    module: str
    files: list[str]
    tests: list[str]
    thing: str
    symptom: tuple[str, str, str, str] | None
    feature: str
    episodes: list[str]
    fixed_by: str = ""


def generate(seed: int = 7, topics: int = 800, queries: int = 200) -> EpisodeSet:
    """A set of episodes over `topics` topics (about 2.3 episodes each), and `queries` queries,
    half about bugs and half about features. The same seed gives the same set."""
    rng = random.Random(seed)
    files = {m: [f"src/{m}/{p}.py" for p in rng.sample(PARTS, 6)] for m in MODULES}
    episodes: list[EpisodeTrace] = []
    made: list[_Topic] = []
    clock = _START
    pending: list[tuple[_Topic, int]] = []  # (topic, step) of work not yet done
    for number in range(topics):
        module = rng.choice(MODULES)
        locus = rng.sample(files[module], 2)
        topic = _Topic(
            number=number,
            kind=KIND_DEBUGGING if rng.random() < 0.55 else KIND_IMPLEMENTATION,
            module=module,
            files=locus,
            tests=[f"tests/{module}/test_{p.rsplit('/', 1)[1]}" for p in locus[:1]],
            thing=rng.choice(THINGS),
            symptom=rng.choice(SYMPTOMS),
            feature=rng.choice(FEATURES),
            episodes=[],
        )
        made.append(topic)
        pending.append((topic, 0))
        # Work on topics interleaves: each round does the next step of a few open topics.
        for _ in range(rng.randint(1, 3)):
            if not pending:
                break
            at = rng.randrange(len(pending))
            open_topic, step = pending.pop(at)
            clock += timedelta(minutes=rng.randint(20, 600))
            episode = _step(rng, open_topic, step, clock, len(episodes), files)
            if episode is not None:
                episodes.append(episode)
                open_topic.episodes.append(episode.id)
                pending.append((open_topic, step + 1))
    while pending:
        open_topic, step = pending.pop(0)
        clock += timedelta(minutes=rng.randint(20, 600))
        episode = _step(rng, open_topic, step, clock, len(episodes), files)
        if episode is not None:
            episodes.append(episode)
            open_topic.episodes.append(episode.id)
            pending.append((open_topic, step + 1))
    asked = [t for t in made if t.episodes]
    chosen = [t for t in asked if t.kind == KIND_DEBUGGING and t.fixed_by][: queries // 2]
    chosen += [t for t in asked if t.kind == KIND_IMPLEMENTATION][: queries - len(chosen)]
    return EpisodeSet(seed, episodes, [_query(rng, topic) for topic in chosen])


def _step(
    rng: random.Random,
    topic: _Topic,
    step: int,
    when: datetime,
    number: int,
    files: dict[str, list[str]],
) -> EpisodeTrace | None:
    """The next episode of a topic, or None when its work is done."""
    plan = ("investigate", "fix", "test") if topic.kind == KIND_DEBUGGING else ("build", "extend")
    if step >= len(plan) or (step == 2 and rng.random() < 0.5):
        return None
    what = plan[step]
    noise = rng.sample(SHARED, rng.randint(0, 2))
    other = rng.choice(files[topic.module])
    episode = EpisodeTrace(
        id=f"ep-{number:05d}",
        task_id=f"task-{topic.module}-{topic.number}",
        timestamp=when,
        duration_seconds=rng.randint(60, 3600),
        agent=rng.choice(("coder", "fixer", "reviewer", "planner")),
        goal=_goal(rng, topic, what),
        phase={"investigate": "REASON", "test": "VERIFY"}.get(what, "ACT"),
        files_read=[*topic.tests, other, *noise] if what != "build" else [other, *noise],
        files_modified=_modified(topic, what),
        tokens_used=rng.randint(2_000, 60_000),
        importance=round(rng.uniform(0.2, 0.9), 2),
    )
    episode.action_log.extend(_actions(rng, topic, what))
    if topic.symptom is not None and topic.kind == KIND_DEBUGGING and what != "test":
        kind, message, _, fix = topic.symptom
        ident = topic.thing.replace(" ", "_")
        text = message.format(ident=ident, file=topic.files[0], line=rng.randint(20, 400))
        resolution = fix.format(ident=ident) if what == "fix" else ""
        episode.errors_encountered = [
            ErrorEntry(error_type=kind, message=text, resolution=resolution)
        ]
        episode.outcome = "success" if what == "fix" else "failure"
        if what == "fix":
            topic.fixed_by = episode.id
    elif rng.random() < 0.15:
        episode.outcome = "partial"
    return episode


def _goal(rng: random.Random, topic: _Topic, what: str) -> str:
    module = topic.module
    if topic.kind == KIND_IMPLEMENTATION:
        verbs = BUILD_VERBS if what == "build" else EXTEND_VERBS
        return f"{rng.choice(verbs)} the {topic.feature} for {module}"
    assert topic.symptom is not None
    symptom = rng.choice((topic.symptom[2], *SYNONYMS[topic.symptom[2]]))
    if what == "investigate":
        return f"{rng.choice(LOOK_VERBS)} why the {topic.thing} in {module} {symptom}"
    if what == "fix":
        return f"{rng.choice(FIX_VERBS)} the {topic.thing} in {module}: it {symptom}"
    return f"Add a regression test for the {topic.thing} in {module}"


def _modified(topic: _Topic, what: str) -> list[str]:
    if what == "investigate":
        return []
    if what == "test":
        return list(topic.tests)
    return [*topic.files[:1], *topic.tests] if what == "fix" else list(topic.files)


def _actions(rng: random.Random, topic: _Topic, what: str) -> list[ActionEntry]:
    actions = [ActionEntry(tool="read_file", input=topic.files[0], output="ok", timestamp=5)]
    if what in ("investigate", "fix", "test"):
        run = f"pytest {topic.tests[0]}"
        outcome = "1 failed" if what != "test" else "all passed"
        actions.append(ActionEntry(tool="run_tests", input=run, output=outcome, timestamp=40))
    for i, path in enumerate(_modified(topic, what)):
        actions.append(ActionEntry(tool="edit_file", input=path, output="saved", timestamp=90 + i))
    if what == "fix":
        run = f"pytest {topic.tests[0]}"
        actions.append(ActionEntry(tool="run_tests", input=run, output="all passed", timestamp=300))
    return actions


def _query(rng: random.Random, topic: _Topic) -> Query:
    """A later task on `topic`, worded afresh."""
    if topic.kind == KIND_DEBUGGING:
        assert topic.symptom is not None
        _, message, symptom, _ = topic.symptom
        said = rng.choice(SYNONYMS[symptom])
        goal = f"The {topic.thing} {said} again in {topic.module}; make it work"
        ident = topic.thing.replace(" ", "_")
        text = message.format(ident=ident, file=topic.files[0], line=rng.randint(401, 900))
        files = [topic.tests[0], rng.choice(topic.files)]
        first = topic.fixed_by
    else:
        goal = f"{rng.choice(EXTEND_VERBS)} how {topic.module} handles its {topic.feature}"
        text = ""
        files = [rng.choice(topic.files)]
        first = topic.episodes[0]
    task = TaskContext(goal=goal, phase=rng.choice(("ACT", "REASON", "")), files=files)
    return Query(topic.kind, task, text, frozenset(topic.episodes), first)
