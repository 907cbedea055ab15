"""The conformance kit: the behavioural contract of MemoryService, checked over the wire.

`run_checks(target)` runs every check (`required`, then `capabilities`) against a server at
HOST:PORT through the generated stubs only, so it judges any implementation in any language;
`run_checks_http(url)` runs every promise of the wire over an HTTP port's Connect JSON.
Required checks are what every MemoryService must do (a memory that stores nothing included);
capabilities are what only a storing memory can show. `himga conformance` prints the table.
"""

from himga.conformance.checks import CHECKS, Check, CheckResult, Kind
from himga.conformance.runner import run_checks, run_checks_http

__all__ = ["CHECKS", "Check", "CheckResult", "Kind", "run_checks", "run_checks_http"]
