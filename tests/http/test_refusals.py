"""One log policy for every refusal, whatever the door: refused auth, undecodable requests and
bodies over the limit are each counted in the metrics by kind, and logged at most LOG_BURST
lines a period per kind (tests/service/test_decoding.py holds the count of those left out)."""

import logging
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.service import tokens
from himga.service.auth import AuthFile
from himga.service.core.refusals import LOG_BURST, Refusals
from himga.service.metrics import Metrics
from himga.service.server import create_server
from tests.http.conftest import Served
from tests.service.test_metrics import scrape, value

CALLS = 3 * LOG_BURST


def test_refusals_are_counted_by_kind_and_logged_a_few_at_a_time_over_both_doors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    held = tokens.Tokens()
    token, _ = held.new(["*"], ["read"])
    tokens.save(tmp_path / "auth.json", held)
    metrics = Metrics()
    server, port = create_server(
        "127.0.0.1:0",
        auth=AuthFile(tmp_path / "auth.json"),
        metrics=metrics,
        http_address=("127.0.0.1", 0),
        max_message_bytes=1024,
    )
    metrics_port = metrics.serve("127.0.0.1", 0)
    served = Served(server, port)
    bearer = {"Authorization": f"Bearer {token}"}
    try:
        with caplog.at_level(logging.INFO):
            for _ in range(CALLS):
                with pytest.raises(grpc.RpcError):
                    served.stub.Retrieve(pb.RetrieveRequest(namespace="n", query="x"))
                assert served.call("Retrieve", {"namespace": "n"})[0] == 401
                assert served.call("Retrieve", {"namespace": 5}, **bearer)[0] == 400
            assert served.post("/himga.memory.v1.MemoryService/Retrieve", b"x" * 4096)[0] == 413
        text = scrape(metrics_port)
    finally:
        served.channel.close()
        server.stop(0).wait()
    assert value(text, "himga_refusals_total", kind="auth") == 2 * CALLS
    assert value(text, "himga_refusals_total", kind="decoding") == CALLS
    assert value(text, "himga_refusals_total", kind="limits") == 1
    lines = [r.getMessage() for r in caplog.records]
    for kind in ("auth", "decoding", "limits"):
        logged = [line for line in lines if f"({kind})" in line]
        assert 1 <= len(logged) <= LOG_BURST, (kind, logged)
    # The refusals of auth are logged by that policy alone (no line a call elsewhere).
    assert not [line for line in lines if "Unauthenticated" in line and "(auth)" not in line]


def test_each_kind_has_its_own_budget(caplog: pytest.LogCaptureFixture) -> None:
    counted: list[str] = []
    refusals = Refusals(counted.append, burst=2, period=3600)
    with caplog.at_level(logging.WARNING, logger="himga.refusals"):
        for _ in range(5):
            refusals.refused("auth", "/m", "peer", "Unauthenticated")
        refusals.refused("decoding", "/m", "peer", "not JSON")
    assert counted == ["auth"] * 5 + ["decoding"]
    assert [r.getMessage() for r in caplog.records] == [
        "refused /m from peer (auth): Unauthenticated",
        "refused /m from peer (auth): Unauthenticated",
        "refused /m from peer (decoding): not JSON",
    ]
