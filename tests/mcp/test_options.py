"""`himga mcp --embedding-model` and `--memory-option`: the embedded memory's options, as
`himga serve` takes them, checked before the protocol starts; refused with --target, whose
server has its own."""

from pathlib import Path

import pytest

from himga.cli import main
from himga.mcp import stores
from himga.memory.registry import command_options


def test_the_embedded_memory_opens_with_the_options_given(tmp_path: Path) -> None:
    options = {"hybrid": command_options("hybrid", ["date_boost=0", "dense_weight=0.3"])}
    held = stores.embedded(tmp_path, "hybrid", None, options)
    try:
        with held.namespaces.using("mcp.options", "", create=True) as opened:
            assert opened is not None
            fusion = opened.memory._fusion  # type: ignore[attr-defined]
            assert (fusion.date_boost, fusion.dense_weight) == (0.0, 0.3)
    finally:
        held.close()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--memory", "hybrid", "--memory-option", "bogus=1"], "options.bogus: not an option"),
        (["--memory", "sqlite", "--embedding-model", "e5-small-v2"], "options.embedding_model"),
        (["--target", "127.0.0.1:1", "--embedding-model", "e5-small-v2"], "the server's own"),
    ],
)
def test_a_bad_option_stops_it_before_the_protocol_starts(
    argv: list[str], said: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert main(["mcp", *argv]) == 2
    assert said in caplog.text
