"""`himga validate` against `check-jsonschema` on the bundled schema: the same files, same run.

Writes EpisodeTrace documents (from bench_validate's fixed seed), one JSON file each, then times
both command lines end to end, start-up included, as a user or a CI job runs them:

    himga validate --type EpisodeTrace FILE...
    check-jsonschema --schemafile generated/bundled/v1/episode_trace.json FILE...

twice over: on files that are all valid (the usual CI case) and on a mix with broken ones (where
`himga validate` also loads its reference validator to explain each problem). Prints seconds
for each and the check-jsonschema / himga ratio as min / median / max over the runs, and fails
if the two ever name different files as invalid.

    make bench-validate-cli      # or: python benchmarks/bench_validate_cli.py --runs 5
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_validate import BREAKAGES, TYPE, documents

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "generated" / "bundled" / "v1" / "episode_trace.json"
BIN = Path(sys.executable).parent


def write_files(folder: Path, count: int, invalid_share: float, seed: int) -> tuple[list[str], int]:
    """One document a file in `folder`; the file names (relative) and how many were broken."""
    docs, broken = documents(count, invalid_share, seed)
    names = []
    for index, document in enumerate(docs):
        name = f"episode-{index:05d}.json"
        (folder / name).write_text(json.dumps(document), encoding="utf-8")
        names.append(name)
    return names, broken


def himga_validate(folder: Path, names: list[str]) -> tuple[float, set[str]]:
    """Seconds taken, and the files it reported a problem in."""
    command = [str(BIN / "himga"), "validate", "--type", TYPE, *names]
    seconds, output = _timed(command, folder)
    return seconds, {line.split(":", 1)[0] for line in output.splitlines() if line}


def check_jsonschema(folder: Path, names: list[str]) -> tuple[float, set[str]]:
    command = [str(BIN / "check-jsonschema"), "--schemafile", str(BUNDLE), "-o", "json", *names]
    seconds, output = _timed(command, folder)
    return seconds, {error["filename"] for error in json.loads(output)["errors"]}


def _timed(command: list[str], folder: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} exited {done.returncode}:\n{done.stderr}")
    return seconds, done.stdout


def spread(values: list[float], unit: str) -> str:
    return (
        f"min {min(values):>7.2f}{unit}  median {statistics.median(values):>7.2f}{unit}  "
        f"max {max(values):>7.2f}{unit}"
    )


def bench(label: str, folder: Path, names: list[str], broken: int, runs: int) -> bool:
    """Times both tools `runs` times on the files; False if they disagree."""
    print(f"\n{label}: {len(names):,} files, {broken:,} of them broken")
    himga_seconds, check_seconds, ratios = [], [], []
    for run in range(1, runs + 1):
        # Alternate which goes first, so that neither always finds the files in a warmer cache.
        first, second = (himga_validate, check_jsonschema)[:: 1 if run % 2 else -1]
        results = {first: first(folder, names), second: second(folder, names)}
        (himga_time, himga_invalid), (check_time, check_invalid) = (
            results[himga_validate],
            results[check_jsonschema],
        )
        if himga_invalid != check_invalid or len(himga_invalid) != broken:
            print(
                f"run {run}: himga validate names {len(himga_invalid)} files invalid, "
                f"check-jsonschema {len(check_invalid)}, {broken} were broken; they differ on "
                f"{sorted(himga_invalid ^ check_invalid)[:5]}",
                file=sys.stderr,
            )
            return False
        himga_seconds.append(himga_time)
        check_seconds.append(check_time)
        ratios.append(check_time / himga_time)
    print(f"himga validate             seconds  {spread(himga_seconds, ' s')}")
    print(f"check-jsonschema (bundle)  seconds  {spread(check_seconds, ' s')}")
    print(f"check-jsonschema / himga   ratio    {spread(ratios, 'x')}")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=2_000)
    parser.add_argument("--invalid-share", type=float, default=0.3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()

    print(f"{TYPE} documents, one a file; {args.runs} runs of each command line, start-up included")
    with tempfile.TemporaryDirectory(prefix="bench-validate-cli-") as scratch:
        agreed = True
        for label, share in [("all valid", 0.0), ("mixed", args.invalid_share)]:
            folder = Path(scratch) / label.replace(" ", "-")
            folder.mkdir()
            names, broken = write_files(folder, args.documents, share, args.seed)
            agreed = bench(label, folder, names, broken, args.runs) and agreed
    if not agreed:
        return 1
    print(f"\nverdicts identical in every run ({len(BREAKAGES)} ways of breaking a document)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
