"""`himga auth` manages the auth file; `himga serve --auth-file` uses it, reads it again on
SIGHUP without dropping calls, and without one serves loopback only unless told `--insecure`."""

import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.cli import main
from himga.service import tokens
from tests.server_process import start_listening
from tests.service.test_serve import HANG_SECONDS, wait_for_log

SERVE = [sys.executable, "-m", "himga", "serve", "--host", "127.0.0.1", "--port", "0"]


def new_token(auth_file: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["auth", "new-token", "--auth-file", str(auth_file), *args]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("himga.")
    return token


def test_new_token_list_and_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    auth_file = tmp_path / "secrets" / "auth.json"
    first = new_token(auth_file, capsys, "--namespace", "agent-*", "--rights", "read,write")
    second = new_token(auth_file, capsys, "--namespace", "*", "--rights", "admin")
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(auth_file.parent.stat().st_mode) == 0o700
    assert main(["auth", "list", "--auth-file", str(auth_file)]) == 0
    listed = capsys.readouterr().out
    first_id, second_id = first.split(".")[1], second.split(".")[1]
    assert first_id in listed and second_id in listed and "agent-*" in listed
    assert first.split(".")[2] not in listed
    assert main(["auth", "revoke", "--auth-file", str(auth_file), first_id]) == 0
    assert main(["auth", "list", "--auth-file", str(auth_file)]) == 0
    listed = capsys.readouterr().out
    assert first_id not in listed and second_id in listed
    assert main(["auth", "revoke", "--auth-file", str(auth_file), first_id]) == 2


def test_concurrent_new_tokens_are_all_kept(tmp_path: Path) -> None:
    auth_file = tmp_path / "auth.json"
    command = [sys.executable, "-m", "himga", "auth", "new-token", "--auth-file", str(auth_file)]
    started = [
        subprocess.Popen(
            [*command, "--namespace", f"n{number}", "--rights", "read"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for number in range(6)
    ]
    made = [process.communicate(timeout=HANG_SECONDS)[0].strip() for process in started]
    assert all(process.returncode == 0 for process in started)
    held = tokens.load(auth_file)
    assert {token.split(".")[1] for token in made} == set(held.grants)
    assert all(held.find(token) is not None for token in made)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--namespace", "bad name", "--rights", "read"], "namespace pattern 'bad name'"),
        (["--namespace", "a*b", "--rights", "read"], "namespace pattern 'a*b'"),
        (["--namespace", "a", "--rights", "read,fly"], "rights must be"),
    ],
)
def test_new_token_refuses_bad_patterns_and_rights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    assert main(["auth", "new-token", "--auth-file", str(tmp_path / "a.json"), *args]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "a.json").exists()


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sighup_reloads_the_file_without_dropping_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], processes: list[subprocess.Popen[str]]
) -> None:
    auth_file = tmp_path / "auth.json"
    token = new_token(auth_file, capsys, "--namespace", "*", "--rights", "read,write")
    process, target = start_listening(
        [*SERVE, "--memory", "keyword", "--auth-file", str(auth_file)]
    )
    processes.append(process)
    metadata = [("authorization", f"Bearer {token}")]
    request = pb.RetrieveRequest(namespace="n", query="x")
    failures: list[BaseException] = []
    calls = 0
    stop = threading.Event()

    def keep_calling(stub: memory_pb2_grpc.MemoryServiceStub) -> None:
        nonlocal calls
        while not stop.is_set():
            try:
                stub.Retrieve(request, metadata=metadata, timeout=HANG_SECONDS)
                calls += 1
            except grpc.RpcError as error:
                failures.append(error)
                return

    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        caller = threading.Thread(target=keep_calling, args=(stub,))
        caller.start()
        # Another token added: the running token keeps working through each reload.
        new_token(auth_file, capsys, "--namespace", "x", "--rights", "read")
        for _ in range(3):
            process.send_signal(signal.SIGHUP)
            wait_for_log(process, "auth file reloaded: 2 tokens")
        stop.set()
        caller.join()
        assert failures == [] and calls > 0
        assert main(["auth", "revoke", "--auth-file", str(auth_file), token.split(".")[1]]) == 0
        process.send_signal(signal.SIGHUP)
        wait_for_log(process, "auth file reloaded: 1 tokens")
        with pytest.raises(grpc.RpcError) as caught:
            stub.Retrieve(request, metadata=metadata, timeout=HANG_SECONDS)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    process.send_signal(signal.SIGTERM)
    assert process.wait(HANG_SECONDS) == 0


def test_a_broken_file_at_reload_keeps_the_last_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], processes: list[subprocess.Popen[str]]
) -> None:
    auth_file = tmp_path / "auth.json"
    token = new_token(auth_file, capsys, "--namespace", "*", "--rights", "read")
    process, target = start_listening([*SERVE, "--memory", "null", "--auth-file", str(auth_file)])
    processes.append(process)
    auth_file.write_text("{not json", encoding="utf-8")
    process.send_signal(signal.SIGHUP)
    wait_for_log(process, "auth file not reloaded, keeping its last tokens")
    with grpc.insecure_channel(target) as channel:
        memory_pb2_grpc.MemoryServiceStub(channel).Retrieve(
            pb.RetrieveRequest(namespace="n"),
            metadata=[("authorization", f"Bearer {token}")],
            timeout=HANG_SECONDS,
        )


def test_without_an_auth_file_only_loopback_is_served() -> None:
    refused = subprocess.run(
        [*SERVE[:-4], "--host", "0.0.0.0", "--port", "0", "--memory", "null"],
        capture_output=True,
        text=True,
        check=False,
        timeout=HANG_SECONDS,
    )
    assert refused.returncode == 2
    assert "pass --auth-file FILE" in refused.stderr and "--insecure" in refused.stderr


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.5", True), ("localhost", True), ("::1", True),
     ("[::1]", True), ("0.0.0.0", False), ("::", False), ("10.0.0.1", False),
     ("memory.example", False)],
)  # fmt: skip
def test_loopback_is_told_by_one_rule_whatever_the_form(host: str, loopback: bool) -> None:
    from himga.cli.serve import _loopback

    assert _loopback(host) is loopback


def test_an_allowed_host_that_is_none_stops_the_start() -> None:
    refused = subprocess.run(
        [*SERVE[:-4], "--port", "0", "--memory", "null", "--allowed-host", "a b"],
        capture_output=True,
        text=True,
        check=False,
        timeout=HANG_SECONDS,
    )
    assert refused.returncode == 2
    assert "--allowed-host 'a b' is no host: give a name or address" in refused.stderr


def test_without_an_auth_file_the_log_says_so(processes: list[subprocess.Popen[str]]) -> None:
    process = subprocess.Popen([*SERVE, "--memory", "null"], stderr=subprocess.PIPE, text=True)
    processes.append(process)
    assert process.stderr is not None
    said = []
    for line in process.stderr:
        said.append(line)
        if "listening on" in line:
            break
    process.send_signal(signal.SIGTERM)
    assert process.wait(HANG_SECONDS) == 0
    assert any("no --auth-file" in line and "loopback only" in line for line in said), said


def test_an_unreadable_auth_file_stops_the_start(tmp_path: Path) -> None:
    refused = subprocess.run(
        [*SERVE, "--memory", "null", "--auth-file", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        check=False,
        timeout=HANG_SECONDS,
    )
    assert refused.returncode == 2
    assert "missing.json: cannot read" in refused.stderr
