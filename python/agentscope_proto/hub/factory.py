"""Which store a hub URL names: the one module that knows every kind of store.

Above the stores (`memory`, `redis_streams`), which build on `store` alone.
"""

from __future__ import annotations

from ..errors import HubError, HubUnavailableError
from .store import HubConfig, HubStore

__all__ = ["open_hub_store"]


async def open_hub_store(config: HubConfig) -> HubStore:
    """The store `config.url` names, connected (Redis needs the `redis` extra)."""
    url = config.url
    if url == "memory":
        from .memory import MemoryHubStore

        return MemoryHubStore(config)
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from .redis_streams import RedisHubStore
        except ImportError:
            raise HubUnavailableError(
                "a Redis hub needs the redis extra: pip install 'agentscope-proto[redis]'"
            ) from None
        return await RedisHubStore.connect(config)
    raise HubError("hub", f"expected 'memory' or a redis://, rediss:// or unix:// URL, got {url!r}")
