"""What `himga mcp` imports before it answers `initialize`: the SDK and its own door, nothing
of the stores, the records, the validators or the gRPC server, which are loaded on the first
tool call (the start-up time itself is measured in `make bench-mcp`, not here)."""

import json
import subprocess
import sys

NOT_YET = (
    "grpc",
    "jsonschema",
    "himga.episodes",
    "himga.memory",
    "himga.records",
    "himga.core",
    "himga.service",
    "himga.validation",
    "himga.mcp.tools",
)

PROGRAM = f"""
import json, sys
from himga.cli import _module_of, _parser
argv = ["mcp", "--data-dir", "unused"]
args = _parser(_module_of(argv))[0].parse_args(argv)
from himga.mcp import server, stores
held = stores.Opening(lambda: None, kept=True)
server.create(held, 'default')
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("grpc", "jsonschema", "himga")
    and any(m == n or m.startswith(n + ".") for n in {NOT_YET!r}))))
"""


def test_initialize_needs_none_of_the_stores() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []
