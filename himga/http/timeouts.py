"""The deadline a request's headers give: Connect's `Connect-Timeout-Ms`, else gRPC-Web's
`grpc-timeout`, each by its protocol's rule. A header that breaks its rule is the caller's
mistake, refused as INVALID_ARGUMENT naming the header and the rule, never read as no deadline:
a call meant to give up must not run without one."""

import re
from collections.abc import Mapping

CONNECT = "connect-timeout-ms"
GRPC = "grpc-timeout"

_CONNECT_TIMEOUT = re.compile(r"^[0-9]{1,10}$")
_GRPC_TIMEOUT = re.compile(r"^([0-9]{1,8})([HMSmun])$")
_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}

RULES = {
    CONNECT: "it must be the milliseconds the caller waits, 1 to 10 digits (the Connect "
    "protocol's rule)",
    GRPC: "it must be 1 to 8 digits then a unit: H, M, S, m, u or n (hours to nanoseconds; "
    "gRPC's rule)",
}
"""Each header's rule, as a refusal states it."""


def broken_timeout(headers: Mapping[str, str]) -> str | None:
    """What is wrong with the timeout header of a request (`headers` by lower-case name), the
    one that counts (`timeout_seconds`); None when it reads, or there is none."""
    connect = headers.get(CONNECT)
    if connect is not None:
        if _CONNECT_TIMEOUT.match(connect) is None:
            return f"the header Connect-Timeout-Ms is {connect!r}: {RULES[CONNECT]}"
        return None
    grpc = headers.get(GRPC)
    if grpc is not None and _GRPC_TIMEOUT.match(grpc) is None:
        return f"the header grpc-timeout is {grpc!r}: {RULES[GRPC]}"
    return None


def timeout_seconds(headers: Mapping[str, str]) -> float | None:
    """The timeout of a request whose headers `broken_timeout` passed (`Connect-Timeout-Ms`,
    else `grpc-timeout`), in seconds; None without one."""
    connect = headers.get(CONNECT)
    if connect is not None:
        return int(connect) / 1000.0
    found = _GRPC_TIMEOUT.match(headers.get(GRPC, ""))
    if found is None:
        return None
    return int(found.group(1)) * _UNITS[found.group(2)]
