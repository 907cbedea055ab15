"""Running the checks: each on its own namespaces, a failure reported with what was seen."""

import grpc

# Imported for their registrations (the registry orders them: required, then capabilities).
from himga.conformance import (  # noqa: F401
    api_capabilities,
    api_required,
    capabilities,
    required,
)
from himga.conformance.checks import CHECKS, Check, CheckResult
from himga.conformance.wire import CheckFailed, Wire, code_of, connect, fresh_namespace


def run_check(wire: Wire, check: Check) -> CheckResult:
    """Run one check; any failed call or broken expectation is a failure, with what was seen."""
    try:
        check.run(wire, lambda: fresh_namespace(check.name))
    except CheckFailed as failure:
        return CheckResult(check, False, str(failure))
    except grpc.RpcError as error:
        code = code_of(error)
        details = error.details() if isinstance(error, grpc.Call) else str(error)
        seen = f"a call failed: {code.name if code else 'error'}: {details}"
        return CheckResult(check, False, seen)
    return CheckResult(check, True, "")


def run_checks(target: str, timeout: float = 10.0) -> list[CheckResult]:
    """Every check against the MemoryService at `target` (HOST:PORT), in order.
    ConnectionError when nothing answers there within `timeout` seconds."""
    with connect(target, timeout) as wire:
        return [run_check(wire, check) for check in CHECKS]
