"""The embedded default: no state outside the process.

Sessions stay in the server's memory with their agents (`Sessions`), so
this store keeps nothing and every lease is the process's own: one process
runs a session, as the session's lock already ensures.
"""

from __future__ import annotations

from .store import StateStore, Stored

__all__ = ["MemoryStateStore"]


class MemoryStateStore(StateStore):
    """Keeps nothing: sessions live and die with the process."""

    durable = False

    async def acquire(self, session_id: str, owner: str, ttl_ms: int) -> bool:
        return True

    async def renew(self, session_id: str, owner: str, ttl_ms: int) -> bool:
        return True

    async def release(self, session_id: str, owner: str) -> None:
        return None

    async def version(self, session_id: str) -> int:
        return 0

    async def load(self, session_id: str) -> Stored | None:
        return None

    async def save(self, session_id: str, owner: str, state: bytes, idle_ms: int) -> int | None:
        return 0

    async def close(self) -> None:
        return None
