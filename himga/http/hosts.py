"""`AllowedHosts`: the names the HTTP port answers to, against DNS rebinding.

A web page can rebind its own name (evil.example) to 127.0.0.1 and then call the port as if it
were its own origin: the browser sends no CORS preflight, only `Host: evil.example:PORT`. A
server on loopback without tokens would let any such page read, delete or reset memory. So a
request whose `Host` names none of the allowed hosts is refused (421 Misdirected Request, as the
MCP server's transport refuses it): by default the loopback names and addresses (localhost,
127.0.0.1 and the rest of 127.0.0.0/8, [::1]) and the host the port is bound to, on any port.

A port bound to an address others can reach needs tokens already (`himga serve`), which a page
does not have: there, unless hosts are listed, any Host is answered. Listed hosts are added to
the defaults, and then hold on any address: `name` (any port), `name:port`, or `*` (any Host).
A request without a Host header (HTTP/1.0) comes from no browser, and is answered.
"""

import ipaddress
import re
from collections.abc import Iterable

_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[^\[\]:]+)(?::([0-9]{1,5}))?$")
"""A Host header: a name or address (an IPv6 address in brackets), and an optional port."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
ANY = "*"


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
        listed = [entry.strip().lower() for entry in listed]
        self.bound = as_host(bound)
        self.any = ANY in listed or (not listed and not is_loopback(self.bound))
        """Whether every Host is answered."""
        self._names = {self.bound, *(entry for entry in listed if entry != ANY)}

    def allows(self, value: str | None) -> bool:
        """Whether a request with `Host: value` (None: no Host header) is answered."""
        if value is None or self.any:
            return True
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
