"""A connection to Redis as the hub and the agents' state store open it (the
`redis` extra): one node or a whole Redis Cluster, from one URL, with a dead
connection noticed by the kernel rather than by a timer on every call.

No per-call timeout: redis-py wraps every command of a connection that has
one in a timer and, for sends, a task of its own (a fifth of a hub publish's
CPU, bench/NOTES.md). Instead a connection silent or leaving data
unacknowledged for `DEAD_S` is taken as dead (TCP keepalive and user
timeout): a Redis that crashed, rebooted or dropped off the network fails
the calls on it within about that long; a Redis process stopped but still
reachable (SIGSTOP) is waited for.
"""

from __future__ import annotations

import socket
from typing import Any

import redis.asyncio as aioredis

__all__ = ["DEAD_S", "connect_redis"]

DEAD_S = 15


def _keepalive() -> dict[int, int]:
    """The TCP options that notice a dead connection within `DEAD_S` (those
    this platform has)."""
    wanted = {
        "TCP_KEEPIDLE": 5,
        "TCP_KEEPINTVL": 2,
        "TCP_KEEPCNT": (DEAD_S - 5) // 2,
        "TCP_USER_TIMEOUT": DEAD_S * 1000,
    }
    return {getattr(socket, name): value for name, value in wanted.items() if hasattr(socket, name)}


async def connect_redis(url: str) -> Any:
    """A client of the Redis `url` names, once it answered: redis-py's
    `Redis`, or its `RedisCluster` when the node is one of a cluster (the
    same commands; each key on the node of its slot). Raises redis-py's
    `RedisError` or `OSError` when it cannot be reached."""
    options: dict[str, Any] = {"socket_connect_timeout": 5, "socket_timeout": None}
    if not url.startswith("unix://"):  # a local socket's peer cannot vanish unseen
        options.update(socket_keepalive=True, socket_keepalive_options=_keepalive())
    client: Any = aioredis.Redis.from_url(url, **options)
    try:
        if (await client.info("cluster")).get("cluster_enabled") == 1:
            await client.aclose()
            client = aioredis.RedisCluster.from_url(url, **options)
            await client.initialize()
    except BaseException:
        await client.aclose()
        raise
    return client
