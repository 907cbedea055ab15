"""`load_dataset("locomo")` with no path: the published file, downloaded once into the cache
and checked against its SHA-256, from a local HTTP server started here (HIMGA_LOCOMO_URL)."""

import dataclasses
import hashlib
import http.server
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.data import DatasetError, load_dataset
from himga.data.download import PUBLISHED, cache_folder
from himga.data.locomo import load_locomo

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"
BODY = FIXTURE.read_bytes()


class _Server(http.server.ThreadingHTTPServer):
    requests: int = 0
    body: bytes = BODY


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self.server.requests += 1
        if self.path != "/locomo10.json":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mirror(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.delenv("HIMGA_LOCOMO_PATH", raising=False)
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HIMGA_LOCOMO_URL", f"http://127.0.0.1:{server.server_port}/locomo10.json")
    monkeypatch.setenv("HIMGA_LOCOMO_SHA256", hashlib.sha256(BODY).hexdigest())
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_the_file_is_downloaded_once_checked_and_kept_private(mirror: _Server) -> None:
    first = load_dataset("locomo")
    assert first == load_locomo(FIXTURE) and mirror.requests == 1
    kept = cache_folder() / PUBLISHED["locomo"].file
    assert kept.read_bytes() == BODY
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert load_dataset("locomo") == first and mirror.requests == 1  # read from the cache


def test_a_download_that_does_not_match_is_refused_and_not_kept(mirror: _Server) -> None:
    mirror.body = BODY + b"\n"  # one byte more: still a LoCoMo file, not the published one
    with pytest.raises(
        DatasetError, match=r"SHA-256 [0-9a-f]{64}, expected [0-9a-f]{64}; not kept"
    ):
        load_dataset("locomo")
    assert list(cache_folder().iterdir()) == []


def test_a_cached_file_that_changed_is_fetched_again(mirror: _Server) -> None:
    load_dataset("locomo")
    kept = cache_folder() / PUBLISHED["locomo"].file
    kept.write_bytes(b"[]")
    assert load_dataset("locomo") == load_locomo(FIXTURE) and mirror.requests == 2


def test_an_unreachable_file_says_where_it_looked(
    mirror: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{mirror.server_port}/gone.json"
    monkeypatch.setenv("HIMGA_LOCOMO_URL", url)
    with pytest.raises(DatasetError) as raised:
        load_dataset("locomo")
    said = str(raised.value)
    for place in ("HIMGA_LOCOMO_PATH", str(cache_folder() / "locomo10.json"), url, "404"):
        assert place in said
    assert list(cache_folder().iterdir()) == []


def test_without_a_checksum_nothing_is_downloaded(
    mirror: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HIMGA_LOCOMO_SHA256")
    monkeypatch.setitem(PUBLISHED, "locomo", dataclasses.replace(PUBLISHED["locomo"], sha256=None))
    with pytest.raises(DatasetError, match="HIMGA_LOCOMO_SHA256") as raised:
        load_dataset("locomo")
    assert "HIMGA_LOCOMO_PATH" in str(raised.value) and mirror.requests == 0
