"""`make soak`: the fault suite, bounded in time, with its report.

    python -m tests.soak [--rounds N] [--fuzz-seconds S] [--seed N]

1. Kill rounds (tests/soak/kill_rounds.py): clients write, delete, reset and read messages and
   episodes across many namespaces while the server is SIGKILLed at random moments; retries
   carry request ids.
2. A disk that fills mid-run (tests/soak/full_disk.py, a tmpfs: needs root), messages and
   episodes.
3. Few descriptors (tests/soak/descriptors.py): a server under `prlimit --nofile`, threads
   writing and reading a message and an episode in each of many namespaces.
4. Random and mutated request bytes against every method (tests/soak/fuzz.py).

Exits 0 only when nothing acknowledged was lost, duplicated, or reset or deleted back to life,
the full disk and the descriptor limit behaved as documented, and no input crashed the server
or got INTERNAL.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tests.soak import descriptors, full_disk, fuzz, kill_rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--rounds", type=int, default=60, help="kill rounds (default: 60)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--namespaces", type=int, default=25, help="per client (default: 25)")
    parser.add_argument(
        "--fuzz-inputs", type=int, default=200_000, help="at most this many (default: 200000)"
    )
    parser.add_argument(
        "--fuzz-seconds", type=float, default=180.0, help="fuzz for at most this long"
    )
    parser.add_argument(
        "--descriptor-namespaces", type=int, default=600, help="under the limit (default: 600)"
    )
    parser.add_argument(
        "--descriptor-limit", type=int, default=256, help="the server's RLIMIT_NOFILE (256)"
    )
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args(argv)
    failures = []
    with tempfile.TemporaryDirectory(prefix="himga-soak-") as scratch:
        root = Path(scratch)
        start = time.monotonic()
        tally = kill_rounds.run(
            root / "kill", args.rounds, args.clients, args.namespaces, seed=args.seed
        )
        print(f"kill rounds (seed {args.seed}), {time.monotonic() - start:.0f} s")
        print(f"  rounds                  {tally.rounds}")
        print(
            f"  writes acknowledged     {tally.calls_acknowledged} calls, "
            f"{tally.messages_acknowledged} messages, {tally.resets_acknowledged} resets, "
            f"{tally.deletes_acknowledged} deletes ({tally.messages_deleted} messages)"
        )
        print(
            f"  retried with request_id {tally.retried} "
            f"({tally.stored_before_retry} had been stored, unacknowledged)"
        )
        print(
            f"  episodes acknowledged   {tally.episodes_acknowledged} recorded, "
            f"{tally.episode_deletes_acknowledged} deleted"
        )
        print(f"  reads answered          {tally.reads} messages, {tally.episode_reads} episodes")
        print(f"  lost                    {tally.lost} messages, {tally.episodes_lost} episodes")
        print(f"  duplicated              {tally.duplicated} messages")
        print(f"  present after a reset   {tally.resurrected} messages")
        print(
            f"  present after a delete  {tally.undeleted} messages, "
            f"{tally.episodes_undeleted} episodes"
        )
        print(f"  episodes unacknowledged {tally.episodes_unexpected}")
        print(f"  statuses seen           {dict(tally.statuses.most_common())}")
        if (
            tally.lost
            or tally.duplicated
            or tally.resurrected
            or tally.undeleted
            or tally.episodes_lost
            or tally.episodes_undeleted
            or tally.episodes_unexpected
            or tally.unexpected
        ):
            failures.append(f"kill rounds: {tally.unexpected[:5]}")

        start = time.monotonic()
        disk = full_disk.run(root / "disk", seed=args.seed)
        print(f"full disk, {time.monotonic() - start:.0f} s")
        print(
            f"  writes acknowledged     {disk.tally.messages_acknowledged} messages, "
            f"{disk.tally.episodes_acknowledged} episodes"
        )
        print(
            f"  refused, store full     {disk.refused} (health NOT_SERVING: "
            f"{disk.not_serving_seen}; SERVING again: {disk.serving_again})"
        )
        print(f"  reads while full        {disk.reads_while_full} (of both services each)")
        print(
            f"  lost / duplicated       {disk.tally.lost} / {disk.tally.duplicated} messages, "
            f"{disk.tally.episodes_lost} / - episodes"
        )
        if not (disk.refused and disk.not_serving_seen and disk.serving_again) or (
            disk.tally.lost
            or disk.tally.duplicated
            or disk.tally.resurrected
            or disk.tally.episodes_lost
            or disk.tally.episodes_unexpected
            or disk.tally.unexpected
        ):
            failures.append(f"full disk: {disk.tally.unexpected[:5]}")

        start = time.monotonic()
        few = descriptors.run(
            root / "descriptors", args.descriptor_namespaces, limit=args.descriptor_limit
        )
        print(
            f"few descriptors ({args.descriptor_limit}), {few.namespaces} namespaces, "
            f"{time.monotonic() - start:.0f} s"
        )
        print(f"  statuses seen           {dict(few.statuses.most_common())}")
        print(f"  lost / duplicated       {few.lost} / {few.duplicated} (messages and episodes)")
        print(f"  health NOT_SERVING seen {few.not_serving_seen}")
        print(f"  new connection at end   {'accepted' if few.accepted_at_end else 'REFUSED'}")
        if few.unexpected or few.lost or few.duplicated or few.not_serving_seen:
            failures.append(f"few descriptors: {few.unexpected[:5]}")
        elif not few.accepted_at_end:
            failures.append("few descriptors: no new connection at the end")

        start = time.monotonic()
        report = fuzz.run(root / "fuzz", args.fuzz_inputs, args.seed, args.fuzz_seconds)
        print(f"fuzz, {time.monotonic() - start:.0f} s")
        print(f"  inputs tried            {report.inputs}")
        print(f"  good calls between      {report.good_calls}")
        print(f"  statuses seen           {dict(report.statuses.most_common())}")
        if report.failures:
            failures.append(f"fuzz: {report.failures[:5]}")
    for failure in failures:
        print(f"FAILED: {failure}")
    print("soak: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
