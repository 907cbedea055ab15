"""bench-api: what filters, deletes and listings cost in the keyword memories, beside baselines
measured in the same run.

At SIZE synthetic messages (the conversations of bench_memory, each session with a timestamp a
day apart), for each memory (KeywordMemory, SQLiteKeywordMemory on disk), a fresh worker process:
  - retrieve: QUERIES questions without a filter, then the same with each filter of FILTERS
    (p50 of each; the ratio filtered / unfiltered is the cost of the filter);
  - delete: a session of SESSION_SIZE messages is stored (one `ingest_many`, the baseline) and
    deleted (`delete(filter=session_ids)`), REPEATS times; median of each;
  - list: every message, page by page (`list`, PAGE_SIZE a page), beside a bare
    `SELECT ... ORDER BY id` of the same columns of the same rows on a second connection to the
    same database (SQLite only: the floor of reading them at all).
Each worker runs RUNS times; figures are min / median / max over the runs, and every ratio is
taken within one run, so machine noise shows.
"""

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.bench_memory import BATCH
from benchmarks.corpus import invented, invented_queries

SIZE = 100_000
QUERIES = 200
SESSION_SIZE = 1000
REPEATS = 3
PAGE_SIZE = 1000
RUNS = 3
START = datetime(2023, 5, 1, tzinfo=UTC)
# The filters timed: one conversation's two speakers (about 2% of the turns), the second half
# of the time span (about half), and one conversation's 30 sessions (0.6%).
FILTERS = ("speakers", "time", "sessions")
_SELECT = """
    SELECT messages.id, turn_id, sessions.key, role, content, date_str, time, timestamp,
        session_timestamp, metadata
    FROM messages JOIN sessions ON sessions.id = messages.session ORDER BY messages.id"""


def timed_messages(count: int) -> list[tuple[Any, Any]]:
    """bench_memory's messages, each session with a timestamp (session n on day n)."""
    pairs = invented(count)
    sessions: dict[str, Any] = {}
    out = []
    for message, session in pairs:
        if session.session_id not in sessions:
            number = int(session.session_id.split("-s")[1])
            moment = START + timedelta(days=number)
            sessions[session.session_id] = session.model_copy(update={"timestamp": moment})
        out.append((message, sessions[session.session_id]))
    return out


def filters(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    from himga.memory.filters import MessageFilter

    days = int(pairs[-1][1].session_id.split("-s")[1])
    return {
        "speakers": MessageFilter(roles=[pairs[0][0].role, pairs[1][0].role]),
        "time": MessageFilter(after=START + timedelta(days=days // 2)),
        "sessions": MessageFilter(
            session_ids={
                session.session_id for _, session in pairs if session.session_id.startswith("c1-")
            }
        ),
    }


def _make(name: str, directory: Path) -> Any:
    if name == "keyword":
        from himga.memory.keyword import KeywordMemory

        return KeywordMemory()
    from himga.memory.sqlite import SQLiteKeywordMemory

    return SQLiteKeywordMemory(directory / "memory.sqlite3")


def _p50(memory: Any, asked: list[str], chosen: Any) -> float:
    latencies = []
    for query in asked:
        start = time.perf_counter()
        memory.recall(query, 10, filter=chosen)
        latencies.append(time.perf_counter() - start)
    return 1000 * statistics.median(latencies)


def worker(name: str, size: int) -> dict[str, Any]:
    """One measurement in this (fresh) process: see the module's text."""
    from himga.data.conversation import Message, Session
    from himga.memory.filters import MessageFilter

    data = timed_messages(size)
    asked = invented_queries(QUERIES)
    chosen = filters(data)
    big = Session(session_id="big", timestamp=START)
    session = [
        (Message(role=f"Speaker{i % 2}", content=message.content, turn_id=f"B{i}"), big)
        for i, (message, _) in enumerate(invented(SESSION_SIZE, offset=size))
    ]
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        memory = _make(name, directory)
        for i in range(0, len(data), BATCH):
            memory.ingest_many(data[i : i + BATCH])
        result["retrieve_ms"] = _p50(memory, asked, None)
        for key in FILTERS:
            result[f"retrieve_{key}_ms"] = _p50(memory, asked, chosen[key])
        ingests, deletes = [], []
        for _ in range(REPEATS):
            start = time.perf_counter()
            memory.ingest_many(session)
            ingests.append(time.perf_counter() - start)
            start = time.perf_counter()
            deleted = memory.delete(filter=MessageFilter(session_ids=["big"]))
            deletes.append(time.perf_counter() - start)
            assert deleted == SESSION_SIZE, deleted
        result["ingest_session_ms"] = 1000 * statistics.median(ingests)
        result["delete_session_ms"] = 1000 * statistics.median(deletes)
        start = time.perf_counter()
        token, listed = "", 0
        while True:
            page = memory.list(page_size=PAGE_SIZE, page_token=token)
            listed += len(page.messages)
            token = page.next_page_token
            if not token:
                break
        result["list_s"] = time.perf_counter() - start
        assert listed == size, listed
        if name == "sqlite":
            db = sqlite3.connect(directory / "memory.sqlite3")
            start = time.perf_counter()
            rows = db.execute(_SELECT).fetchall()
            result["select_s"] = time.perf_counter() - start
            assert len(rows) == size
            db.close()
        memory.close()
    return result


def _run_worker(name: str, size: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_api", "--worker", name, str(size)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _spread(values: list[float], fmt: str = "{:.3g}") -> str:
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("MEMORY", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--size", type=int, default=SIZE)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]))))
        return 0
    names = ["keyword", "sqlite"]
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(args.runs):
        for name in names:
            results[name].append(_run_worker(name, args.size))
    print(
        f"bench-api: {args.size:,} messages, {args.runs} run(s); figures are min/median/max "
        f"over the runs; retrieve p50 over {QUERIES} queries"
    )
    for name in names:
        runs = results[name]

        def column(key: str, runs: list[dict[str, Any]] = runs) -> list[float]:
            return [r[key] for r in runs]

        print(f"\n{name}")
        print(f"  retrieve p50, no filter: {_spread(column('retrieve_ms'))} ms")
        for key in FILTERS:
            ratio = [r[f"retrieve_{key}_ms"] / r["retrieve_ms"] for r in runs]
            print(
                f"  retrieve p50, filter on {key}: {_spread(column(f'retrieve_{key}_ms'))} ms, "
                f"{_spread(ratio, '{:.2f}')}x the unfiltered"
            )
        ratio = [r["delete_session_ms"] / r["ingest_session_ms"] for r in runs]
        print(
            f"  a {SESSION_SIZE:,}-message session: stored in "
            f"{_spread(column('ingest_session_ms'))} ms, deleted in "
            f"{_spread(column('delete_session_ms'))} ms ({_spread(ratio, '{:.2f}')}x)"
        )
        rate = [args.size / r["list_s"] for r in runs]
        print(f"  list every message, {PAGE_SIZE} a page: {_spread(rate)} messages/s")
        if name == "sqlite":
            share = [r["select_s"] / r["list_s"] for r in runs]
            print(f"  list / a bare SELECT of the same rows: {_spread(share, '{:.0%}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
