"""`himga serve` acts on its signals in the main thread, holding nothing: a signal that comes
while it is busy with the last one (a burst of SIGHUPs, a SIGTERM right as it starts) neither
deadlocks it nor is lost (himga.cli._signals)."""

import os
import resource
import signal
import sys
import time
from pathlib import Path

import pytest

from himga.cli import main
from himga.cli._signals import Signals
from tests.server_process import Watched

SERVE = [sys.executable, "-m", "himga", "serve", "--host", "127.0.0.1", "--port", "0"]


def test_a_signal_is_kept_until_asked_for_and_others_are_not_returned() -> None:
    before = signal.getsignal(signal.SIGUSR1)
    with Signals([signal.SIGUSR1, signal.SIGUSR2]) as signals:
        assert signals.next(timeout=0) is None
        os.kill(os.getpid(), signal.SIGUSR2)
        os.kill(os.getpid(), signal.SIGUSR1)
        assert signals.next(timeout=0) == signal.SIGUSR2
        assert signals.next(timeout=0) == signal.SIGUSR1
        assert signals.next(timeout=0) is None
    assert signal.getsignal(signal.SIGUSR1) == before


def test_signals_are_read_when_the_process_has_more_than_a_thousand_files_open() -> None:
    """A server with a thousand connections open has file descriptors past select's 1024: its
    signal pipe is one of them, and a signal must still be read."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1100
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"this process may open at most {hard} files (RLIMIT_NOFILE)")
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    opened: list[int] = []
    try:
        while not opened or opened[-1] < 1030:
            opened.append(os.open(os.devnull, os.O_RDONLY))
        with Signals([signal.SIGUSR1]) as signals:
            assert signals.next(timeout=0) is None
            os.kill(os.getpid(), signal.SIGUSR1)
            assert signals.next(timeout=5) == signal.SIGUSR1
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_signal_while_the_last_ones_are_handled_does_not_deadlock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGHUPs sent back to back, many while a reload runs (a handler that took the reload's
    lock could deadlock under itself), then SIGTERM: the server reloads and exits 0."""
    auth_file = tmp_path / "auth.json"
    new_token = ["auth", "new-token", "--auth-file", str(auth_file), "--namespace", "*"]
    assert main([*new_token, "--rights", "read"]) == 0
    capsys.readouterr()
    server = Watched([*SERVE, "--memory", "null", "--auth-file", str(auth_file)])
    try:
        server.wait_for("listening on")
        for _ in range(300):  # over about a second: many land while a reload runs
            server.process.send_signal(signal.SIGHUP)
            time.sleep(0.003)
        server.wait_for("auth file reloaded: 1 tokens")
        assert server.stop(signal.SIGTERM) == 0, server.log
        assert "SIGTERM received" in server.log
    finally:
        server.kill()


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_right_as_it_listens_stops_it(stop_signal: signal.Signals) -> None:
    for _ in range(3):
        server = Watched([*SERVE, "--memory", "null"])
        try:
            server.wait_for("listening on")
            assert server.stop(stop_signal) == 0, server.log
            assert server.log.rstrip().endswith("stopped"), server.log
        finally:
            server.kill()
