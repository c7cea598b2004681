"""The HubService: AgentScope's `MsgHub` across processes.

`store` says what a hub store is (`HubStore`, and `HubConfig`, which lives
with the server's configuration); `memory` keeps topics in this process,
`redis_streams` in Redis Streams (the `redis` extra, imported only when
asked for); `factory` opens the one a URL names (`open_hub_store`);
`servicer` serves a store over gRPC (`HubServicer`; `hub_service` hosts
it beside a server's other services); `client` has `HubClient` and
`AsyncHubClient`; `direct` has `DirectHub`, the same topics straight from
Redis for Python code with its credentials (the `redis` extra). Names
load on first use: a client needs no store.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import AsyncHubClient, AsyncSubscription, ConsumerGroup, HubClient, Subscription
    from .direct import DirectHub, DirectSubscription
    from .factory import open_hub_store
    from .memory import MemoryHubStore
    from .servicer import AFTER_HEADER, SERVICE_NAME, HubServicer, add_hub_service, hub_service
    from .store import HubConfig, HubStore

_LAZY = {
    "AFTER_HEADER": "servicer",
    "SERVICE_NAME": "servicer",
    "HubServicer": "servicer",
    "add_hub_service": "servicer",
    "hub_service": "servicer",
    "AsyncHubClient": "client",
    "AsyncSubscription": "client",
    "ConsumerGroup": "client",
    "HubClient": "client",
    "Subscription": "client",
    "DirectHub": "direct",
    "DirectSubscription": "direct",
    "HubConfig": "store",
    "HubStore": "store",
    "open_hub_store": "factory",
    "MemoryHubStore": "memory",
}

__all__ = [
    "AFTER_HEADER",
    "SERVICE_NAME",
    "AsyncHubClient",
    "AsyncSubscription",
    "ConsumerGroup",
    "DirectHub",
    "DirectSubscription",
    "HubClient",
    "HubConfig",
    "HubServicer",
    "HubStore",
    "MemoryHubStore",
    "Subscription",
    "add_hub_service",
    "hub_service",
    "open_hub_store",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
