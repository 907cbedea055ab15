"""The `himga` command line: `himga validate | serve | eval-retrieval | conformance | export |
import`.

Every other module of this package is one subcommand. It defines `add_parser(subparsers)`,
which adds its parser and sets `run` (a function of the parsed arguments returning the exit
code). Subcommands import their heavy dependencies inside `run`, so `himga --help` stays fast;
and a command line naming a subcommand builds only that subcommand's parser, so one
subcommand's start-up (`himga mcp` answering its host) never pays for the others' imports.
"""

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Collection, Sequence

import himga


def build_parser() -> argparse.ArgumentParser:
    return _parser()[0]


def _parser(only: str | None = None) -> tuple[argparse.ArgumentParser, Collection[str]]:
    """The command line's parser, of every subcommand or of the module `only` alone, and the
    subcommands it knows."""
    parser = argparse.ArgumentParser(
        prog="himga", description="The himga memory contract: validate, serve, evaluate."
    )
    parser.add_argument("--version", action="version", version=f"himga {himga.__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_") or only not in (None, module_info.name):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        module.add_parser(subparsers)
    return parser, subparsers.choices


def _module_of(argv: Sequence[str]) -> str | None:
    """The module of the subcommand `argv` starts with (`import` is import_, `eval-qa`
    eval_qa), or None when it starts with none."""
    if not argv:
        return None
    name = argv[0].replace("-", "_")
    modules = {m.name for m in pkgutil.iter_modules(__path__)}
    for candidate in (name, f"{name}_"):
        if not candidate.startswith("_") and candidate in modules:
            return candidate
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    only = _module_of(argv)
    parser, commands = _parser(only)
    if only is not None and argv[0] not in commands:  # a module named like another command
        parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
