"""The `himga` command line: `himga validate | serve | eval-retrieval | conformance | export |
import`.

Every other module of this package is one subcommand. It defines `add_parser(subparsers)`,
which adds its parser and sets `run` (a function of the parsed arguments returning the exit
code). Subcommands import their heavy dependencies inside `run`, so `himga --help` stays fast.
"""

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

import himga


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="himga", description="The himga memory contract: validate, serve, evaluate."
    )
    parser.add_argument("--version", action="version", version=f"himga {himga.__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
