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
            "the method's recall on each conversation with its parameters chosen on the "
            "others: the keyword method's (himga.eval.folds), or with --memory hybrid the "
            "hybrid method's (himga.eval.hybrid)"
        ),
    )
    parser.add_argument(
        "--embedding-model",
        metavar="NAME|DIR",
        help="with --memory hybrid: the embedding model (default: e5-small-v2)",
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
    from himga.errors import InvalidArgument, ModelError
    from himga.eval import evaluate_retrieval, format_report
    from himga.memory.registry import DEFAULT_MEMORY, command_options, here_problem, open_memory

    name = args.memory or DEFAULT_MEMORY
    if args.leave_one_out and name == HYBRID:
        return _hybrid_leave_one_out(args)
    try:
        if (problem := here_problem(name)) is not None:
            raise ValueError(problem)
        options = command_options(name, args.memory_option, args.embedding_model)
        prepare = getattr(options, "prepare", None)  # the kinds whose options load a model
        if prepare is not None:
            prepare()

        def factory(namespace: str, place: "Path | None") -> "BaseMemory":
            return open_memory(name, namespace, place, options)

        samples = load_dataset("locomo", args.dataset)
    except InvalidArgument as error:  # every option's mistake, none cut
        print(f"himga eval-retrieval: error: {error.whole()}", file=sys.stderr)
        return 2
    except (DatasetError, ModelError, ValueError) as error:
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


HYBRID = "hybrid"


def _hybrid_leave_one_out(args: argparse.Namespace) -> int:
    """The hybrid method chosen by leaving one conversation out (himga.eval.hybrid), then the
    whole file with the default method beside the keyword method and the issue's baseline."""
    from tqdm import tqdm

    from himga.data import DatasetError, load_dataset
    from himga.embeddings import DEFAULT_MODEL, ModelError, open_embedder
    from himga.eval import format_report
    from himga.eval.folds import CHOSEN_BY
    from himga.eval.hybrid import DEFAULT, Candidate, evaluate, leave_one_out, prepare, steps
    from himga.eval.retrieval import OVERALL
    from himga.memory.fusion import BASELINE, Fusion

    try:
        samples = load_dataset("locomo", args.dataset)
        embedder = open_embedder(args.embedding_model or DEFAULT_MODEL)
    except (DatasetError, ModelError, ValueError) as error:
        print(f"himga eval-retrieval: error: {error}", file=sys.stderr)
        return 2
    depth = max(DEFAULT.fusion.keyword_depth, BASELINE.keyword_depth)
    with embedder:
        conversations = [
            prepare(sample, embedder, depth)
            for sample in tqdm(samples, desc="embedding", file=sys.stderr, disable=args.no_progress)
        ]
    try:
        with tqdm(
            total=steps(len(conversations)),
            desc="leave-one-out",
            file=sys.stderr,
            disable=args.no_progress,
        ) as bar:
            folds, pooled = leave_one_out(conversations, args.k, on_step=bar.update)
    except ValueError as error:
        print(f"himga eval-retrieval: error: {error}", file=sys.stderr)
        return 2
    print(f"memory: hybrid ({embedder.model_id}); leave one conversation out")
    for fold in folds:
        figures = " ".join(
            f"R@{k} {fold.report.recall(OVERALL, k).mean_fraction:.3f}" for k in CHOSEN_BY
        )
        print(f"  {fold.held_out}: {figures}; chose {fold.chosen.describe()}")
    title = f"held-out conversations pooled; dataset: {args.dataset or '$HIMGA_LOCOMO_PATH'}"
    print(format_report(pooled, title))
    ks = sorted(set(args.k) | set(CHOSEN_BY))
    print("\nthe whole file, each conversation and pooled (overall R@10 / R@50; category 5):")
    methods = [
        ("keyword method alone", Candidate(Fusion(dense_weight=0.0, date_boost=0.0))),
        ("issue's baseline (reciprocal ranks)", Candidate(BASELINE, leave_out_names=False)),
        ("hybrid method, names kept", Candidate(DEFAULT.fusion, leave_out_names=False)),
        ("hybrid method (the default)", DEFAULT),
    ]
    for label, candidate in methods:
        cells = []
        for conversation in [*([c] for c in conversations), conversations]:
            report = evaluate(conversation, candidate, ks)
            name = "pooled" if len(conversation) > 1 else conversation[0].sample.sample_id
            at = [report.recall(OVERALL, k).mean_fraction for k in CHOSEN_BY]
            cells.append(f"{name} {at[0]:.3f}/{at[1]:.3f}")
            if len(conversation) > 1:
                apart = [report.recall("category 5", k).mean_fraction for k in CHOSEN_BY]
                cells.append(f"category 5 {apart[0]:.3f}/{apart[1]:.3f}")
        print(f"  {label}: " + "; ".join(cells))
    print(format_report(evaluate(conversations, DEFAULT, ks), "the default, the whole file"))
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
