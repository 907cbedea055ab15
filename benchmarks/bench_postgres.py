"""bench-postgres: himga over PostgreSQL, through 1, 2 and 3 servers, beside one server on SQLite.

Part 1, calls per second at concurrency 16 (16 client threads, calls spread round-robin over
the servers): unary `Ingest` (one message a call, into 4 namespaces) and `Retrieve` (the LoCoMo
dev questions, over a namespace of 20k natural messages). Each configuration gets a fresh
database (or data directory) and fresh servers, in every run; ratios to one SQLite server are
taken within each run. The CPU seconds the himga servers and PostgreSQL spent (read from
/proc) are printed per 1,000 calls, and the mean number of PostgreSQL backends waiting on a
lock meanwhile (pg_stat_activity, sampled every 20 ms): where the time goes, and so where the
ceiling is.

Part 2, retrieve latency at 100k messages (1M with HIMGA_BENCH_MILLION=1): the PostgreSQL
memory and the SQLite memory held in this process, the same natural corpus
(benchmarks.corpus) in each, asked the same 200 questions in turn; each latency the fastest of
three asks (the machine is shared), p50 and p99.

Part 3, following another server's delete at 100k messages: one memory deletes a message,
then the first call (a search) of a second one that holds the namespace is timed: applying the
delete from the change log in place, beside (in the same run, in alternating order) a memory
that reads the namespace anew as every server did before the log (its log reading disabled).
Five runs; min / median / max of each time and of their ratio.

    python -m benchmarks.bench_postgres [--runs 3] [--calls 2000] [--only-follow]
"""

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.corpus import natural, questions
from himga.memory import PostgresKeywordMemory, SQLiteKeywordMemory
from himga.memory.rows import Rows, Version
from himga.service import RemoteMemory
from himga.storage.postgres import Database
from tests import postgres_cluster
from tests.postgres.servers import serving
from tests.server_process import start_listening

CONCURRENCY = 16
CORPUS = 20_000
QUERIES = 200
REPEATS = 3
CONFIGS = ("sqlite x1", "postgres x1", "postgres x2", "postgres x3")


def _cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes have used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _group(postmaster: int) -> list[int]:
    """A PostgreSQL server's processes: the postmaster and its children (its backends, each
    in a session of its own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if postmaster in (int(entry.name), int(fields[1])):
                found.append(int(entry.name))
    return found


@contextmanager
def _sqlite_server() -> Iterator[tuple[list[str], list[int]]]:
    with tempfile.TemporaryDirectory() as directory:
        command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--data-dir", directory]
        process, target = start_listening(command)
        drain = threading.Thread(target=lambda: [None for _ in process.stderr or []], daemon=True)
        drain.start()
        try:
            yield [target], [process.pid]
        finally:
            process.terminate()
            process.wait(30)


@contextmanager
def _postgres_servers(url: str, count: int) -> Iterator[tuple[list[str], list[int]]]:
    with ExitStack() as stack:
        started = [stack.enter_context(serving(url)) for _ in range(count)]
        yield [s.target for s in started], [s.process.pid for s in started]


@contextmanager
def _lock_waits(url: str) -> Iterator[Callable[[], float]]:
    """While the block runs, how many of PostgreSQL's backends wait on a lock (a row's, such as
    a namespace's FOR UPDATE), sampled every 20 ms; the mean, once the block ended."""
    import psycopg

    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        with psycopg.connect(url, autocommit=True) as connection:
            while not done.wait(0.02):
                row = connection.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                ).fetchone()
                samples.append(int(row[0]) if row else 0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield lambda: statistics.mean(samples) if samples else 0.0
    finally:
        done.set()
        sampler.join()


def _fresh(postgres: postgres_cluster.Postgres) -> str:
    name = f"bench_{uuid.uuid4().hex[:12]}"
    postgres.sql(f"CREATE DATABASE {name}")
    return postgres.url.rsplit("/", 1)[0] + "/" + name


def _at_concurrency(targets: list[str], calls: int, call: Callable[[RemoteMemory, int], Any],
                    namespaces: int) -> float:  # fmt: skip
    """Calls per second of `calls` calls from CONCURRENCY threads, spread over the targets."""
    memories = [
        RemoteMemory(targets[n % len(targets)], f"bench-{n % namespaces}", timeout=120)
        for n in range(CONCURRENCY)
    ]
    each = calls // CONCURRENCY
    start = threading.Barrier(CONCURRENCY + 1)

    def work(n: int) -> None:
        start.wait()
        for i in range(each):
            call(memories[n], n * each + i)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(CONCURRENCY)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    for memory in memories:
        memory.close()
    return each * CONCURRENCY / elapsed


def throughput(postgres: postgres_cluster.Postgres, locomo: str, runs: int, calls: int) -> None:
    data = natural(locomo, CORPUS)
    asked = questions(locomo, QUERIES)
    # New ids: a stored id would be a correction, which has every other server read the
    # namespace again (see the README).
    fresh = [
        (message.model_copy(update={"turn_id": f"new-{i}"}), session)
        for i, (message, session) in enumerate(natural(locomo, calls))
    ]
    pg_group = postgres.process.pid if postgres.process else 0
    found: dict[str, dict[str, list[float]]] = {c: {} for c in CONFIGS}
    for run in range(runs):
        for config in CONFIGS:
            kind, count = config.split(" x")
            servers = (
                _sqlite_server()
                if kind == "sqlite"
                else _postgres_servers(_fresh(postgres), int(count))
            )
            with servers as (targets, pids):
                loader = RemoteMemory(targets[0], "bench-0", timeout=600)
                for i in range(0, len(data), 2000):
                    loader.store(data[i : i + 2000])
                loader.close()
                for target in targets:  # every server opens the namespace before the clock
                    warm = RemoteMemory(target, "bench-0", timeout=600)
                    warm.search(asked[0])
                    warm.close()
                figures = found[config]
                for phase, call, spread in (
                    ("ingest", lambda m, i: m.store([fresh[i % len(fresh)]]), 4),
                    ("retrieve", lambda m, i: m.recall(asked[i % len(asked)]), 1),
                ):
                    servers_cpu = _cpu(pids)
                    database_cpu = _cpu(_group(pg_group))
                    with _lock_waits(postgres.url) as waits:
                        rate = _at_concurrency(targets, calls, call, spread)
                    figures.setdefault(phase, []).append(rate)
                    figures.setdefault(f"{phase} lock waits", []).append(waits())
                    per = 1000 / calls
                    figures.setdefault(f"{phase} server cpu", []).append(
                        (_cpu(pids) - servers_cpu) * per
                    )
                    figures.setdefault(f"{phase} database cpu", []).append(
                        (_cpu(_group(pg_group)) - database_cpu) * per
                    )
                print(
                    f"run {run + 1} {config}: ingest {figures['ingest'][-1]:.0f}/s, retrieve "
                    f"{figures['retrieve'][-1]:.0f}/s",
                    flush=True,
                )
    print(f"\ncalls per second at concurrency {CONCURRENCY}, {runs} runs (min / median / max)")
    for phase in ("ingest", "retrieve"):
        print(f"\n{phase}:")
        base = found[CONFIGS[0]][phase]
        for config in CONFIGS:
            rates = found[config][phase]
            ratios = [r / b for r, b in zip(rates, base, strict=True)]
            print(
                f"  {config:<12} {_spread(rates, '{:.0f}')}/s  ratio to sqlite x1 "
                f"{_spread(ratios, '{:.2f}')}  CPU s per 1000 calls: servers "
                f"{_spread(found[config][f'{phase} server cpu'], '{:.2f}')}, PostgreSQL "
                f"{_spread(found[config][f'{phase} database cpu'], '{:.2f}')}; backends waiting "
                f"on a lock {_spread(found[config][f'{phase} lock waits'], '{:.2f}')}"
            )


def latency(postgres: postgres_cluster.Postgres, locomo: str, size: int) -> None:
    data = natural(locomo, size)
    asked = questions(locomo, QUERIES)
    with tempfile.TemporaryDirectory() as directory, Database(_fresh(postgres)) as database:
        engines: dict[str, Any] = {
            "sqlite": SQLiteKeywordMemory(Path(directory) / "memory.sqlite3"),
            "postgres": PostgresKeywordMemory(database, "latency"),
        }
        for engine in engines.values():
            for i in range(0, len(data), 10_000):
                engine.store(data[i : i + 10_000])
        reopened = time.perf_counter()
        engines["postgres"] = PostgresKeywordMemory(database, "latency")  # as a new server
        engines["postgres"].search(asked[0])
        load = time.perf_counter() - reopened
        times: dict[str, list[float]] = {name: [] for name in engines}
        for i, question in enumerate(asked):
            names = list(engines) if i % 2 == 0 else list(reversed(engines))
            for name in names:
                fastest = float("inf")
                for _ in range(REPEATS):
                    start = time.perf_counter()
                    engines[name].recall(question)
                    fastest = min(fastest, time.perf_counter() - start)
                times[name].append(fastest)
        engines["sqlite"].close()
    p = {name: _percentiles(values) for name, values in times.items()}
    print(
        f"\nretrieve at {size:,} messages ({QUERIES} questions, fastest of {REPEATS}): "
        f"postgres p50 {p['postgres'][0]:.2f} ms p99 {p['postgres'][1]:.2f} ms; sqlite p50 "
        f"{p['sqlite'][0]:.2f} ms p99 {p['sqlite'][1]:.2f} ms; postgres / sqlite: p50 "
        f"{p['postgres'][0] / p['sqlite'][0]:.2f}x, p99 {p['postgres'][1] / p['sqlite'][1]:.2f}x;"
        f" a new server loads the namespace in {load:.1f} s"
    )


class _Rereading(PostgresKeywordMemory):
    """A memory that reads the namespace anew after any delete or correction (the baseline)."""

    def _apply_changes(self, rows: Rows, now: Version) -> bool:
        return False


def follow(postgres: postgres_cluster.Postgres, locomo: str, size: int, runs: int = 5) -> None:
    data = natural(locomo, size)
    with Database(_fresh(postgres)) as database:
        writer = PostgresKeywordMemory(database, "follow")
        ids: list[str] = []
        for i in range(0, len(data), 10_000):
            ids += writer.store(data[i : i + 10_000])
        followers = {
            "incremental": PostgresKeywordMemory(database, "follow"),
            "reload": _Rereading(database, "follow"),
        }
        for follower in followers.values():
            follower.search("hello")
        times: dict[str, list[float]] = {name: [] for name in followers}
        for run in range(runs):
            writer.delete([ids[run * 997]])
            names = list(followers) if run % 2 == 0 else list(reversed(followers))
            for name in names:
                start = time.perf_counter()
                followers[name].search("hello")
                times[name].append(time.perf_counter() - start)
    ratios = [r / i for r, i in zip(times["reload"], times["incremental"], strict=True)]
    incremental = _spread([1000 * t for t in times["incremental"]], "{:.1f}")
    print(
        f"\nfirst call after another server deleted one of {size:,} messages ({runs} runs, "
        f"min / median / max): incremental {incremental} ms; "
        f"reload {_spread([1000 * t for t in times['reload']], '{:.0f}')} ms; "
        f"reload / incremental {_spread(ratios, '{:.0f}x')}"
    )


def _percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return 1000 * values[len(values) // 2], 1000 * values[
        min(len(values) - 1, int(len(values) * 0.99))
    ]


def _spread(values: list[float], fmt: str) -> str:
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--locomo", default=os.environ.get("LOCOMO", "../shared/data/locomo/locomo-dev.json")
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--only-follow", action="store_true", help="part 3 only")
    args = parser.parse_args()
    sizes = [100_000] + ([1_000_000] if os.environ.get("HIMGA_BENCH_MILLION") else [])
    with postgres_cluster.primary() as postgres:
        follow(postgres, args.locomo, 100_000)
        if args.only_follow:
            return 0
        if not args.skip_throughput:
            throughput(postgres, args.locomo, args.runs, args.calls)
        for size in sizes:
            latency(postgres, args.locomo, size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
