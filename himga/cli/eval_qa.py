"""`himga eval`: the seed's evaluation loop from the command line.

An agent with the named memory and language model answers every question of a benchmark file;
a judge model (optional) grades the answers; a table of F1, BLEU-1 and the judge's accuracy per
category is printed, and every answer is written to a JSON Lines file. Several memories
(`--memory null,keyword`) are run one after another and shown side by side.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import IO, Any

from himga.cli._remote import add_remote_arguments, remote_arguments, rpc_failure

DEFAULT_NAMESPACE = "himga-eval"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="answer a benchmark's questions from memory with an LLM, judge, and score them",
        description=(
            "An agent ingests each sample of a benchmark file into a memory (reset before each "
            "sample), answers every question with --llm from what the memory recalls, --judge "
            "grades the answers (mem0's CORRECT/WRONG judgement), and a table of F1 (the LoCoMo "
            "authors' rules), BLEU-1 and the judge's accuracy per category is printed. "
            "--llm extractive answers without a model or a key."
        ),
    )
    parser.add_argument(
        "--dataset",
        metavar="FILE",
        help="the benchmark file (default: HIMGA_LOCOMO_PATH or HIMGA_LONGMEMEVAL_PATH)",
    )
    parser.add_argument(
        "--benchmark",
        default="locomo",
        choices=["locomo", "longmemeval"],
        help="the file's layout (default: %(default)s)",
    )
    parser.add_argument(
        "--memory",
        default="sqlite",
        metavar="NAME[,NAME...]",
        help="the memory, or several compared side by side (default: %(default)s)",
    )
    parser.add_argument(
        "--target",
        metavar="HOST:PORT",
        help="keep the memory in the himga server there (RemoteMemory; any language's server)",
    )
    add_remote_arguments(parser)
    parser.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        help="the server namespace, suffixed with the memory name (default: %(default)s)",
    )
    parser.add_argument(
        "--llm",
        required=True,
        metavar="PROVIDER[:MODEL]",
        help="the model that answers: anthropic[:MODEL], openai[:MODEL] or extractive",
    )
    parser.add_argument(
        "--base-url", help="where --llm is served: a local OpenAI-compatible server's .../v1 URL"
    )
    parser.add_argument(
        "--judge", metavar="PROVIDER[:MODEL]", help="the model that grades (default: none)"
    )
    parser.add_argument("--judge-base-url", help="where --judge is served, likewise")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write every answer (JSONL)")
    parser.add_argument(
        "--concurrency",
        type=_positive,
        default=8,
        help="model calls in flight at once (default: %(default)s)",
    )
    parser.add_argument(
        "--max-samples", type=_positive, metavar="N", help="only the first N samples"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="FILE",
        help="the answer cache, a SQLite file made 0600 (default: llm-answers.sqlite3 in "
        "$HIMGA_CACHE_DIR or ~/.cache/himga)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor keep answers")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    parser.set_defaults(run=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    import grpc

    from himga.data import DatasetError, load_dataset
    from himga.errors import HimgaError
    from himga.llm import LLMConfigError, LLMError
    from himga.memory.registry import here_problem, memory_factory

    names = [name.strip() for name in args.memory.split(",") if name.strip()]
    try:
        if not names:
            raise ValueError("--memory names no memory")
        reach = remote_arguments(args)
        if args.target is None:
            for name in names:
                memory_factory(name)  # an unknown name fails here, before any work
                if (problem := here_problem(name)) is not None:
                    raise ValueError(problem)
        llm = _client(args.llm, args.base_url, args)
        judge = _client(args.judge, args.judge_base_url, args) if args.judge else None
        if judge is not None and judge.provider == "extractive":
            raise LLMConfigError("--judge: the extractive reader cannot judge; name a model")
        samples = load_dataset(args.benchmark, args.dataset)[: args.max_samples]
        out = args.out.open("w", encoding="utf-8") if args.out else None
    except (DatasetError, LLMConfigError, ValueError, OSError) as error:
        print(f"himga eval: error: {error}", file=sys.stderr)
        return 2
    columns = {}
    try:
        for name in names:
            columns[name] = _evaluate(name, samples, llm, judge, args, out, reach)
    except (LLMError, HimgaError, OSError) as error:  # a server's refusal is a HimgaError
        print(f"himga eval: error: {error}", file=sys.stderr)
        return 1
    except grpc.RpcError as error:  # no server answered, or not a himga server
        said, code = rpc_failure(error, args.target)
        print(f"himga eval: error: {said}", file=sys.stderr)
        return code
    finally:
        if out is not None:
            out.close()
        llm.close()
        if judge is not None:
            judge.close()
    from himga.eval import format_table

    judged_by = f"{judge.provider}:{judge.model}" if judge else "none"
    print(
        f"dataset: {args.dataset or '$HIMGA_' + args.benchmark.upper() + '_PATH'} "
        f"({len(samples)} samples); answers: {llm.provider}:{llm.model}; judge: {judged_by}"
    )
    print("F1: the LoCoMo authors' rules (category 5: says 'not mentioned'); overall leaves")
    print("category 5 out, all counts it; BLEU-1 and the judge leave category 5 out")
    print(format_table(columns))
    return 0


def _client(spec: str, base_url: str | None, args: argparse.Namespace) -> Any:
    from himga.llm import AnswerCacheError, LLMConfigError, get_client, parse_spec

    provider, model = parse_spec(spec)
    options: dict[str, Any] = {}
    if base_url:
        options["base_url"] = base_url
    if provider == "extractive":
        return get_client(provider, model, **options)
    cache: bool | Path = False if args.no_cache else (args.cache or True)
    try:
        return get_client(provider, model, cache=cache, **options)
    except AnswerCacheError as error:  # one line, exit 2, as the other arguments' errors
        if args.cache:
            raise LLMConfigError(
                f"--cache {error.path}: cannot open it as the answer cache: {error.reason}"
            ) from None
        raise LLMConfigError(
            f"the answer cache {error.path} cannot be opened: {error.reason}; --cache FILE puts "
            "it elsewhere, --no-cache does without"
        ) from None


def _evaluate(
    name: str,
    samples: list[Any],
    llm: Any,
    judge: Any,
    args: argparse.Namespace,
    out: IO[str] | None,
    reach: dict[str, Any],
) -> Any:
    from himga.agent import BaseAgent
    from himga.eval import batch_judge, compute_metrics, run_eval
    from himga.eval.metrics import score_result
    from himga.memory.base import BaseMemory
    from himga.memory.registry import open_memory

    memory: BaseMemory
    if args.target is not None:
        from himga.service import RemoteMemory

        memory = RemoteMemory(args.target, f"{args.namespace}-{name}", memory=name, **reach)
    else:
        memory = open_memory(name, f"{args.namespace}-{name}", None)
    with memory:
        agent = BaseAgent(memory=memory, llm=llm)
        results = run_eval(
            samples, agent=agent, show_progress=not args.no_progress, concurrency=args.concurrency
        )
    verdicts = (
        batch_judge(
            results, llm=judge, show_progress=not args.no_progress, concurrency=args.concurrency
        )
        if judge is not None
        else [None] * len(results)
    )
    if out is not None:
        for result, verdict in zip(results, verdicts, strict=True):
            score = score_result(result, verdict)
            record = {
                "memory": name,
                **result.to_dict(),
                "f1": round(score.f1, 6),
                "bleu1": None if score.bleu1 is None else round(score.bleu1, 6),
                "judge": None if verdict is None else verdict.to_dict(),
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        out.flush()
    _report_costs(name, results, verdicts, sys.stderr)
    return compute_metrics(results, verdicts if judge is not None else None)


def _report_costs(name: str, results: list[Any], verdicts: list[Any], stream: IO[str]) -> None:
    """What the model calls of one memory's run cost (nothing to say for the extractive reader)."""
    calls = [r.call for r in results] + [v.call for v in verdicts if v is not None]
    calls = [c for c in calls if c.provider != "extractive"]
    if not calls:
        return
    paid = [c for c in calls if not c.cached]
    print(
        f"{name}: {len(calls)} model calls, {len(calls) - len(paid)} from the cache; paid "
        f"{sum(c.input_tokens for c in paid)} input and {sum(c.output_tokens for c in paid)} "
        "output tokens",
        file=stream,
    )
