"""`himga eval-episodes`: recall@k and MRR of himga's episode ranking beside two baselines."""

import argparse


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = subparsers.add_parser(
        "eval-episodes",
        help="measure the episode ranking (recall@k, MRR) beside BM25 and Loki Mode's rules",
        description=(
            "Generate a seeded set of episodes of work on a code base with known answers, "
            "then rank them for each query with himga's ranking, plain BM25 over the episodes' "
            "JSON and Loki Mode's rules, and print recall@k and MRR overall and per kind of "
            "task. The same seed gives the same figures."
        ),
    )
    parser.add_argument("--seed", type=int, default=7, help="the set's seed (default: 7)")
    parser.add_argument(
        "--topics", type=_positive, default=800, help="topics of work (default: 800)"
    )
    parser.add_argument("--queries", type=_positive, default=200, help="queries (default: 200)")
    parser.set_defaults(run=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from himga.eval.episode_sets import generate
    from himga.eval.episodes import DEFAULT_KS, evaluate, format_report

    episode_set = generate(args.seed, args.topics, args.queries)
    print(format_report(episode_set, evaluate(episode_set, DEFAULT_KS), DEFAULT_KS))
    return 0
