"""`himga validate`: output lines and exit codes for valid, invalid, malformed, empty and
missing files, JSON and JSON Lines, stdin; in-process and as `python -m himga`."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from himga.cli import build_parser, main

MESSAGE_ID = "https://himga.dev/schemas/v1/message.json"
GOOD = json.dumps({"role": "user", "content": "hi"})
BAD = json.dumps({"role": "", "content": "hi", "turnId": "D1:1"})
BAD_LINES = ["$.role: must not be empty", "$.turnId: is not a property of this type"]


def _run(args: list[str], stdin: str = "") -> tuple[int, list[str]]:
    """Runs the command in-process, returning its exit code and stdout lines."""
    parsed = build_parser().parse_args(["validate", *args])
    out = io.StringIO()
    code: int = parsed.run(parsed, stdin=io.StringIO(stdin), stdout=out)
    return code, out.getvalue().splitlines()


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_valid_json_file_exits_0_silently(tmp_path: Path) -> None:
    assert _run(["--type", "Message", _file(tmp_path, "m.json", GOOD)]) == (0, [])


def test_an_invalid_json_file_prints_every_problem_at_line_1(tmp_path: Path) -> None:
    name = _file(tmp_path, "m.json", BAD)
    code, lines = _run(["--type", "Message", name])
    assert code == 1
    assert len(lines) == 2
    for line, expected in zip(lines, BAD_LINES, strict=True):
        assert line.startswith(f"{name}:1: {expected}")


def test_json_lines_report_the_line_of_each_document(tmp_path: Path) -> None:
    name = _file(tmp_path, "m.jsonl", f"{GOOD}\n{BAD}\n\n{GOOD}\n{{oops\n")
    code, lines = _run(["--type", "Message", name])
    assert code == 1
    assert [line.split(": ")[0] for line in lines] == [f"{name}:2", f"{name}:2", f"{name}:5"]
    assert lines[2].startswith(f"{name}:5: $: malformed JSON")


def test_json_lines_are_recognised_without_the_jsonl_suffix(tmp_path: Path) -> None:
    name = _file(tmp_path, "m.txt", f"{GOOD}\n{BAD}\n")
    code, lines = _run(["--type", "Message", name])
    assert code == 1
    assert all(line.startswith(f"{name}:2: ") for line in lines)


def test_a_pretty_printed_json_file_is_one_document(tmp_path: Path) -> None:
    pretty = json.dumps({"role": "user", "content": ""}, indent=2)
    assert _run(["--type", "Message", _file(tmp_path, "m.json", pretty)]) == (0, [])


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"role": "user",', "malformed JSON"),
        ('{"role": "user", "content": NaN}', "malformed JSON"),
        ("{} x", "malformed JSON"),
        ("", "empty: no JSON document"),
        ("  \n", "empty: no JSON document"),
    ],
    ids=["truncated", "NaN", "trailing garbage", "empty", "blank"],
)
def test_malformed_and_empty_files_are_invalid(tmp_path: Path, text: str, reason: str) -> None:
    name = _file(tmp_path, "m.json", text)
    code, lines = _run(["--type", "Message", name])
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(f"{name}:1: $: {reason}")


def test_a_file_that_is_not_utf8_is_malformed_at_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(GOOD.encode() + b'\n{"role": "\xff", "content": ""}\n')
    code, lines = _run(["--type", "Message", str(path)])
    assert (code, len(lines)) == (1, 1)
    assert lines[0].startswith(f"{path}:2: $: malformed JSON: not UTF-8")


def test_unusual_characters_inside_strings_are_kept(tmp_path: Path) -> None:
    # U+FFFD is a character like any other; U+2028 does not end a JSON Lines line.
    first = json.dumps({"role": "u", "content": "\ufffd a\u2028b"}, ensure_ascii=False)
    name = _file(tmp_path, "m.jsonl", f"{first}\n{GOOD}\n")
    assert _run(["--type", "Message", name]) == (0, [])


def test_a_missing_file_exits_2_and_the_others_are_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _file(tmp_path, "bad.json", BAD)
    code, lines = _run(["--type", "Message", str(tmp_path / "nope.json"), bad])
    assert code == 2
    assert len(lines) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_directory_is_unreadable(tmp_path: Path) -> None:
    assert _run(["--type", "Message", str(tmp_path)])[0] == 2


def test_an_unknown_type_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(["--type", "Mesage", _file(tmp_path, "m.json", GOOD)]) == (2, [])
    assert "known types: ActionEntry" in capsys.readouterr().err


def test_without_type_the_documents_schema_picks_it(tmp_path: Path) -> None:
    good = json.dumps({"$schema": MESSAGE_ID, "role": "user", "content": ""})
    bad = json.dumps({"$schema": MESSAGE_ID, "role": ""})
    name = _file(tmp_path, "m.jsonl", f"{good}\n{bad}\n")
    code, lines = _run([name])
    assert code == 1
    assert lines == [f"{name}:2: $.content: is required", f"{name}:2: $.role: must not be empty"]


def test_without_type_or_schema_it_asks_for_type(tmp_path: Path) -> None:
    name = _file(tmp_path, "m.json", GOOD)
    code, lines = _run([name])
    assert code == 2
    assert len(lines) == 1
    assert lines[0].startswith(f"{name}:1: $: ")
    assert "--type" in lines[0]


def test_an_unknown_schema_is_reported(tmp_path: Path) -> None:
    name = _file(tmp_path, "m.json", json.dumps({"$schema": "urn:x", "role": "u", "content": ""}))
    code, lines = _run([name])
    assert code == 1
    assert lines[0].startswith(f'{name}:1: $["$schema"]: unknown schema')


def test_a_schema_that_contradicts_type_is_reported(tmp_path: Path) -> None:
    session_id = "https://himga.dev/schemas/v1/session.json"
    document = json.dumps({"$schema": session_id, "role": "u", "content": ""})
    code, lines = _run(["--type", "Message", _file(tmp_path, "m.json", document)])
    assert code == 1
    assert lines[0].endswith('$["$schema"]: names Session, but --type is Message')


def test_stdin_is_read_for_a_dash() -> None:
    code, lines = _run(["--type", "Message", "-"], stdin=f"{GOOD}\n{BAD}\n")
    assert code == 1
    assert lines[0].startswith("<stdin>:2: $.role")


def test_python_dash_m_himga_validate(tmp_path: Path) -> None:
    good = _file(tmp_path, "good.json", GOOD)
    ran = subprocess.run(
        [sys.executable, "-m", "himga", "validate", "--type", "Message", good, "-"],
        input=BAD,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stdout.splitlines()[0].startswith("<stdin>:1: $.role: must not be empty")
    assert "2 documents, 1 with problems" in ran.stderr


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as exited:
        main(["validate"])
    assert exited.value.code == 2
