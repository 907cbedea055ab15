"""Files only their owner reads: the data directory 0700, every file in it 0600 (SQLite's -wal
and -shm included, the episodes' as the messages'), whatever the umask, and a start with a
data directory others can read says so."""

import os
import stat
import subprocess
import sys
from pathlib import Path

from himga.data.conversation import Message, Session
from himga.service import RemoteEpisodes, RemoteMemory, create_server
from himga.storage.files import create_private, exposed_to_others, make_private_dir, write_private
from tests.episodes.helpers import episode

HANG_SECONDS = 60


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_helpers_make_private_directories_and_files(tmp_path: Path) -> None:
    old = os.umask(0)  # the widest umask: the modes must not depend on it
    try:
        make_private_dir(tmp_path / "a" / "b")
        create_private(tmp_path / "a" / "b" / "db")
        write_private(tmp_path / "a" / "c" / "record", b"x")
    finally:
        os.umask(old)
    assert mode(tmp_path / "a") == mode(tmp_path / "a" / "b") == 0o700
    assert mode(tmp_path / "a" / "b" / "db") == mode(tmp_path / "a" / "c" / "record") == 0o600
    assert (tmp_path / "a" / "c" / "record").read_bytes() == b"x"
    assert not exposed_to_others(tmp_path / "a")


def test_a_server_writes_nothing_others_can_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = os.umask(0o022)  # the usual umask, which made files 0644 before
    try:
        server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=data)
        try:
            with RemoteMemory(f"127.0.0.1:{port}", "private") as memory:
                memory.ingest(Message(role="u", content="a secret"), Session(session_id="s"))
                made = sorted(p.name for p in data.rglob("*"))
                assert any(name.endswith("-wal") for name in made), made
                assert any(name.endswith("-shm") for name in made), made
                for path in [data, *data.rglob("*")]:
                    want = 0o700 if path.is_dir() else 0o600
                    assert mode(path) == want, f"{path.relative_to(tmp_path)}: {mode(path):o}"
        finally:
            server.stop(None).wait()
    finally:
        os.umask(old)


def test_episode_files_are_private_even_under_the_widest_umask(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = os.umask(0)  # every bit the process does not narrow itself would be open to all
    try:
        server, port = create_server("127.0.0.1:0", data_dir=data)
        try:
            with RemoteEpisodes(f"127.0.0.1:{port}", "private") as episodes:
                episodes.record(episode(1))
                with RemoteMemory(f"127.0.0.1:{port}", "private") as memory:
                    memory.ingest(Message(role="u", content="a secret"), Session(session_id="s"))
                made = sorted(p.relative_to(data).as_posix() for p in data.rglob("*"))
                assert "episodes" in made
                for suffix in (".sqlite3", ".sqlite3-wal", ".sqlite3-shm"):
                    assert any(n.startswith("episodes/") and n.endswith(suffix) for n in made)
                for path in [data, *data.rglob("*")]:
                    want = 0o700 if path.is_dir() else 0o600
                    assert mode(path) == want, f"{path.relative_to(tmp_path)}: {mode(path):o}"
        finally:
            server.stop(None).wait()
    finally:
        os.umask(old)


def test_serve_warns_of_a_data_directory_others_can_read(tmp_path: Path) -> None:
    data = tmp_path / "open"
    data.mkdir()
    data.chmod(0o755)
    process = subprocess.Popen(
        [sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "null",
         "--data-dir", str(data)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    said = []
    for line in process.stderr:
        said.append(line)
        if "listening on" in line:
            break
    process.terminate()
    assert process.wait(HANG_SECONDS) == 0
    assert any("can be read by other users (mode 0755): chmod 700" in line for line in said), said


def test_serve_makes_a_new_data_directory_private(tmp_path: Path) -> None:
    data = tmp_path / "new" / "data"
    process = subprocess.Popen(
        [sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "null",
         "--data-dir", str(data)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    said = []
    for line in process.stderr:
        said.append(line)
        if "listening on" in line:
            break
    process.terminate()
    assert process.wait(HANG_SECONDS) == 0
    assert mode(data) == mode(data.parent) == 0o700
    assert not any("other users" in line for line in said), said
