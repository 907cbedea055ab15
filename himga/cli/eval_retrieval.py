"""`himga eval-retrieval`: recall@k of a memory's search against a LoCoMo file's evidence turns."""

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from himga.data import Sample
    from himga.memory.base import BaseMemory


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = subparsers.add_parser(
        "eval-retrieval",
        help="measure how many evidence turns a memory's search finds (recall@k)",
        description=(
            "Ingest each sample of a LoCoMo-layout file into a fresh memory, search every "
            "question that names evidence, and print recall@k overall (categories 1-4) and per "
            "category (category 5 apart)."
        ),
    )
    parser.add_argument(
        "--dataset",
        metavar="FILE",
        help="the LoCoMo JSON file (default: the HIMGA_LOCOMO_PATH environment variable)",
    )
    parser.add_argument(
        "--memory", metavar="NAME", help="the memory to measure (default: the server default)"
    )
    parser.add_argument(
        "--memory-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an option of the memory's kind (repeatable; keyword: near_turns, k1, b, ...)",
    )
    parser.add_argument(
        "--k",
        type=_ks,
        default="1,5,10,20,50",
        metavar="K,K,...",
        help="comma-separated cut-offs (default: 1,5,10,20,50)",
    )
    parser.add_argument(
        "--leave-one-out",
        action="store_true",
        help=(
            "the keyword method's recall on each conversation with its parameters chosen on "
            "the others (himga.eval.folds), instead of --memory's"
        ),
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(run=run)


def _ks(text: str) -> list[int]:
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"cut-offs must be integers >= 1: {text!r}")
    return ks


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm  # type: ignore[import-untyped]

    from himga.data import DatasetError, load_dataset
    from himga.eval import evaluate_retrieval, format_report
    from himga.kinds import option_pairs
    from himga.memory.registry import DEFAULT_MEMORY, memory_options, open_memory

    name = args.memory or DEFAULT_MEMORY
    try:
        options = memory_options(name, dict(option_pairs(args.memory_option)))

        def factory(namespace: str, place: "Path | None") -> "BaseMemory":
            return open_memory(name, namespace, place, options)

        samples = load_dataset("locomo", args.dataset)
    except (DatasetError, ValueError) as error:
        print(f"himga eval-retrieval: error: {error}", file=sys.stderr)
        return 2
    if args.leave_one_out:
        return _leave_one_out(samples, args)
    total = sum(len(sample.qa_pairs) for sample in samples)
    with tqdm(
        total=total,
        desc=f"eval-retrieval {name}",
        unit="q",
        file=sys.stderr,
        disable=args.no_progress,
    ) as bar:
        report = evaluate_retrieval(samples, factory, args.k, on_question=bar.update)
    print(format_report(report, f"memory: {name}; dataset: {args.dataset or '$HIMGA_LOCOMO_PATH'}"))
    return 0


def _leave_one_out(samples: list["Sample"], args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from himga.eval import format_report
    from himga.eval.folds import CHOSEN_BY, describe, leave_one_out, steps
    from himga.eval.retrieval import OVERALL

    try:
        with tqdm(
            total=steps(samples), desc="leave-one-out", file=sys.stderr, disable=args.no_progress
        ) as bar:
            folds, pooled = leave_one_out(samples, args.k, on_step=bar.update)
    except ValueError as error:
        print(f"himga eval-retrieval: error: {error}", file=sys.stderr)
        return 2
    print("leave one conversation out: parameters chosen on the others, recall on it")
    for fold in folds:
        figures = " ".join(
            f"R@{k} {fold.report.recall(OVERALL, k).mean_fraction:.3f}" for k in CHOSEN_BY
        )
        print(f"  {fold.held_out}: {figures}; chose {describe(fold.chosen)}")
    title = f"held-out conversations pooled; dataset: {args.dataset or '$HIMGA_LOCOMO_PATH'}"
    print(format_report(pooled, title))
    return 0
