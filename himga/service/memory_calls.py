"""The clients' requests' earlier home: they are himga.client's (himga.client.calls, and
himga.client.channels for what every call carries); these names stay for code that imports them
from here."""

from himga.client.calls import (
    MemoryCalls,
    NamespaceInfo,
    NamespacePage,
    hits,
    list_namespaces,
    namespace_page,
    page,
)
from himga.client.channels import bearer, channel_options

__all__ = [
    "MemoryCalls",
    "NamespaceInfo",
    "NamespacePage",
    "bearer",
    "channel_options",
    "hits",
    "list_namespaces",
    "namespace_page",
    "page",
]
