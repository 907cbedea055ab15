"""`himga serve` as a real process: it says where it listens, answers health checks, and on
SIGTERM or SIGINT lets in-flight calls finish before exiting 0."""

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from tests.server_process import start_listening

GATED_SERVE = Path(__file__).with_name("gated_serve.py")
# Protection against a hang only (a broken shutdown would otherwise block the suite forever);
# no test asserts how long anything takes.
HANG_SECONDS = 60


def wait_for_log(process: subprocess.Popen[str], text: str) -> None:
    """Read the process's log until a line holding `text`."""
    assert process.stderr is not None
    for line in process.stderr:
        if text in line:
            return
    raise AssertionError(f"the process ended without logging {text!r}")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Server processes a test started; any still running at the end are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_health_and_exits_0_on_a_signal(
    processes: list[subprocess.Popen[str]], tmp_path: Path, stop_signal: signal.Signals
) -> None:
    command = [sys.executable, "-m", "himga", "serve", "--host", "127.0.0.1", "--port", "0"]
    process, target = start_listening(
        [*command, "--memory", "null", "--data-dir", str(tmp_path / "d")]
    )
    processes.append(process)
    with grpc.insecure_channel(target) as channel:
        response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert response.status == health_pb2.HealthCheckResponse.SERVING
    process.send_signal(stop_signal)
    assert process.wait(HANG_SECONDS) == 0
    assert (tmp_path / "d").is_dir()


def test_sigterm_lets_the_call_in_flight_finish(
    processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    process, target = start_listening(
        [sys.executable, str(GATED_SERVE), "--port", "0", "--memory", "gated"]
    )
    processes.append(process)
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        stub.Ingest(  # a Retrieve reads only a namespace that exists
            pb.IngestRequest(
                namespace="n",
                message=pb.Message(role="u", content="x"),
                session=pb.Session(session_id="s"),
            )
        )
        call = stub.Retrieve.future(pb.RetrieveRequest(namespace="n", query=str(tmp_path)))
        deadline = time.monotonic() + HANG_SECONDS
        while not (tmp_path / "started").exists():
            assert time.monotonic() < deadline, "the call never reached the memory"
            time.sleep(0.01)
        process.send_signal(signal.SIGTERM)
        wait_for_log(process, "stopping:")  # logged once the server is stopping
        assert not call.done()
        (tmp_path / "release").touch()
        assert call.result(timeout=HANG_SECONDS).context == "released"
    assert process.wait(HANG_SECONDS) == 0


def test_serve_refuses_a_port_in_use(processes: list[subprocess.Popen[str]]) -> None:
    command = [sys.executable, "-m", "himga", "serve", "--memory", "null", "--port"]
    first, target = start_listening([*command, "0"])
    processes.append(first)
    port = target.rsplit(":", 1)[1]
    second = subprocess.run(
        [*command, port], capture_output=True, text=True, check=False, timeout=HANG_SECONDS
    )
    assert second.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in second.stderr


def test_serve_refuses_an_http_port_in_use() -> None:
    command = [sys.executable, "-m", "himga", "serve", "--memory", "null", "--port", "0"]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        second = subprocess.run(
            [*command, "--http-port", str(port)],
            capture_output=True,
            text=True,
            check=False,
            timeout=HANG_SECONDS,
        )
    assert second.returncode == 1
    assert f"cannot serve HTTP on 127.0.0.1:{port}" in second.stderr
    assert "Traceback" not in second.stderr


def serve_refused(*options: str) -> subprocess.CompletedProcess[str]:
    """`himga serve OPTIONS` on a free port, run to its end (it must end: nothing keeps it)."""
    command = [sys.executable, "-m", "himga", "serve", "--memory", "null", "--port", "0"]
    return subprocess.run(
        [*command, *options], capture_output=True, text=True, check=False, timeout=HANG_SECONDS
    )


def test_serve_refuses_a_metrics_port_in_use_in_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = serve_refused("--metrics-port", str(port))
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr and "listening on" not in refused.stderr
    (said,) = refused.stderr.strip().splitlines()
    assert f"cannot serve metrics on 127.0.0.1:{port} (--metrics-host, --metrics-port)" in said
    assert "give a free port" in said


def test_serve_refuses_a_port_in_use_and_stops_its_metrics(
    processes: list[subprocess.Popen[str]],
) -> None:
    command = [sys.executable, "-m", "himga", "serve", "--memory", "null", "--port"]
    first, target = start_listening([*command, "0"])
    processes.append(first)
    port = target.rsplit(":", 1)[1]
    refused = serve_refused("--port", port, "--metrics-port", "0")  # the metrics start first
    assert refused.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port} (--host, --port)" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("place", "said"),
    [
        ("a-file/sub", "cannot make it: Not a directory"),
        ("a-file", "is not a directory"),
        ("/proc/himga-nope", "cannot make it"),
    ],
)
def test_serve_refuses_a_data_dir_it_cannot_use_in_one_line(
    tmp_path: Path, place: str, said: str
) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    data_dir = place if place.startswith("/") else str(tmp_path / place)
    if place.startswith("/proc") and not Path("/proc").is_dir():
        pytest.skip("no /proc here")
    refused = serve_refused("--data-dir", data_dir)
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr and "listening on" not in refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert f"--data-dir {data_dir}" in line and said in line and "give a directory" in line
