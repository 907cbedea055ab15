"""Bulk validation: the jsonschema reference against the jsonschema-rs fast path, same run.

Validates the same EpisodeTrace documents (valid and invalid mixed, built from a fixed seed)
with both, several times; prints documents per second for each and the fast/reference ratio
as min / median / max over the runs, and fails if the two ever disagree on a verdict.

    make bench-validate            # or: python benchmarks/bench_validate.py --runs 5
"""

import argparse
import copy
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from himga import validation

TYPE = "EpisodeTrace"
TARGET_RATIO = 20.0

# One way to break a valid document per entry: each violates a different rule of the schema.
BREAKAGES: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("goal missing", lambda d: d["context"].pop("goal")),
    ("empty agent", lambda d: d.update(agent="")),
    ("importance above 1", lambda d: d.update(importance=1.5)),
    ("negative tokens", lambda d: d.update(tokens_used=-1)),
    ("outcome not in enum", lambda d: d.update(outcome="done")),
    ("timestamp not UTC", lambda d: d.update(timestamp="2024-05-08T13:56:00+02:00")),
    ("timestamp malformed", lambda d: d.update(timestamp="2024-13-08T13:56:00Z")),
    ("unknown camelCase key", lambda d: d.update(taskId=d["task_id"])),
    ("action without a name", lambda d: d["action_log"].append({"t": 3})),
    ("integer as string", lambda d: d.update(duration_seconds="95")),
]


def episode(rng: random.Random, index: int) -> dict[str, Any]:
    """A valid EpisodeTrace of realistic size: a few actions, files and maybe errors."""
    files = [f"src/module_{rng.randrange(50)}.py" for _ in range(rng.randrange(1, 6))]
    document: dict[str, Any] = {
        "id": f"ep-2024-05-{index % 28 + 1:02d}-{rng.getrandbits(32):08x}",
        "task_id": f"task-{rng.randrange(1000)}",
        "timestamp": f"2024-05-{index % 28 + 1:02d}T{rng.randrange(24):02d}:"
        f"{rng.randrange(60):02d}:{rng.randrange(60):02d}Z",
        "duration_seconds": rng.randrange(3600),
        "agent": rng.choice(["coder", "reviewer", "planner"]),
        "context": {
            "goal": f"Fix issue {rng.randrange(10_000)}",
            "phase": rng.choice(["REASON", "ACT", "REFLECT", "VERIFY", ""]),
            "files_involved": files,
        },
        "action_log": [
            {
                "t": t,
                "action": rng.choice(["read_file", "edit_file", "run_tests", "search"]),
                "target": rng.choice(files),
                "result": "ok" * rng.randrange(1, 20),
            }
            for t in range(0, rng.randrange(1, 12) * 10, 10)
        ],
        "outcome": rng.choice(["success", "failure", "partial"]),
        "errors_encountered": [
            {"type": "test_failure", "message": f"assert {i} == {i + 1}", "resolution": ""}
            for i in range(rng.randrange(3))
        ],
        "artifacts_produced": files[:1],
        "git_commit": rng.choice([None, f"{rng.getrandbits(160):040x}"]),
        "tokens_used": rng.randrange(100_000),
        "files_read": files,
        "files_modified": files[:1],
        "importance": round(rng.random(), 3),
        "access_count": rng.randrange(10),
    }
    if rng.random() < 0.5:
        document["last_accessed"] = "2024-06-01T08:00:00.250Z"
    return document


def documents(count: int, invalid_share: float, seed: int) -> tuple[list[Any], int]:
    """`count` documents, about `invalid_share` of them broken; also how many were broken."""
    rng = random.Random(seed)
    result, broken = [], 0
    for index in range(count):
        document = episode(rng, index)
        if rng.random() < invalid_share:
            _, breakage = BREAKAGES[broken % len(BREAKAGES)]
            document = copy.deepcopy(document)
            breakage(document)
            broken += 1
        result.append(document)
    return result, broken


def timed(check: Callable[[Any], bool], docs: list[Any]) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    verdicts = [check(document) for document in docs]
    return time.perf_counter() - start, verdicts


def spread(values: list[float]) -> str:
    return (
        f"min {min(values):>12,.1f}  median {statistics.median(values):>12,.1f}  "
        f"max {max(values):>12,.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--invalid-share", type=float, default=0.3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()

    docs, broken = documents(args.documents, args.invalid_share, args.seed)
    reference = validation.reference_validator(TYPE).is_valid
    fast = validation.fast_validator(TYPE).is_valid
    reference(docs[0]), fast(docs[0])  # build both validators before timing

    print(f"{len(docs):,} {TYPE} documents ({broken:,} broken in {len(BREAKAGES)} ways)")
    print(f"{args.runs} runs, each validating all of them with both validators")
    reference_rates, fast_rates, ratios = [], [], []
    for run in range(1, args.runs + 1):
        reference_seconds, reference_verdicts = timed(reference, docs)
        fast_seconds, fast_verdicts = timed(fast, docs)
        if fast_verdicts != reference_verdicts:
            differ = sum(a != b for a, b in zip(fast_verdicts, reference_verdicts, strict=True))
            print(f"run {run}: the validators disagree on {differ} documents", file=sys.stderr)
            return 1
        if reference_verdicts.count(False) != broken:
            invalid = reference_verdicts.count(False)
            print(f"run {run}: {invalid} invalid, but {broken} were broken", file=sys.stderr)
            return 1
        reference_rates.append(len(docs) / reference_seconds)
        fast_rates.append(len(docs) / fast_seconds)
        ratios.append(reference_seconds / fast_seconds)

    print(f"reference (jsonschema)  docs/s  {spread(reference_rates)}")
    print(f"fast (jsonschema-rs)    docs/s  {spread(fast_rates)}")
    print(f"fast / reference        ratio   {spread(ratios)}")
    print("verdicts identical in every run")
    met = "met" if statistics.median(ratios) >= TARGET_RATIO else "NOT met"
    print(f"target: median ratio >= {TARGET_RATIO:g}x: {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
