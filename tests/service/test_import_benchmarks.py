"""`himga import --locomo FILE` and `--longmemeval FILE`: a benchmark into a server or an
embedded store, each conversation into its own namespace, behind a progress bar; a file of the
wrong layout is refused naming its first bad line, and nothing is stored."""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
