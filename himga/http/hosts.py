"""`AllowedHosts`: the names the HTTP port answers to, against DNS rebinding.

A web page can rebind its own name (evil.example) to 127.0.0.1 and then call the port as if it
were its own origin: the browser sends no CORS preflight, only `Host: evil.example:PORT`. A
server on loopback without tokens would let any such page read, delete or reset memory. So a
request whose `Host` names none of the allowed hosts is refused (421 Misdirected Request, as the
MCP server's transport refuses it): by default the loopback names and addresses (localhost,
127.0.0.1 and the rest of 127.0.0.0/8, [::1]) and the host the port is bound to, on any port.

A port bound to an address others can reach needs tokens already (`himga serve`), which a page
does not have: there any Host is answered (clients call it by whatever names and addresses the
machine has). Listed hosts are added to the defaults of a loopback port (behind a reverse proxy
that passes its own Host on): `name` (any port), `name:port`, or `*` (any Host); `listed_host`
checks and normalises each. A request without a Host header (HTTP/1.0) comes from no browser,
and is answered.
"""

import ipaddress
import re
from collections.abc import Iterable

_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[^\[\]:]+)(?::([0-9]{1,5}))?$")
"""A Host header: a name or address (an IPv6 address in brackets), and an optional port."""
_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
"""A host name or IPv4 address as a listed host may be (letters, digits, hyphens, dots)."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
ANY = "*"
_REMEMBERED = 64
"""Host headers whose verdict is kept (a port is called by a few names; others are judged anew)."""


def split_host(value: str) -> tuple[str, str | None] | None:
    """A Host header's name (lower case, an IPv6 address in brackets) and port (None: none
    given); None when it is no Host a client sends."""
    found = _HOST.match(value.strip().lower())
    if found is None:
        return None
    return found.group(1), found.group(2)


def as_host(address: str) -> str:
    """An address to bind (`127.0.0.1`, `::1`, `[::1]`, `myhost`) as a Host header names it."""
    bare = address.strip().strip("[]").lower()
    return f"[{bare}]" if ":" in bare else bare


def listed_host(entry: str) -> str:
    """An allowed host as given (`name`, `name:port`, an IPv6 address bare or in brackets, or
    `*`) in the form a Host header is compared in: lower case, IPv6 in brackets, no trailing
    dot; ValueError saying what it must be otherwise."""
    given = entry.strip().lower()
    if given == ANY:
        return ANY
    if given.count(":") > 1 and not given.startswith("["):  # a bare IPv6 address
        given = as_host(given)
    found = split_host(given)
    name = None if found is None else found[0].removesuffix(".")
    if (
        found is None
        or not name
        or not (name.startswith("[") or _NAME.fullmatch(name))
        or (found[1] is not None and not 0 < int(found[1]) < 65536)
    ):
        raise ValueError(
            f"{entry!r} is no host: give a name or address, with a port or without "
            "(memory.example, memory.example:443, [::1]), or * for any"
        )
    return name if found[1] is None else f"{name}:{found[1]}"


def is_loopback(name: str) -> bool:
    """Whether a Host's name (`split_host`) is a loopback name or address."""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


class AllowedHosts:
    """The Host headers a port bound to `bound` answers: the loopback names, `bound`, and
    `listed` (see the module); any Host when `bound` is not loopback and nothing is listed."""

    def __init__(self, bound: str = "127.0.0.1", listed: Iterable[str] = ()) -> None:
        listed = [listed_host(entry) for entry in listed]
        self.bound = as_host(bound)
        self.any = ANY in listed or not is_loopback(self.bound)
        """Whether every Host is answered."""
        self._names = {self.bound, *(entry for entry in listed if entry != ANY)}
        self._seen: dict[str, bool] = {}  # verdicts by Host header, a few at most

    def allows(self, value: str | None) -> bool:
        """Whether a request with `Host: value` (None: no Host header) is answered."""
        if value is None or self.any:
            return True
        verdict = self._seen.get(value)
        if verdict is None:
            verdict = self._judged(value)
            if len(self._seen) < _REMEMBERED:
                self._seen[value] = verdict
        return verdict

    def _judged(self, value: str) -> bool:
        found = split_host(value)
        if found is None:
            return False
        name, port = found
        if is_loopback(name) or name in self._names:
            return True
        return port is not None and f"{name}:{port}" in self._names

    def named(self) -> str:
        """The hosts answered, as a refusal tells them."""
        listed = sorted(self._names - {self.bound, *LOOPBACK_NAMES})
        names = [*LOOPBACK_NAMES, *([] if self.bound in LOOPBACK_NAMES else [self.bound])]
        return ", ".join([*names, *listed])
