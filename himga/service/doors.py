"""The doors a server may open beside its gRPC port, by name: each is one module with a
`build(core, config)` that returns the door unstarted (an object with `start()`, `stop()` and
`port`). Adding a door is that module and one line in `DOORS`; the server opens each door its
configuration asks for (`DoorConfig.wanted`), over the same core."""

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from himga.service.credentials import ServerTls

if TYPE_CHECKING:
    from himga.service.core.core import Core

DOORS: dict[str, str] = {
    "http": "himga.http.door",
}
"""Each door by name, with the module that builds it (imported only when the door is opened)."""


@dataclass(frozen=True, slots=True)
class DoorConfig:
    """What the doors of one server share: its TLS, its limits, and each door's address."""

    tls: ServerTls | None = None
    max_message_bytes: int = 16 * 1024 * 1024
    max_workers: int = 8
    http_address: tuple[str, int] | None = None
    cors_origins: Sequence[str] = ()

    @property
    def wanted(self) -> list[str]:
        """The doors this configuration opens."""
        return ["http"] if self.http_address is not None else []


class Door(Protocol):
    @property
    def port(self) -> int: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


def build(name: str, core: "Core", config: DoorConfig) -> Door:
    """The door `name` over `core`, unstarted."""
    module = importlib.import_module(DOORS[name])
    door: Door = module.build(core, config)
    return door
