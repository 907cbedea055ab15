"""`build_core`: the core over the stores of one server (or of one embedded process)."""

from himga.service.auth import Auth, TokenSource
from himga.service.core.core import Core
from himga.service.core.episodes import EpisodeHandlers
from himga.service.core.memory import MemoryHandlers
from himga.service.core.refusals import Refusals
from himga.service.episode_stores import EpisodeStores
from himga.service.lifecycle import Calls
from himga.service.metrics import Metrics
from himga.service.namespaces import Namespaces
from himga.service.receipts import InProcessReceipts
from himga.service.resources import StoreHealth


def build_core(
    namespaces: Namespaces,
    episode_stores: EpisodeStores,
    *,
    auth: TokenSource | None = None,
    metrics: Metrics | None = None,
    max_response_bytes: int | None = None,
    store: StoreHealth | None = None,
    calls: Calls | None = None,
) -> Core:
    """A core answering over `namespaces` and `episode_stores`: with `auth`, every call needs a
    token of it; `metrics` counts every call and refusal; every answer is kept to
    `max_response_bytes` (himga.service.resources); `store` hears of a store that cannot
    write."""
    calls = calls or Calls()
    episode_receipts = InProcessReceipts()
    return Core(
        MemoryHandlers(namespaces, calls, max_response_bytes, store, episode_receipts),
        EpisodeHandlers(episode_stores, calls, episode_receipts, max_response_bytes),
        calls=calls,
        auth=Auth(auth) if auth is not None else None,
        refusals=Refusals(metrics.refused if metrics is not None else None),
        ended=metrics.ended if metrics is not None else None,
        auth_failed=metrics.auth_failed if metrics is not None else None,
        store=store,
    )
