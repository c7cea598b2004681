"""The hub in this process: the embedded default (`serve` with nothing else running).

Topics live in one event loop; a restart empties them. Offsets come from one
clock for the whole store, like Redis Streams ids, and never go below the
store's start, so an offset of an earlier store is recognised as unknown;
a topic's epoch is its name hashed with the store's random seed, so an
offset of another topic (or store) is too.
Memory is bounded twice: each topic keeps `retention` messages, and all
topics together `memory_mb`, the store's oldest messages going first.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import secrets
import time
from collections import deque
from collections.abc import Sequence

from ..errors import OffsetOutOfRangeError
from .store import (
    Entry,
    HubConfig,
    HubStore,
    Key,
    Published,
    Subscription,
    format_offset,
    offset_epoch,
    parse_offset,
    resume_check,
)

__all__ = ["MemoryHubStore"]

# Messages one `next()` hands out at most.
_BATCH = 256
# What a stored message costs beyond its bytes, counted against memory_mb.
_OVERHEAD = 64


class _Topic:
    __slots__ = ("changed", "epoch", "keys", "last", "messages", "name", "trimmed", "waiting")

    def __init__(self, name: str, epoch: str) -> None:
        self.name = name
        self.epoch = epoch
        # Parallel deques: the offsets as keys (to bisect) and the entries.
        self.keys: deque[Key] = deque()
        self.messages: deque[Entry] = deque()
        self.last: Key = (0, 0)
        # The newest offset trimmed away; (0, 0): none yet.
        self.trimmed: Key = (0, 0)
        # Set, and replaced, on every publish: wakes the subscribers.
        self.changed = asyncio.Event()
        self.waiting = 0

    def pop(self) -> int:
        """Drop the oldest message; the bytes it took."""
        self.trimmed = self.keys.popleft()
        return len(self.messages.popleft()[1]) + _OVERHEAD


class MemoryHubStore(HubStore):
    """Topics in this process's memory."""

    def __init__(self, config: HubConfig | None = None) -> None:
        config = config or HubConfig()
        self._retention = config.retention
        self._capacity = config.memory_mb * 1024 * 1024
        self._topics: dict[str, _Topic] = {}
        # (topic, offset) of every message stored, oldest first: the order in
        # which memory_mb evicts. Entries whose message its topic's retention
        # already dropped are skipped then, and compacted away now and then.
        self._order: deque[tuple[_Topic, Key]] = deque()
        self._count = 0
        self._bytes = 0
        self._last: Key = (time.time_ns() // 1_000_000, 0)
        self._started = self._last
        # The newest offset trimmed from a topic that no longer exists.
        self._dropped: Key = (0, 0)
        self._seed = secrets.token_bytes(16)

    def _epoch(self, name: str) -> str:
        """The topic's epoch: the same for a topic forgotten and made again."""
        return hashlib.blake2b(name.encode(), digest_size=4, key=self._seed).hexdigest()

    def _next_key(self) -> Key:
        now = time.time_ns() // 1_000_000
        ms, seq = self._last
        self._last = (now, 0) if now > ms else (ms, seq + 1)
        return self._last

    def _topic(self, name: str) -> _Topic:
        state = self._topics.get(name)
        if state is None:
            state = self._topics[name] = _Topic(name, self._epoch(name))
        return state

    async def publish(self, topic: str, msg: bytes) -> str:
        state = self._append(topic, msg)
        self._wake(state)
        return format_offset(state.last, state.epoch)

    async def publish_many(self, messages: Sequence[tuple[str, bytes]]) -> list[Published]:
        offsets: list[Published] = []
        touched: dict[str, _Topic] = {}
        for topic, msg in messages:
            state = touched[topic] = self._append(topic, msg)
            offsets.append(format_offset(state.last, state.epoch))
        for state in touched.values():  # subscribers wake once per topic
            self._wake(state)
        return offsets

    def _append(self, topic: str, msg: bytes) -> _Topic:
        """Store `msg` in `topic` (its offset is then the topic's `last`)."""
        state = self._topic(topic)
        key = self._next_key()
        offset = format_offset(key, state.epoch)
        state.keys.append(key)
        state.messages.append((offset.encode(), msg))
        state.last = key
        self._order.append((state, key))
        self._count += 1
        self._bytes += len(msg) + _OVERHEAD
        if len(state.keys) > self._retention:
            self._drop(state)
        while self._bytes > self._capacity:
            self._evict_oldest()
        if len(self._order) > 2 * self._count + 1024:
            self._order = deque(item for item in self._order if item[1] > item[0].trimmed)
        return state

    @staticmethod
    def _wake(state: _Topic) -> None:
        changed, state.changed = state.changed, asyncio.Event()
        changed.set()

    def _drop(self, state: _Topic) -> None:
        self._bytes -= state.pop()
        self._count -= 1

    def _evict_oldest(self) -> None:
        while True:
            state, key = self._order.popleft()
            if state.keys and state.keys[0] == key:
                self._drop(state)
                self._forget_if_idle(state)
                return

    def _forget_if_idle(self, state: _Topic) -> None:
        """Forget a topic left with no message and no subscriber waiting."""
        if not state.keys and not state.waiting and self._topics.get(state.name) is state:
            del self._topics[state.name]
            self._dropped = max(self._dropped, state.trimmed)

    async def subscribe(self, topic: str, after: str) -> Subscription:
        state = self._topics.get(topic)
        epoch = self._epoch(topic)
        if not after:
            start = state.last if state is not None and state.last > (0, 0) else self._last
            return _MemorySubscription(self, topic, start, format_offset(start, epoch))
        key = parse_offset(after)
        if offset_epoch(after) not in ("", epoch):
            raise OffsetOutOfRangeError(
                "after", "this offset is another topic's (or another store's)", "unknown"
            )
        if state is None or state.last == (0, 0):  # nothing published since it was forgotten
            resume_check(key, self._last, None, key < self._dropped, self._started)
        else:
            first = state.keys[0] if state.keys else None
            resume_check(key, state.last, first, state.trimmed > key, self._started)
        return _MemorySubscription(self, topic, key, after)

    async def wait(self, name: str, cursor: Key) -> _Topic:
        """The topic once it holds a message after `cursor`."""
        state = self._topic(name)
        while state.last <= cursor:
            state.waiting += 1
            try:
                await state.changed.wait()
            finally:
                state.waiting -= 1
                if not state.keys:
                    self._forget_if_idle(state)
            state = self._topic(name)
        return state


class _MemorySubscription(Subscription):
    def __init__(self, store: MemoryHubStore, topic: str, cursor: Key, after: str) -> None:
        self._store = store
        self._topic = topic
        self._cursor = cursor
        self.after = after

    async def next(self) -> list[Entry]:
        state = await self._store.wait(self._topic, self._cursor)
        if state.trimmed > self._cursor:
            raise OffsetOutOfRangeError(
                "after", "this subscriber fell behind the topic's retention", "expired"
            )
        start = bisect.bisect_right(state.keys, self._cursor)
        end = min(start + _BATCH, len(state.keys))
        batch = [state.messages[i] for i in range(start, end)]
        self._cursor = state.keys[end - 1]
        return batch
