"""`himga validate [--type TYPE] FILE...`: check JSON or JSON Lines documents against the schemas.

Prints one line per problem, `FILE:LINE: $.json.path: reason` (LINE is the JSON Lines line, 1
for a plain JSON file), and exits 0 when every document is valid, 1 when any is invalid or
malformed (an empty file holds no document, so it is malformed too), 2 on usage errors or
unreadable files. Without `--type`, a document's `$schema` names its type.
"""

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

VALID, INVALID, USAGE = 0, 1, 2
STDIN = "-"
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check JSON / JSON Lines documents against the himga schemas",
        description="Check each document of each FILE (a JSON file, or JSON Lines: one document "
        "a line; '-' reads stdin) against a himga schema. Prints 'FILE:LINE: $.path: reason' "
        "per problem; exits 0 if all are valid, 1 if any is invalid or malformed, 2 on usage "
        "errors or unreadable files.",
    )
    parser.add_argument(
        "--type",
        metavar="TYPE",
        help="the schema's type name, such as EpisodeTrace (default: each document's $schema)",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a file to check, or '-'")
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class Problem:
    """One line of output: where in which file, and what is wrong."""

    file: str
    line: int
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.path}: {self.reason}"


class _UsageProblem(Problem):
    """A problem the user fixes on the command line (exit 2), not in the document."""


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    from himga import validation

    out = stdout or sys.stdout
    if args.type is not None and args.type not in validation.type_names():
        known = ", ".join(validation.type_names())
        print(f"himga validate: unknown type {args.type!r}; known types: {known}", file=sys.stderr)
        return USAGE
    code = VALID
    documents = invalid = 0
    for name in args.files:
        try:
            data = _read(name, stdin or sys.stdin)
        except OSError as error:
            print(f"himga validate: cannot read {name}: {error.strerror or error}", file=sys.stderr)
            code = max(code, USAGE)
            continue
        shown = "<stdin>" if name == STDIN else name
        for line, document in _documents(data, json_lines=name.endswith(JSON_LINES_SUFFIXES)):
            documents += 1
            problems = _check(shown, line, document, args.type)
            for problem in problems:
                print(problem, file=out)
                code = max(code, USAGE if isinstance(problem, _UsageProblem) else INVALID)
            invalid += bool(problems)
    noun = "document" if documents == 1 else "documents"
    print(f"himga validate: {documents} {noun}, {invalid} with problems", file=sys.stderr)
    return code


def _read(name: str, stdin: TextIO) -> bytes:
    """The raw bytes: undecodable text is a malformed document (exit 1), not unreadable."""
    if name == STDIN:
        binary = getattr(stdin, "buffer", None)
        return binary.read() if binary is not None else stdin.read().encode("utf-8")
    return Path(name).read_bytes()


@dataclass(frozen=True)
class _Malformed:
    """Text that is not one JSON document."""

    reason: str


def _documents(data: bytes, json_lines: bool) -> Iterator[tuple[int, Any]]:
    """(line, document or _Malformed) for each document of a JSON or JSON Lines text.

    A file that is not named .jsonl / .ndjson is JSON Lines when its first line is a whole
    document and more follows; otherwise it is one JSON document, at line 1.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = data.count(b"\n", 0, error.start) + 1
        yield where, _Malformed(f"malformed JSON: not UTF-8 (byte {error.start + 1} of the file)")
        return
    if not text.strip():
        yield 1, _Malformed("empty: no JSON document")
        return
    if not json_lines:
        try:
            yield 1, _parse(text)
            return
        except json.JSONDecodeError as error:
            if error.msg != "Extra data" or not _is_document(text.lstrip().split("\n", 1)[0]):
                yield 1, _Malformed(_describe(error))
                return
    # Only "\n" ends a line: JSON strings may hold U+2028 and other characters that
    # str.splitlines would also split on.
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                yield number, _parse(line)
            except json.JSONDecodeError as error:
                yield number, _Malformed(f"malformed JSON: {error.msg} (column {error.colno})")


def _is_document(line: str) -> bool:
    try:
        _parse(line)
    except json.JSONDecodeError:
        return False
    return True


def _parse(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which are not JSON.
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


def _describe(error: json.JSONDecodeError) -> str:
    return f"malformed JSON: {error.msg} (line {error.lineno}, column {error.colno})"


def _check(file: str, line: int, document: Any, type_name: str | None) -> list[Problem]:
    from himga import validation

    if isinstance(document, _Malformed):
        return [Problem(file, line, "$", document.reason)]
    claimed = document.get("$schema") if isinstance(document, dict) else None
    problems: list[Problem] = []
    if isinstance(claimed, str):
        try:
            claimed_type: str | None = validation.type_for_id(claimed)
        except validation.UnknownTypeError as error:
            claimed_type = None
            problems.append(Problem(file, line, '$["$schema"]', str(error)))
        if type_name is not None and claimed_type not in (None, type_name):
            reason = f"names {claimed_type}, but --type is {type_name}"
            problems.append(Problem(file, line, '$["$schema"]', reason))
        type_name = type_name or claimed_type
    if type_name is None:
        if problems:
            return problems
        known = ", ".join(validation.type_names())
        reason = f'no "$schema" names the type of this document: pass --type TYPE ({known})'
        return [_UsageProblem(file, line, "$", reason)]
    # The fast path clears valid documents; the reference explains the others.
    if not validation.is_valid(document, type_name):
        errors = validation.validate(document, type_name)
        problems += [Problem(file, line, e.path, e.reason) for e in errors]
        if not errors:  # the two validators disagree: report the fast path's finding
            first = next(validation.fast_validator(type_name).iter_errors(document))
            path = validation.json_path(first.instance_path)
            problems.append(Problem(file, line, path, f"{first.message} (fast validator only)"))
    return problems
