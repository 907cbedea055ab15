"""A store whose file is damaged, or not a database at all: refused naming the file and what can
be done, by every SQLite store and by the commands that open them."""

from collections.abc import Callable
from pathlib import Path

import pytest

from himga.cli import main
from himga.data import Message, Session
from himga.episodes import SQLiteEpisodes
from himga.errors import DamagedStoreError
from himga.memory import SQLiteKeywordMemory
from himga.memory.hybrid_sqlite import HybridSQLiteMemory
from tests.episodes.helpers import episode

SESSION = Session(session_id="s1", date_str="3 March, 2023")


def _memory(kind: type[SQLiteKeywordMemory]) -> Callable[[Path], None]:
    def write_and_read(path: Path) -> None:
        with kind(path) as memory:
            memory.store(
                [
                    (
                        Message(
                            role="Ada", content=f"a long enough turn {i} " * 40, turn_id=f"T{i}"
                        ),
                        SESSION,
                    )
                    for i in range(200)
                ]
            )
            memory.list(page_size=1000)

    return write_and_read


def _episodes(path: Path) -> None:
    with SQLiteEpisodes(path) as store:
        store.record_many([episode(i, goal=f"a goal {i} " * 40) for i in range(200)])
        store.list()


STORES = {
    "sqlite": _memory(SQLiteKeywordMemory),
    "hybrid": _memory(HybridSQLiteMemory),
    "episodes": _episodes,
}


def _garbage(path: Path) -> None:
    path.write_bytes(b"not a database\n" * 100)


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:5000])


@pytest.mark.parametrize("damage", [_garbage, _truncated], ids=["garbage", "truncated"])
@pytest.mark.parametrize("store", STORES)
def test_a_damaged_store_is_refused_naming_its_file(
    tmp_path: Path, store: str, damage: Callable[[Path], None]
) -> None:
    path = tmp_path / "store.sqlite3"
    STORES[store](path)
    for leftover in tmp_path.glob("store.sqlite3-*"):  # the WAL's files, checkpointed on close
        leftover.unlink()
    damage(path)
    with pytest.raises(DamagedStoreError) as refused:
        STORES[store](path)
    told = str(refused.value)
    assert told.startswith(f"{path}: not a readable store (")
    assert "restore the file from a backup" in told and "move it away" in told


def test_export_names_the_damaged_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    lines = tmp_path / "said.jsonl"
    lines.write_text(
        '{"session_id": "s1", "messages": [{"role": "Ada", "content": "hi", "turn_id": "t1"}]}\n',
        encoding="utf-8",
    )
    assert (
        main(["import", "--namespace", "ns", "--data-dir", str(data), "--no-progress", str(lines)])
        == 0
    )
    (stored,) = data.glob("*/ns-*.sqlite3")
    _garbage(stored)
    capsys.readouterr()
    assert main(["export", "--namespace", "ns", "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"himga export: {stored}: not a readable store (file is not a database)")
    assert "Traceback" not in err and err.count("\n") == 1
