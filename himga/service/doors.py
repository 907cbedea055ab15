"""The doors a server may open beside its gRPC port, by name: each is one module with a
`build(core, config)` that returns the door unstarted (an object with `start()`, `stop()` and
`port`). Adding a door is that module and one line in `DOORS`: the server opens each door its
configuration gives an address (`ServerConfig.doors`, `DoorConfig.addresses`), over the same
core, and `himga serve` offers `--NAME-port` for each, and says where each listens."""

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from himga.limits import MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from himga.service.core.core import Core
    from himga.service.credentials import ServerTls


@dataclass(frozen=True, slots=True)
class DoorKind:
    """A door as `himga serve` names it: the module that builds it (imported only when the
    door is opened), what it serves (its option's help and its line in the log) and the
    scheme of its URL."""

    module: str
    serves: str
    scheme: str = "http"


DOORS: dict[str, DoorKind] = {
    "http": DoorKind(
        "himga.http.door",
        "HTTP (Connect JSON and binary, gRPC-Web; the OpenAPI document at /openapi.json, "
        "the memory browser at /)",
    ),
}
"""Each door by name (`himga serve --NAME-port`)."""


@dataclass(frozen=True, slots=True)
class DoorConfig:
    """What the doors of one server share (its TLS, its limits, its CORS origins), and the
    address (host, port) of each door to open, by name."""

    tls: "ServerTls | None" = None
    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_workers: int = 8
    addresses: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    cors_origins: Sequence[str] = ()
    allowed_hosts: Sequence[str] = ()
    """Host headers the HTTP door answers besides loopback's and its bound host's
    (himga.http.hosts: `name`, `name:port`, `*`)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.addresses) - set(DOORS))
        if unknown:
            raise ValueError(f"no door named {', '.join(unknown)} (doors: {', '.join(DOORS)})")

    @property
    def wanted(self) -> list[str]:
        """The doors this configuration opens, in `DOORS`' order."""
        return [name for name in DOORS if name in self.addresses]

    @property
    def http_address(self) -> tuple[str, int] | None:
        """The HTTP door's address, or None when it is not opened."""
        return self.addresses.get("http")


class Door(Protocol):
    @property
    def port(self) -> int: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


def build(name: str, core: "Core", config: DoorConfig) -> Door:
    """The door `name` over `core`, unstarted."""
    module = importlib.import_module(DOORS[name].module)
    door: Door = module.build(core, config)
    return door
