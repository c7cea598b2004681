"""The hub in this process: the embedded default (`serve` with nothing else running).

Topics live in one event loop; a restart empties them. Offsets come from one
clock for the whole store, like Redis Streams ids, and never go below the
store's start, so an offset of an earlier store is recognised as unknown;
a topic's epoch is its name hashed with the store's random seed, so an
offset of another topic (or store) is too.
Memory is bounded twice: each topic keeps `retention` messages (and, with
`retention_seconds`, none older, trimmed when it is next published to), and
all topics together `memory_mb`, the store's oldest messages going first.

A topic's consumer groups live with it (at most `MAX_GROUPS`), as Redis
keeps them with the topic's stream: a group's place in the topic and the
messages pending with each member (when delivered, how often). A topic
that `memory_mb` emptied is forgotten with its groups once no member is
connected.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import secrets
import time
from collections import Counter, deque
from collections.abc import Sequence

from ..errors import OffsetOutOfRangeError
from .store import (
    MAX_GROUPS,
    Entry,
    Group,
    HubConfig,
    HubStore,
    Key,
    Published,
    Subscription,
    closed_subscription,
    format_offset,
    not_pending,
    offset_epoch,
    parse_offset,
    resume_check,
    too_many_groups,
    unknown_group,
    woken,
)

__all__ = ["MemoryHubStore"]

# Messages one `next()` hands out at most.
_BATCH = 256
# What a stored message costs beyond its bytes, counted against memory_mb.
_OVERHEAD = 64


class _Pending:
    """A message of a group delivered to `member` at `since` (monotonic seconds)."""

    __slots__ = ("member", "since")

    def __init__(self, member: str, since: float) -> None:
        self.member = member
        self.since = since


class _Group:
    """A topic's consumer group: its place, and what its members hold."""

    __slots__ = ("changed", "counts", "cursor", "members", "pending")

    def __init__(self, cursor: Key) -> None:
        # The newest offset delivered to the group.
        self.cursor = cursor
        # Delivered and not acknowledged, in the order delivered; per member.
        self.pending: dict[Key, _Pending] = {}
        self.counts: Counter[str] = Counter()
        # Member subscriptions joined now (the topic is kept while any is).
        self.members = 0
        # Set on a publish to the topic and on an acknowledgement: wakes the members.
        self.changed = asyncio.Event()

    def hand(self, key: Key, member: str, now: float) -> None:
        """`key` pending with `member` from `now` on (taken over if another's)."""
        held = self.pending.get(key)
        if held is not None:
            self._count(held.member, -1)
        self.pending[key] = _Pending(member, now)
        self._count(member, 1)

    def drop(self, key: Key) -> None:
        self._count(self.pending.pop(key).member, -1)

    def _count(self, member: str, change: int) -> None:
        count = self.counts[member] + change
        if count:
            self.counts[member] = count
        else:
            del self.counts[member]


class _Topic:
    __slots__ = (
        "changed",
        "epoch",
        "groups",
        "keys",
        "last",
        "messages",
        "name",
        "trimmed",
        "waiting",
    )

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
        self.groups: dict[str, _Group] = {}

    def entry(self, key: Key) -> Entry | None:
        """The message stored under `key`, if the topic still has it."""
        index = bisect.bisect_left(self.keys, key)
        if index < len(self.keys) and self.keys[index] == key:
            return self.messages[index]
        return None

    def pop(self) -> int:
        """Drop the oldest message; the bytes it took."""
        self.trimmed = self.keys.popleft()
        return len(self.messages.popleft()[1]) + _OVERHEAD


class MemoryHubStore(HubStore):
    """Topics in this process's memory."""

    def __init__(self, config: HubConfig | None = None) -> None:
        config = config or HubConfig()
        self._retention = config.retention
        self._age_ms = config.retention_seconds * 1000
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
        if self._age_ms:  # the store's clock is the offsets'
            while state.keys and state.keys[0][0] < key[0] - self._age_ms:
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
        for group in state.groups.values():
            group.changed.set()

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
        joined = any(group.members for group in state.groups.values())
        if (
            not state.keys
            and not state.waiting
            and not joined
            and self._topics.get(state.name) is state
        ):
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

    async def join(self, topic: str, group: Group) -> Subscription:
        state = self._topic(topic)
        joined = state.groups.get(group.name)
        if joined is None:
            if len(state.groups) >= MAX_GROUPS:
                raise too_many_groups()
            joined = state.groups[group.name] = _Group((0, 0) if group.earliest else state.last)
        return _MemberSubscription(state, joined, group)

    async def ack(self, topic: str, group: str, member: str, offsets: Sequence[str]) -> int:
        state = self._topics.get(topic)
        joined = state.groups.get(group) if state is not None else None
        if state is None or joined is None:
            raise unknown_group(group)
        keys = []
        for index, offset in enumerate(offsets):
            key = parse_offset(offset, f"offsets[{index}]")
            held = joined.pending.get(key)
            ours = held is not None and held.member == member
            if not ours or offset_epoch(offset) not in ("", state.epoch):
                raise not_pending(index, group, member)
            keys.append(key)
        for key in set(keys):
            joined.drop(key)
        joined.changed.set()
        return len(set(keys))

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
        self._closed = False

    async def next(self) -> list[Entry]:
        if self._closed:
            raise closed_subscription()
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

    def close(self) -> None:
        self._closed = True


class _MemberSubscription(Subscription):
    """A consumer group member: what it held from before, then messages
    taken over from members that left them unacknowledged too long, then
    new ones, at most `max_unacked` held at once."""

    def __init__(self, state: _Topic, group: _Group, spec: Group) -> None:
        self._state = state
        self._group = group
        self._spec = spec
        self._idle = spec.claim_idle_ms / 1000
        self.after = ""
        # What this member held when it joined: delivered again first.
        self._own = deque(k for k, held in group.pending.items() if held.member == spec.member)
        group.members += 1
        self._joined = True

    async def next(self) -> list[Entry]:
        group = self._group
        while True:
            if not self._joined:
                raise closed_subscription()
            group.changed.clear()
            batch, wait = self._take(time.monotonic())
            if batch:
                return batch
            await woken(group.changed, wait)

    def _take(self, now: float) -> tuple[list[Entry], float | None]:
        """What to deliver now; else how long to wait at most (None: for a
        publish or an acknowledgement)."""
        state, group, member = self._state, self._group, self._spec.member
        batch: list[Entry] = []
        while self._own and len(batch) < self._spec.max_unacked:
            self._deliver(self._own.popleft(), now, batch, own=True)
        if batch:
            return batch, None
        room = self._spec.max_unacked - group.counts[member]
        if room <= 0:
            return [], None
        soonest: float | None = None
        for key, held in list(group.pending.items()):
            if held.member == member:
                continue
            due = held.since + self._idle - now
            if due <= 0:
                self._deliver(key, now, batch)
                if len(batch) >= room:
                    return batch, None
            elif soonest is None or due < soonest:
                soonest = due
        if batch:
            return batch, None
        start = bisect.bisect_right(state.keys, group.cursor)
        for index in range(start, min(start + room, len(state.keys))):
            key = state.keys[index]
            group.hand(key, member, now)
            batch.append(state.messages[index])
            group.cursor = key
        return batch, soonest

    def _deliver(self, key: Key, now: float, batch: list[Entry], own: bool = False) -> None:
        """Hand the pending message `key` to this member (again, if `own`);
        one the topic no longer has (trimmed) is dropped."""
        held = self._group.pending.get(key)
        if held is None or (own and held.member != self._spec.member):
            return
        entry = self._state.entry(key)
        if entry is None:
            self._group.drop(key)
            return
        self._group.hand(key, self._spec.member, now)
        batch.append(entry)

    def close(self) -> None:
        if self._joined:
            self._joined = False
            self._group.members -= 1
