"""`himga import --target HOST:PORT --namespace NS FILE`: store JSON Lines of Session documents.

Reads what `himga export` writes (one Session document a line, with its messages; '-' reads
stdin), checks every line first, and stores nothing when any line is not a valid Session: it
prints `FILE:LINE: $.path: reason` for each problem and exits 1. Then it stores the messages in
order, in IngestBatch calls of at most BATCH messages; a message whose id is stored already
replaces it, one given twice included, so the count reported is of the distinct messages the
file stored (the ids given twice are named; a namespace that held others holds those too).
Exits 0 when all was stored, 1 on a refused call or bad input, 2 when no server answered or an
argument is wrong.

`himga import --locomo FILE` and `--longmemeval FILE` load a benchmark instead: each
conversation (a LoCoMo sample, a LongMemEval question's haystack) into its own namespace, named
by its sample id (after `--namespace PREFIX-` when given), with a progress bar. The whole file is
read first, and nothing is stored when any of it is refused: a file of the wrong layout, naming
its first bad place and its line (`FILE:LINE: [2].conversation.session_1[3].text: reason`); a
sample id used twice (the loaders refuse it); a sample id that cannot be a namespace's name, by
the rule the server holds every call to (himga.service.names), naming the sample and its line.

`--data-dir DIR` stores into an embedded store instead of a server: the files `himga serve
--data-dir DIR` serves (while no server has them open).
"""

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from himga.cli._remote import add_remote_arguments, remote_arguments, rpc_failure

if TYPE_CHECKING:
    from himga.data import Sample

BATCH = 500


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="store JSON Lines of Session documents (what `himga export` writes)",
        description="Store the messages of a JSON Lines file of Session documents in a "
        "namespace, in order, after checking every line (nothing is stored if one is invalid).",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--target", help="the server, as HOST:PORT")
    where.add_argument(
        "--data-dir", type=Path, help="an embedded store: the data directory of `himga serve`"
    )
    parser.add_argument(
        "--namespace",
        help="the namespace to store into (with --locomo or --longmemeval: the prefix of each "
        "conversation's namespace; default: none, the sample id alone)",
    )
    parser.add_argument(
        "--memory", default="", help="the namespace's memory (default: the server's)"
    )
    add_remote_arguments(parser)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("file", metavar="FILE", nargs="?", help="the JSON Lines file, or '-'")
    what.add_argument("--locomo", metavar="FILE", type=Path, help="a LoCoMo file (locomo10.json)")
    what.add_argument(
        "--longmemeval", metavar="FILE", type=Path, help="a LongMemEval file (longmemeval_s.json)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        reach = remote_arguments(args)  # before any file is read: how to reach the server
    except ValueError as error:
        print(f"himga import: {error}", file=sys.stderr)
        return 2
    if args.locomo is not None or args.longmemeval is not None:
        return _run_benchmark(args)
    if args.namespace is None:
        print("himga import: --namespace is needed for a JSON Lines file", file=sys.stderr)
        return 2
    if (problem := _bad_namespace(args.namespace)) is not None:
        print(f"himga import: --namespace {args.namespace!r}: {problem}", file=sys.stderr)
        return 2
    if args.data_dir is not None:
        return _run_embedded(args)
    import grpc

    from himga.errors import HimgaError
    from himga.service import RemoteMemory

    items = _exported(args)
    if isinstance(items, int):
        return items  # the file could not be read, or breaks the layout: nothing stored
    try:
        with RemoteMemory(args.target, args.namespace, memory=args.memory, **reach) as memory:
            for start in range(0, len(items), BATCH):
                memory.store(items[start : start + BATCH])
    except (HimgaError, ValueError) as error:
        print(f"himga import: {error}", file=sys.stderr)
        return 1
    except grpc.RpcError as error:
        said, code = rpc_failure(error, args.target)
        print(f"himga import: {said}", file=sys.stderr)
        return code
    print(f"stored {_stored({args.namespace: items})} in {args.namespace}", file=sys.stderr)
    return 0


def _run_embedded(args: argparse.Namespace) -> int:
    """A JSON Lines file into the embedded store of --data-dir."""

    items = _exported(args)
    if isinstance(items, int):
        return items  # the file could not be read, or breaks the layout: nothing stored
    return _store({args.namespace: items}, args)


def _run_benchmark(args: argparse.Namespace) -> int:
    """A LoCoMo or LongMemEval file, each conversation into its own namespace."""
    from himga.data import DatasetError
    from himga.data.locomo import load_locomo
    from himga.data.longmemeval import load_longmemeval
    from himga.data.places import located

    path: Path = args.locomo if args.locomo is not None else args.longmemeval
    loader: Callable[[Path], list[Sample]] = (
        load_locomo if args.locomo is not None else load_longmemeval
    )
    if args.namespace is not None and (problem := _bad_namespace(args.namespace)) is not None:
        print(f"himga import: --namespace {args.namespace!r}: {problem}", file=sys.stderr)
        return 2
    try:
        samples = loader(path)
        batches = _namespaces(samples, path, args)
    except DatasetError as error:
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        print(f"himga import: {located(error, path, text)}; nothing stored", file=sys.stderr)
        return 1
    return _store(batches, args)


def _namespaces(
    samples: "list[Sample]", path: Path, args: argparse.Namespace
) -> dict[str, list[Any]]:
    """Each sample's messages (with their sessions) by the namespace they go into; DatasetError
    naming the first sample whose namespace breaks the naming rule."""
    from himga.data import DatasetError

    key = "sample_id" if args.locomo is not None else "question_id"
    prefix = f"{args.namespace}-" if args.namespace else ""
    batches: dict[str, list[Any]] = {}
    for index, sample in enumerate(samples):
        namespace = f"{prefix}{sample.sample_id}"
        if (problem := _bad_namespace(sample.sample_id)) is not None:
            raise DatasetError(
                f"{path}: [{index}].{key}: {sample.sample_id!r} cannot name a namespace, which "
                f"{problem}; change it in the file (--namespace only puts a prefix before it)"
            )
        if (problem := _bad_namespace(namespace)) is not None:
            raise DatasetError(
                f"{path}: [{index}].{key}: {sample.sample_id!r} after --namespace "
                f"{args.namespace!r} makes the namespace {namespace!r}, which {problem}; a "
                "shorter --namespace, or none, fixes it"
            )
        items = batches.setdefault(namespace, [])  # the loaders refuse a sample id used twice
        for session in sample.sessions:
            bare = session.model_copy(update={"messages": []})
            items += [(message, bare) for message in session.messages]
    return batches


def _bad_namespace(name: str) -> str | None:
    """What is wrong with `name` as a namespace's name, by the server's rule; None if nothing."""
    from himga.service.names import namespace_violations

    problems = namespace_violations(name)
    return "; ".join(problem.description for problem in problems) or None


def _stored(batches: dict[str, list[Any]]) -> str:
    """`N messages`: how many distinct messages storing `batches` leaves in the namespaces (a
    message whose id was given before in its namespace replaces that one), and which ids were
    given again."""
    from himga.memory.base import message_id

    held = 0
    again: list[str] = []
    for items in batches.values():
        seen: set[str] = set()
        for message, _ in items:
            id_ = message_id(message)
            if id_ in seen:
                again.append(id_)
            seen.add(id_)
        held += len(seen)
    said = f"{held} message{'' if held == 1 else 's'}"
    if again:
        shown = ", ".join(repr(id_) for id_ in again[:5]) + (", ..." if len(again) > 5 else "")
        said += f" ({held + len(again)} given; the later of two with one id is kept: {shown})"
    return said


def _store(batches: dict[str, list[Any]], args: argparse.Namespace) -> int:
    """Store each namespace's items in order, BATCH at a time, behind one progress bar."""
    import grpc
    from tqdm import tqdm  # type: ignore[import-untyped]

    from himga.errors import HimgaError

    total = sum(len(items) for items in batches.values())
    where = args.target or str(args.data_dir)
    try:
        with (
            _opened(args) as opening,
            tqdm(
                total=total, desc=f"import to {where}", unit="msg", disable=args.no_progress
            ) as bar,
        ):
            for namespace, items in batches.items():
                with opening(namespace) as memory:
                    for start in range(0, len(items), BATCH):
                        batch = items[start : start + BATCH]
                        memory.store(batch)
                        bar.update(len(batch))
    except (HimgaError, ValueError, OSError) as error:
        print(f"himga import: {error}", file=sys.stderr)
        return 1
    except grpc.RpcError as error:
        said, code = rpc_failure(error, args.target)
        print(f"himga import: {said}", file=sys.stderr)
        return code
    names = ", ".join(batches) if len(batches) <= 3 else f"{len(batches)} namespaces"
    print(f"stored {_stored(batches)} in {names}", file=sys.stderr)
    return 0


@contextmanager
def _opened(args: argparse.Namespace) -> "Iterator[Callable[[str], AbstractContextManager[Any]]]":
    """A function opening a namespace's memory for the block it is used in: at the server of
    --target, or in the store of --data-dir, opened and recorded as `himga serve --data-dir`
    opens it, so that a server over the directory serves what was stored."""
    if args.target is not None:
        from himga.service import RemoteMemory

        reach = remote_arguments(args)
        yield lambda namespace: RemoteMemory(args.target, namespace, memory=args.memory, **reach)
        return
    from himga.memory.registry import DEFAULT_MEMORY
    from himga.service.namespaces import Namespaces

    args.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    namespaces = Namespaces(args.memory or DEFAULT_MEMORY, args.data_dir)

    @contextmanager
    def using(namespace: str) -> Iterator[Any]:
        with namespaces.using(namespace, args.memory) as opened:
            assert opened is not None
            yield opened.memory

    try:
        yield using
    finally:
        namespaces.close()


def _exported(args: argparse.Namespace) -> "list[Any] | int":
    """The records of `himga export`'s file `args.file` ("-": stdin), each line checked; or the
    exit code after saying, line by line, what is wrong (then nothing is stored)."""
    from himga.memory.dump import read_line

    shown = "<stdin>" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(f"himga import: cannot read {shown}: {error}", file=sys.stderr)
        return 2
    items: list[Any] = []
    problems = 0
    # Only "\n" ends a line: a JSON string may hold U+2028 and others str.splitlines splits on.
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        read, found = read_line(line)
        for problem in found:
            print(f"{shown}:{number}: {problem}", file=sys.stderr)
        problems += len(found)
        items += read
    if problems:
        print(f"himga import: {problems} problems; nothing stored", file=sys.stderr)
        return 1
    return items
