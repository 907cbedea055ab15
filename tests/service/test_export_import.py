"""`himga export` and `himga import`: JSON Lines of Session documents that validate, and a round
trip that changes no byte, for every storing memory."""

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from himga import validation
from himga.cli import main
from himga.data import Message, Session, load_dataset
from himga.memory.filters import MessageFilter
from himga.service import RemoteMemory, create_server
from himga.storage.namespaces import NamespaceStores
from himga.storage.postgres import Database
from tests.memory.test_contract import NON_STORING
from tests.ports import free_port

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "locomo" / "locomo-mini.json"
STORING = ["sqlite", "keyword", "naive"]


def fill(memory: RemoteMemory) -> None:
    """A namespace that holds every kind of message: two conversations' sessions interleaved,
    own and session times, metadata, an id the server made, a correction and a delete."""
    items = [
        (message, session)
        for sample in load_dataset("locomo", FIXTURE)
        for session in sample.sessions
        for message in session.messages
    ]
    memory.store(items[::2])
    memory.store(items[1::2])
    timed = Session(session_id="s-timed", timestamp=datetime(2024, 2, 29, 23, 59, tzinfo=UTC))
    memory.store(
        [
            (Message(role="Ada", content="no id, no time of its own", metadata={"k": "v"}), timed),
            (
                Message(
                    role="Bo",
                    # JSON writes U+2028 and U+0085 as they are: a line holds them whole
                    content='王小明 said "hi"\n twice\u2028a line separator\u0085a next line',
                    turn_id="X:1",
                    timestamp=datetime(2024, 3, 1, 8, 0, 0, 250_000, tzinfo=UTC),
                    metadata={"user": "u1", "ключ": "значение"},
                ),
                timed,
            ),
        ]
    )
    memory.ingest(Message(role="Ada", content="a corrected first turn", turn_id="D1:1"), timed)
    memory.delete(filter=MessageFilter(session_ids=["session_10"]))


def export(target: str, namespace: str, memory: str, out: Path) -> bytes:
    code = main(
        ["export", "--target", target, "--namespace", namespace, "--memory", memory, "-o", str(out)]
    )
    assert code == 0
    return out.read_bytes()


@pytest.mark.parametrize("memory", STORING)
def test_export_then_import_then_export_gives_the_same_bytes(
    memory: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert memory not in NON_STORING
    server, port = create_server("127.0.0.1:0", memory=memory, data_dir=tmp_path / "data")
    target = f"127.0.0.1:{port}"
    try:
        with RemoteMemory(target, "original") as original:
            fill(original)
            held = [m.id for m in original.list(page_size=1000).messages]
        first = export(target, "original", memory, tmp_path / "first.jsonl")
        lines = first.decode("utf-8").removesuffix("\n").split("\n")
        assert sum(len(json.loads(line)["messages"]) for line in lines) == len(held) >= 10
        for line in lines:
            assert validation.validate(json.loads(line), "Session") == []
        assert main(["validate", str(tmp_path / "first.jsonl")]) == 0  # by each line's $schema
        code = main(
            ["import", "--target", target, "--namespace", "copy", str(tmp_path / "first.jsonl")]
        )
        assert code == 0
        assert export(target, "copy", memory, tmp_path / "second.jsonl") == first
        with RemoteMemory(target, "copy") as copy:
            assert [m.id for m in copy.list(page_size=1000).messages] == held
    finally:
        server.stop(None)
    capsys.readouterr()


def test_an_invalid_line_stores_nothing_and_names_the_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"session_id": "s1", "messages": [{"role": "Ada", "content": "kept?", "turn_id": "G"}]}
    bad = {"session_id": "s2", "messages": [{"role": "", "content": "no speaker"}]}
    dump = tmp_path / "dump.jsonl"
    deep = '{"session_id": "s3", "messages": ' + "[" * 100_000 + "]" * 100_000 + "}"
    dump.write_text(
        f"{json.dumps(good)}\n\n{json.dumps(bad)}\nnot json\n{deep}\n", encoding="utf-8"
    )
    server, port = create_server("127.0.0.1:0", memory="keyword")
    target = f"127.0.0.1:{port}"
    try:
        assert main(["import", "--target", target, "--namespace", "n", str(dump)]) == 1
        err = capsys.readouterr().err
        assert f"{dump}:3: $.messages[0].role: must not be empty" in err
        assert f"{dump}:4: $: not JSON" in err
        assert f"{dump}:5: $: its arrays and objects are nested too deeply to read" in err
        with RemoteMemory(target, "n") as memory:
            assert memory.list().messages == []
    finally:
        server.stop(None)


def test_export_writes_every_message_of_a_namespace_far_over_the_message_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pages of 1000 asked, each cut by the server to fit its limit: nothing skipped, nothing
    written twice, and a message too large for any answer ends the export naming it."""
    limit = 64 * 1024
    server, port = create_server(
        "127.0.0.1:0", memory="sqlite", data_dir=tmp_path / "data", max_message_bytes=limit
    )
    target = f"127.0.0.1:{port}"
    try:
        with RemoteMemory(target, "big") as memory:
            session = Session(session_id="s1")
            for start in range(0, 40, 5):  # 8 KB each: 5 to a batch stay under the limit
                memory.store(
                    [
                        (Message(role="Ada", content=f"note {n} " + "x" * 8000), session)
                        for n in range(start, start + 5)
                    ]
                )
        dump = export(target, "big", "sqlite", tmp_path / "big.jsonl").decode("utf-8")
        written = [m["content"] for line in dump.splitlines() for m in json.loads(line)["messages"]]
        assert [content.split()[1] for content in written] == [str(n) for n in range(40)]
        with RemoteMemory(target, "big") as memory:
            memory.ingest(Message(role="Ada", content="x" * (limit - 600), turn_id="huge"), session)
        code = main(["export", "--target", target, "--namespace", "big", "-o", str(tmp_path / "b")])
        assert code == 1
        assert "message 'huge' is" in capsys.readouterr().err
    finally:
        server.stop(None).wait()


def test_export_of_a_server_that_is_not_there_exits_2_and_keeps_the_last_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    dump = tmp_path / "dump.jsonl"
    dump.write_text("an earlier export\n", encoding="utf-8")
    code = main(["export", "--target", f"127.0.0.1:{port}", "--namespace", "n", "-o", str(dump)])
    assert code == 2
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith(f"himga export: 127.0.0.1:{port}: UNAVAILABLE: ")
    assert "debug_error_string" not in said
    assert dump.read_text(encoding="utf-8") == "an earlier export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["dump.jsonl"]  # no scratch file left


def test_an_export_file_is_private_to_its_owner(tmp_path: Path) -> None:
    server, port = create_server("127.0.0.1:0", memory="keyword")
    try:
        with RemoteMemory(f"127.0.0.1:{port}", "n") as memory:
            memory.ingest(
                Message(role="Ada", content="a secret", turn_id="T1"), Session(session_id="s")
            )
        written = export(f"127.0.0.1:{port}", "n", "keyword", tmp_path / "out" / "n.jsonl")
    finally:
        server.stop(None).wait()
    assert b"a secret" in written
    assert (tmp_path / "out" / "n.jsonl").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o700


def test_export_opens_a_data_directory_as_the_server_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--data-dir`: the same documents as through a server over that directory, read beside
    the running server; a namespace never written exports nothing and makes nothing."""
    data = tmp_path / "data"
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=data)
    target = f"127.0.0.1:{port}"
    try:
        with RemoteMemory(target, "original") as original:
            fill(original)
        wire = export(target, "original", "sqlite", tmp_path / "wire.jsonl")
        code = main(["export", "--data-dir", str(data), "--namespace", "original"])
        assert code == 0
        local = capsys.readouterr().out
        # The same documents (a metadata object's keys may come in another order off the wire).
        assert [json.loads(line) for line in local.removesuffix("\n").split("\n")] == [
            json.loads(line) for line in wire.decode("utf-8").removesuffix("\n").split("\n")
        ]
        before = sorted(data.rglob("*"))
        assert main(["export", "--data-dir", str(data), "--namespace", "never"]) == 0
        assert capsys.readouterr().out == ""
        assert sorted(data.rglob("*")) == before
    finally:
        server.stop(None).wait()


def test_export_opens_a_database_as_the_server_does(
    postgres: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = f"kept-{uuid.uuid4().hex}"
    with Database(postgres.url) as database:
        stores = NamespaceStores(database)
        try:
            with stores.messages(namespace) as opened:
                assert opened is not None
                opened.memory.ingest(Message(role="Ada", content="kept"), Session(session_id="s"))
        finally:
            stores.close()
    assert main(["export", "--database", postgres.url, "--namespace", namespace]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert [m["content"] for m in json.loads(line)["messages"]] == ["kept"]
    assert main(["export", "--database", postgres.url, "--namespace", f"never-{namespace}"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("what", ["does not exist", "is not a directory"])
def test_export_of_a_data_directory_that_is_none_says_so(
    what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "dta"  # a typo of "data"
    if what == "is not a directory":
        data.write_text("a file\n", encoding="utf-8")
    assert main(["export", "--data-dir", str(data), "--namespace", "n"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"himga export: --data-dir {data} {what}: give the directory a server keeps its "
        "namespaces in (its `himga serve --data-dir`)\n"
    )
