"""Running the checks: each on its own namespaces, a failure reported with what was seen."""

import dataclasses
from typing import TYPE_CHECKING

import grpc

# Imported for their registrations (the registry orders them: required, capabilities, episodes).
from himga.conformance import (  # noqa: F401
    api_capabilities,
    api_required,
    capabilities,
    episodes,
    namespaces,
    required,
)
from himga.conformance.checks import CHECKS, Check, CheckResult, NewNamespace
from himga.conformance.episodes import PROBE, offers_episodes
from himga.conformance.namespaces import forget_namespaces
from himga.conformance.wire import (
    GRPC,
    CheckFailed,
    NotExercised,
    Wire,
    code_of,
    connect,
    connect_http,
    fresh_namespace,
)

if TYPE_CHECKING:
    from himga.client.channels import ClientTls


def run_check(wire: Wire, check: Check) -> CheckResult:
    """Run one check, then delete the namespaces it made; any failed call or broken expectation
    is a failure, with what was seen."""
    made: list[str] = []

    def new_namespace() -> str:
        made.append(fresh_namespace(check.name))
        return made[-1]

    result = _judged(wire, check, new_namespace)
    left = forget_namespaces(wire, made)
    return dataclasses.replace(result, left=left) if left else result


def _judged(wire: Wire, check: Check, new_namespace: NewNamespace) -> CheckResult:
    try:
        check.run(wire, new_namespace)
    except CheckFailed as failure:
        return CheckResult(check, False, str(failure))
    except NotExercised as reason:
        return CheckResult(check, True, f"not exercised: {reason}")
    except grpc.RpcError as error:
        code = code_of(error)
        details = error.details() if isinstance(error, grpc.Call) else str(error)
        seen = f"a call failed: {code.name if code else 'error'}: {details}"
        return CheckResult(check, False, seen)
    return CheckResult(check, True, "")


def run_checks(
    target: str, timeout: float = 10.0, token: str | None = None, tls: "ClientTls | None" = None
) -> list[CheckResult]:
    """Every check against the MemoryService at `target` (HOST:PORT, its gRPC port), in
    order, sending `token` as a bearer token when given, over TLS when `tls` is given.
    ConnectionError when nothing answers there within `timeout` seconds, or the server's TLS
    and the kit's do not match; ValueError when a file of `tls` cannot be read."""
    with connect(target, timeout, token, tls) as wire:
        return run_over(wire)


def run_checks_http(
    url: str, timeout: float = 10.0, token: str | None = None, tls: "ClientTls | None" = None
) -> list[CheckResult]:
    """Every check that is a promise of the wire against the HTTP port at `url`
    ("http://HOST:PORT", or "https://HOST:PORT" trusting what `tls` trusts; Connect JSON), in
    order; the checks of the gRPC port only (health) are shown as not offered there.
    ConnectionError when nothing answers HTTP there, or the server's TLS and the kit's do not
    match; ValueError for `tls` with an http:// URL, or a file of `tls` that cannot be read."""
    with connect_http(url, timeout, token, tls) as wire:
        return run_over(wire)


def run_over(wire: Wire) -> list[CheckResult]:
    """Every check over `wire`, in order."""
    offered = offers_episodes(wire)
    forget_namespaces(wire, [PROBE])
    return [_offered(wire, check, offered) for check in CHECKS]


def _offered(wire: Wire, check: Check, offered: bool) -> CheckResult:
    if wire.transport not in check.transports:
        return CheckResult(check, False, f"a promise of the {GRPC} port only", False)
    if not offered and check.kind == "episodes":
        return CheckResult(check, False, "the server does not offer EpisodeService", False)
    return run_check(wire, check)
