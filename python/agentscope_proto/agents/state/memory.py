"""The embedded default: no session state outside the process.

Sessions stay in the server's memory with their agents (`Sessions`), so
this store keeps no state and every lease is the process's own: one process
runs a session, as the session's lock already ensures. Reply logs are kept
here, in the process, for the same retention as Redis keeps them, within a
budget of bytes (`AgentConfig.reply_log_mb`): past it, the logs appended to
least recently go first, so that callers making replies fast cannot grow
the server without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from .store import Entry, Holder, Notice, Renewed, Save, StateStore, Stored

__all__ = ["MemoryStateStore"]


class _Log:
    """One reply's entries, and who waits for the next."""

    __slots__ = ("changed", "entries", "expires", "size")

    def __init__(self) -> None:
        self.entries: list[bytes] = []
        self.changed = asyncio.Event()
        self.expires = 0.0
        self.size = 0


class MemoryStateStore(StateStore):
    """Keeps no session state; keeps reply logs in the process."""

    durable = False

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        # (session, reply) -> its log, oldest first (a dict keeps order).
        self._logs: dict[tuple[str, str], _Log] = {}
        self._max_bytes = max_bytes
        self._bytes = 0  # the entries' of every log kept

    async def acquire(self, session_id: str, owner: str, ttl_ms: int) -> int | None:
        return 0

    async def renew(self, session_id: str, holder: Holder, ttl_ms: int) -> Renewed:
        return Renewed.HELD

    async def request_interrupt(self, session_id: str, ttl_ms: int) -> None:
        return None  # the process's own replies are interrupted directly (`Sessions`)

    async def release(self, session_id: str, owner: str, *, only_idle: bool = False) -> None:
        return None

    async def notices(self, owner: str) -> AsyncIterator[tuple[Notice, str]]:
        # No other replica: nobody to want a session, or to interrupt from afar.
        yield Notice.LISTENING, ""
        await asyncio.Event().wait()

    async def version(self, session_id: str) -> int:
        return 0

    async def load(self, session_id: str) -> Stored | None:
        return None

    async def save(self, session_id: str, save: Save) -> int:
        return 0

    def _expire(self) -> None:
        # Logs are in the order of their last append, so of their expiry (one
        # retention for all): stop at the first that has not expired, and is
        # within the budget (the last appended to always is).
        now = time.monotonic()
        while len(self._logs) > 1:
            key, log = next(iter(self._logs.items()))
            if log.expires > now and self._bytes <= self._max_bytes:
                return
            self._bytes -= log.size
            del self._logs[key]
        if self._logs and next(iter(self._logs.values())).expires <= now:
            self._bytes = 0
            self._logs.clear()

    async def append(
        self,
        session_id: str,
        reply_id: str,
        entries: list[bytes],
        keep_ms: int,
        holder: Holder | None = None,
        save: Save | None = None,
    ) -> tuple[list[str], int | None]:
        log = self._logs.pop((session_id, reply_id), None) or _Log()
        self._logs[(session_id, reply_id)] = log  # the most recent last
        first = len(log.entries)
        log.entries.extend(entries)
        added = sum(map(len, entries))
        log.size += added
        self._bytes += added
        log.expires = time.monotonic() + keep_ms / 1000
        self._expire()
        log.changed.set()
        log.changed = asyncio.Event()
        # No state to save: sessions stay in the process (`durable` is false).
        return [str(position) for position in range(first + 1, len(log.entries) + 1)], None

    async def read(
        self, session_id: str, reply_id: str, after: str, wait_ms: int
    ) -> list[Entry] | None:
        self._expire()
        log = self._logs.get((session_id, reply_id))
        if log is None:
            return None
        start = int(after or 0)
        if start >= len(log.entries) and wait_ms > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(log.changed.wait(), wait_ms / 1000)
        return [
            Entry(str(position), log.entries[position - 1])
            for position in range(start + 1, len(log.entries) + 1)
        ]

    async def last(self, session_id: str, reply_id: str) -> Entry | None:
        log = self._logs.get((session_id, reply_id))
        if log is None or not log.entries:
            return None
        return Entry(str(len(log.entries)), log.entries[-1])

    async def leased(self, session_id: str) -> bool:
        return False  # the process's sessions say whether they run (`Sessions`)

    async def close(self) -> None:
        self._logs.clear()
        self._bytes = 0
