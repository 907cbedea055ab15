"""The HTTP port answers only the Host headers it is reached by (himga.http.hosts): a page that
rebinds its own name to 127.0.0.1 (DNS rebinding) sends `Host: evil.example:PORT` and is
refused 421, with Connect's error JSON saying what to fix and a line in the log; the loopback
names and the host the port is bound to are answered, the memory browser among them."""

import http.client
import io
import json
import logging
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from himga.core import build_core
from himga.http.app import HttpApp
from himga.http.hosts import AllowedHosts, listed_host, split_host
from himga.service.episode_stores import EpisodeStores
from himga.service.namespaces import Namespaces
from tests.http.conftest import MEMORY, Served
from tests.ports import free_port
from tests.server_process import start_listening

LIST = MEMORY + "ListNamespaces"


def ask(
    served: Served, path: str, host: str, method: str = "POST", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """`path` asked of the served HTTP port with `Host: host`."""
    connection = http.client.HTTPConnection("127.0.0.1", served.server.http_port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True)
        connection.putheader("Host", host)
        body = b"{}" if method == "POST" else b""
        sent = {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


@pytest.mark.parametrize("path", [LIST, MEMORY + "ListMessages", "/", "/openapi.json"])
def test_a_foreign_host_is_refused_as_misdirected(
    served: Served, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    port = served.server.http_port
    method = "POST" if path.startswith(MEMORY) else "GET"
    with caplog.at_level(logging.WARNING, logger="himga.refusals"):
        status, headers, raw = ask(
            served, path, f"evil.example:{port}", method, Origin=f"http://evil.example:{port}"
        )
    assert status == 421, raw
    assert headers["content-type"] == "application/json"
    error = json.loads(raw)
    assert error["code"] == "permission_denied"
    assert f"'evil.example:{port}'" in error["message"]
    assert "localhost, 127.0.0.1, [::1]" in error["message"]  # what to call it by instead
    logged = [r.getMessage() for r in caplog.records if "(host)" in r.getMessage()]
    assert len(logged) == 1 and f"evil.example:{port}" in logged[0] and path in logged[0]


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.0.0.1:{port}",
        "localhost",
        "localhost:{port}",
        "LocalHost:1234",
        "[::1]:{port}",
        "[::1]",
        "127.0.0.5:80",
    ],
)
def test_the_loopback_names_are_answered_on_any_port(served: Served, host: str) -> None:
    status, _, raw = ask(served, LIST, host.format(port=served.server.http_port))
    assert status == 200, raw
    assert json.loads(raw) == {"namespaces": [], "next_page_token": ""}


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}"])
def test_the_memory_browser_is_served_by_loopback_names(served: Served, host: str) -> None:
    named = host.format(port=served.server.http_port)
    for path in ("/", "/app.js"):
        status, _, body = ask(served, path, named, "GET")
        assert status == 200 and body, path
    status, _, raw = ask(served, LIST, named, Origin=f"http://{named}")  # the page's own calls
    assert status == 200, raw


@pytest.mark.parametrize(
    "host", ["", "evil.example", "127.0.0.1.evil.example:80", "localhost.evil.example", "a b"]
)
def test_a_name_that_only_looks_like_loopback_is_refused(served: Served, host: str) -> None:
    assert ask(served, LIST, host)[0] == 421


def test_an_http_1_0_request_without_a_host_is_answered(served: Served) -> None:
    # No browser sends one (HTTP/1.1 requires it): an HTTP/1.0 tool, which could call anyway.
    with socket.create_connection(("127.0.0.1", served.server.http_port or 0)) as connection:
        connection.sendall(
            f"POST {LIST} HTTP/1.0\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\n\r\n{}".encode()
        )
        answer = connection.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 200") or answer.startswith(b"HTTP/1.0 200"), answer


def test_split_host() -> None:
    assert split_host("LOCALHOST:8080") == ("localhost", "8080")
    assert split_host("[::1]:80") == ("[::1]", "80")
    assert split_host("[::1]") == ("[::1]", None)
    assert split_host("memory.example") == ("memory.example", None)
    assert split_host("::1") is None  # an IPv6 address goes in brackets
    assert split_host("a:b") is None


def test_the_bound_host_and_listed_hosts_are_allowed() -> None:
    hosts = AllowedHosts("127.0.0.2", ["memory.example", "proxy.example:8443"])
    assert not hosts.any
    for allowed in ("127.0.0.2:50052", "memory.example", "MEMORY.example:1", "proxy.example:8443"):
        assert hosts.allows(allowed), allowed
    for refused in ("evil.example", "proxy.example:8444", "proxy.example", "10.1.2.4"):
        assert not hosts.allows(refused), refused
    assert hosts.allows("localhost:9")  # the loopback names stay
    assert AllowedHosts("::1").allows("[::1]:1") and AllowedHosts("[::1]").bound == "[::1]"
    assert AllowedHosts("localhost").named() == "localhost, 127.0.0.1, [::1]"
    assert AllowedHosts("127.0.0.2").named() == "localhost, 127.0.0.1, [::1], 127.0.0.2"


def test_a_port_others_can_reach_answers_any_host() -> None:
    # Such a port needs tokens (`himga serve`), which a rebound page does not have, and its
    # clients call it by any name or address the machine has: a listed host restricts nothing.
    for bound in ("0.0.0.0", "::", "10.1.2.3", "memory.example"):
        for listed in ([], ["memory.example"]):
            assert AllowedHosts(bound, listed).any, (bound, listed)
            assert AllowedHosts(bound, listed).allows("192.168.1.5:8080")
    assert AllowedHosts("127.0.0.1", ["*"]).allows("evil.example")
    assert not AllowedHosts("127.0.0.1").any


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("Proxy.Example.", "proxy.example"),
        ("memory.example:443", "memory.example:443"),
        ("fe80::1", "[fe80::1]"),
        ("[FE80::1]:8080", "[fe80::1]:8080"),
        ("*", "*"),
    ],
)
def test_a_listed_host_is_kept_as_a_host_header_names_it(given: str, kept: str) -> None:
    assert listed_host(given) == kept
    if kept != "*":
        assert AllowedHosts("127.0.0.1", [given]).allows(kept.upper())


@pytest.mark.parametrize("given", ["", "a b", "memory.example:0", "memory.example:99999", "x:y"])
def test_a_listed_host_that_is_none_is_refused_saying_what_it_must_be(given: str) -> None:
    with pytest.raises(ValueError, match="is no host: give a name or address"):
        listed_host(given)


@pytest.fixture(scope="module")
def core() -> Iterator[Any]:
    namespaces = Namespaces("keyword", None)
    yield build_core(namespaces, EpisodeStores(namespaces))
    namespaces.close()


def status_of(app: HttpApp, host: str, path: str = "/") -> int:
    """The status `app` answers a GET of `path` with `Host: host`."""
    started: list[str] = []
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "HTTP_HOST": host,
        "REMOTE_ADDR": "10.9.9.9",
        "REMOTE_PORT": "5000",
        "wsgi.input": io.BytesIO(b""),
    }
    b"".join(app(environ, lambda status, headers, *_: started.append(status)))
    return int(started[0].split()[0])


def test_an_app_bound_to_its_host_answers_that_host_and_the_hosts_listed(core: Any) -> None:
    listed = HttpApp(core, bound_host="127.0.0.2", allowed_hosts=["memory.example"])
    assert status_of(listed, "127.0.0.2:8080") == 200
    assert status_of(listed, "memory.example") == 200
    assert status_of(listed, "localhost:8080") == 200
    assert status_of(listed, "evil.example:8080") == 421
    assert status_of(HttpApp(core, bound_host="10.1.2.3"), "evil.example:8080") == 200
    assert status_of(HttpApp(core), "evil.example:8080") == 421  # the default: loopback


def test_serve_answers_the_hosts_its_flag_names() -> None:
    # Behind a reverse proxy that passes its own Host on: `himga serve --allowed-host NAME`.
    http_port = free_port()
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "null"]
    process, _ = start_listening(
        [*command, "--http-port", str(http_port), "--allowed-host", "memory.example"]
    )
    try:
        for host, status in (("memory.example", 200), ("memory.example:443", 200), ("evil", 421)):
            connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
            try:
                connection.putrequest("POST", LIST, skip_host=True)
                connection.putheader("Host", host)
                connection.putheader("Content-Type", "application/json")
                connection.putheader("Content-Length", "2")
                connection.endheaders(b"{}")
                assert connection.getresponse().status == status, host
            finally:
                connection.close()
    finally:
        process.terminate()
        process.wait(60)


def test_a_grpc_web_call_of_a_foreign_host_is_refused_in_grpc_web(core: Any) -> None:
    started: list[tuple[str, list[tuple[str, str]]]] = []
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": LIST,
        "CONTENT_TYPE": "application/grpc-web+proto",
        "HTTP_HOST": "evil.example:8080",
        "REMOTE_ADDR": "10.9.9.9",
        "REMOTE_PORT": "5000",
        "wsgi.input": io.BytesIO(b"\0\0\0\0\0"),
    }
    body = b"".join(HttpApp(core)(environ, lambda *answer: started.append(answer[:2])))
    status, found = started[0][0], dict(started[0][1])
    assert status.startswith("200") and found["grpc-status"] == "7"  # PERMISSION_DENIED
    assert "evil.example:8080" in found["grpc-message"] and body[0] == 0x80  # a trailers frame
