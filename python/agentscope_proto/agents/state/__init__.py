"""Where a served agent's sessions live between calls (`serve-agent --state`):
`memory` (the process, as always) or Redis (shared by replicas, surviving
restarts). `store.py` says what a store does; this module which store a URL
names, above the stores, which build on `store.py` alone."""

from __future__ import annotations

from ...errors import StateUnavailableError
from ..config import STATE_SCHEMES
from .memory import MemoryStateStore
from .store import StateStore, Stored

__all__ = ["MemoryStateStore", "StateStore", "Stored", "open_state_store"]


async def open_state_store(url: str, agent: str, log_bytes: int) -> StateStore:
    """The store `url` names, connected (Redis needs the `redis` extra);
    `agent` is the served agent's name, which keeps its sessions apart;
    `log_bytes` the most the `memory` store's reply logs hold."""
    if url == "memory":
        return MemoryStateStore(log_bytes)
    if url.startswith(STATE_SCHEMES):
        try:
            from .redis_store import RedisStateStore
        except ImportError:
            raise StateUnavailableError(
                "a Redis state store needs the redis extra: pip install 'agentscope-proto[redis]'"
            ) from None
        return await RedisStateStore.connect(url, agent)
    raise ValueError(
        f"state: expected 'memory' or a redis://, rediss:// or unix:// URL, got {url!r}"
    )
