"""`himga import --locomo FILE` and `--longmemeval FILE`: a benchmark into a server or an
embedded store, each conversation into its own namespace, behind a progress bar; a file of the
wrong layout is refused naming its first bad line, and nothing is stored."""

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from himga.cli import main
from himga.data import load_dataset
from himga.memory.base import BaseMemory
from himga.memory.registry import DEFAULT_MEMORY
from himga.service import RemoteMemory, create_server

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOCOMO = FIXTURES / "locomo" / "locomo-mini.json"
LONGMEMEVAL = FIXTURES / "longmemeval" / "longmemeval-mini.json"


def held(memory: BaseMemory) -> list[tuple[str, str]]:
    """(session id, content) of every message the memory holds, in the order stored."""
    found, token = [], ""
    while True:
        page = memory.list(page_size=1000, page_token=token)
        found += [(stored.session_id, stored.content) for stored in page.messages]
        if not (token := page.next_page_token):
            return found


@contextmanager
def served(data_dir: Path) -> Iterator[str]:
    server, port = create_server("127.0.0.1:0", memory=DEFAULT_MEMORY, data_dir=data_dir)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)


def conversations(name: str, path: Path) -> dict[str, list[tuple[str, str]]]:
    return {
        sample.sample_id: [(s.session_id, m.content) for s in sample.sessions for m in s.messages]
        for sample in load_dataset(name, path)
    }


def test_locomo_into_a_server_one_namespace_a_conversation(
    memory_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import", "--target", memory_server, "--namespace", "bench", "--locomo", str(LOCOMO)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"import to {memory_server}" in err and "msg" in err  # the progress bar
    expected = conversations("locomo", LOCOMO)
    assert len(expected) > 1 and f"stored {sum(map(len, expected.values()))} messages in" in err
    for sample_id, messages in expected.items():
        with RemoteMemory(memory_server, f"bench-{sample_id}") as memory:
            assert held(memory) == messages


def test_longmemeval_into_an_embedded_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = ["import", "--data-dir", str(data), "--longmemeval", str(LONGMEMEVAL), "--no-progress"]
    assert main(argv) == 0
    expected = conversations("longmemeval", LONGMEMEVAL)
    assert len(expected) > 1
    with served(data) as target:  # what `himga serve --data-dir` serves
        for sample_id, messages in expected.items():
            with RemoteMemory(target, sample_id) as memory:
                assert held(memory) == messages


def _broken(tmp_path: Path) -> tuple[Path, int]:
    """The LoCoMo fixture, laid out one value a line, with the last conversation's second turn's
    text a number: the file, and the line of that text."""
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))
    samples[-1]["conversation"]["session_1"][1]["text"] = 5
    text = json.dumps(samples, indent=1)
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    return path, next(n for n, line in enumerate(lines, 1) if line.strip() == '"text": 5')


def test_a_file_of_the_wrong_layout_names_its_first_bad_line_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, line = _broken(tmp_path)
    data = tmp_path / "data"
    assert main(["import", "--data-dir", str(data), "--locomo", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}: [1].conversation.session_1[1].text: must be a string" in err
    assert "nothing stored" in err
    assert not data.exists()  # the first conversation, valid, was not stored either


def test_a_json_lines_file_into_an_embedded_store(tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    session = {"session_id": "s1", "messages": [{"role": "Ada", "content": "hi", "turn_id": "A"}]}
    dump.write_text(json.dumps(session) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    assert main(["import", "--data-dir", str(data), "--namespace", "n", str(dump)]) == 0
    with served(data) as target, RemoteMemory(target, "n") as memory:
        assert held(memory) == [("s1", "hi")]


def _locomo_with(tmp_path: Path, change: Callable[[list[Any]], object]) -> Path:
    """The LoCoMo fixture after `change(samples)`, one value a line."""
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))
    change(samples)
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(samples, indent=1), encoding="utf-8")
    return path


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip().rstrip(",") == text)


def _rename_second(samples: list[Any]) -> None:
    samples[1]["sample_id"] = "conv 30"


def test_a_sample_id_no_namespace_can_have_stores_nothing_in_a_server(
    memory_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _locomo_with(tmp_path, _rename_second)
    first = json.loads(path.read_text(encoding="utf-8"))[0]["sample_id"]
    argv = ["import", "--target", memory_server, "--namespace", "badid", "--locomo", str(path)]
    assert main([*argv, "--no-progress"]) == 1
    err = capsys.readouterr().err
    line = _line_of(path, '"sample_id": "conv 30"')
    assert f"{path}:{line}: [1].sample_id: 'conv 30' cannot name a namespace, which must be " in err
    assert "change it in the file (--namespace only puts a prefix" in err
    assert "nothing stored" in err
    with RemoteMemory(memory_server, f"badid-{first}") as memory:
        assert held(memory) == []  # the first sample, valid, was not stored either


def test_a_sample_id_no_namespace_can_have_makes_no_embedded_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _locomo_with(tmp_path, _rename_second)
    data = tmp_path / "data"
    assert main(["import", "--data-dir", str(data), "--no-progress", "--locomo", str(path)]) == 1
    assert "[1].sample_id: 'conv 30' cannot name a namespace" in capsys.readouterr().err
    assert not data.exists()


def test_a_prefix_that_makes_a_namespace_too_long_is_refused_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    prefix = "p" * 125  # a namespace itself, but not with "-mini-1" after it
    argv = ["import", "--data-dir", str(data), "--namespace", prefix, "--locomo", str(LOCOMO)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"[0].sample_id: 'mini-1' after --namespace '{prefix}' makes the namespace" in err
    assert "a shorter --namespace, or none, fixes it; nothing stored" in err
    assert not data.exists()


@pytest.mark.parametrize("benchmark", ["--locomo", "--longmemeval", None])
def test_a_namespace_option_no_namespace_can_have_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], benchmark: str | None
) -> None:
    data = tmp_path / "data"
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"session_id": "s", "messages": []}) + "\n", encoding="utf-8")
    what = [benchmark, str(LOCOMO if benchmark == "--locomo" else LONGMEMEVAL)]
    argv = ["import", "--data-dir", str(data), "--namespace", "agent 2"]
    assert main([*argv, *(what if benchmark else [str(dump)])]) == 2
    assert "himga import: --namespace 'agent 2': must be 1 to 128" in capsys.readouterr().err
    assert not data.exists()


def test_a_file_nested_too_deeply_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    data = tmp_path / "data"
    assert main(["import", "--data-dir", str(data), "--locomo", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"himga import: {path}: its arrays and objects are nested too deeply" in err
    assert "Traceback" not in err and not data.exists()


def _repeat_sample(samples: list[Any]) -> None:
    samples[1]["sample_id"] = samples[0]["sample_id"]


def _repeat_turn(samples: list[Any]) -> None:
    turns = samples[0]["conversation"]["session_1"]
    turns[1]["dia_id"] = turns[0]["dia_id"]


@pytest.mark.parametrize(
    ("change", "place"),
    [
        (_repeat_sample, "[1].sample_id: 'mini-1' is the sample_id of [0] too"),
        (_repeat_turn, "[0].conversation.session_1[1].dia_id: 'D1:1' is the dia_id of "),
    ],
)
def test_a_sample_or_turn_id_used_twice_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[list[Any]], object],
    place: str,
) -> None:
    path = _locomo_with(tmp_path, change)
    data = tmp_path / "data"
    assert main(["import", "--data-dir", str(data), "--no-progress", "--locomo", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:" in err and place in err and "nothing stored" in err
    assert not data.exists()


def test_a_session_repeated_in_a_haystack_is_counted_once(
    memory_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LongMemEval repeats a session in a few histories: its turns have the same ids twice, the
    later copy replaces the earlier, and the count is of what the namespace holds."""
    questions = json.loads(LONGMEMEVAL.read_text(encoding="utf-8"))
    first = questions[0]
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        first[key].append(first[key][0])
    first["haystack_dates"][-1] = "2023/05/30 (Tue) 09:00"
    path = tmp_path / "repeated.json"
    path.write_text(json.dumps(questions), encoding="utf-8")
    repeated = len(first["haystack_sessions"][0])
    argv = ["import", "--target", memory_server, "--namespace", "rep", "--no-progress"]
    assert main([*argv, "--longmemeval", str(path)]) == 0
    err = capsys.readouterr().err
    with RemoteMemory(memory_server, f"rep-{first['question_id']}") as memory:
        kept = len(held(memory))
    with RemoteMemory(memory_server, f"rep-{questions[1]['question_id']}") as memory:
        kept += len(held(memory))
    session = first["haystack_session_ids"][0]
    assert (
        f"stored {kept} messages ({kept + repeated} given; the later of two with one id is " in err
    )
    assert f"kept: '{session}_1'" in err


def test_a_json_lines_file_counts_what_the_namespace_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "dump.jsonl"
    messages = [{"role": "Ada", "content": text, "turn_id": "A"} for text in ("hi", "hello")]
    dump.write_text(json.dumps({"session_id": "s1", "messages": messages}) + "\n", "utf-8")
    data = tmp_path / "data"
    assert main(["import", "--data-dir", str(data), "--namespace", "n", str(dump)]) == 0
    assert "stored 1 message (2 given; the later of two with one id is kept: 'A') in n" in (
        capsys.readouterr().err
    )
    with served(data) as target, RemoteMemory(target, "n") as memory:
        assert held(memory) == [("s1", "hello")]
