"""The clients' requests' earlier home: they are himga.client's (himga.client.calls, and
himga.client.channels for what every call carries); these names stay for code that imports them
from here."""

from himga.client.calls import MemoryCalls, hits, page
from himga.client.channels import bearer, channel_options

__all__ = ["MemoryCalls", "bearer", "channel_options", "hits", "page"]
