"""The hub on Redis Streams: topics shared by every server on one Redis (the `redis` extra).

Each topic is one stream, `agentscope:hub:{<topic>}`: the braces make the
topic a hash tag, so a topic's keys stay in one slot of a Redis Cluster and
no command spans two slots. The URL may name any node of a Redis Cluster:
the store asks the server whether it is one (`INFO cluster`) and then talks
to the whole cluster, each topic on the node of its slot. An entry holds
the message's protobuf bytes under the field `m` and the stream's epoch under `e`; its offset is the
entry id and the epoch (see `store`). The epoch is drawn when the stream is
created and copied from its last entry by every publish after, so a stream
Redis lost (a restart without persistence, FLUSHALL, a failover to an empty
replica) comes back with another: an offset of the lost one is refused on
resuming, and a live subscription that reads an entry of another epoch ends,
both OUT_OF_RANGE (`lost`), never skipping past the loss in silence.
`XADD ... MAXLEN ~ retention` trims a topic as it grows (never below
`retention` entries), and with `retention_seconds`, `XTRIM ... MINID ~`
its entries older than that (never a newer one); publishes are one script
call per topic, its XADDs in order. Every script call goes through one
`ScriptCalls`: those made while a batch is on its way (concurrent
publishes, acks, group reads) go together in the next, one write and one
round trip; blocked reads have connections of their own (redis-py's pool).

Subscriptions read with `XREAD BLOCK` from their last offset: on their own
until they have caught up with their topic's `_Tail` (the one blocked read
of that topic on this server), then from it. A read could only miss a
message if the retention trimmed one not read yet; that takes at least
`retention` newer messages, so only a full batch needs checking, and then
one script reads the stream's first entry and whether it was ever trimmed
(`XINFO STREAM`, Redis 7).

A topic's consumer groups are the stream's own (`XGROUP CREATE ...
MKSTREAM`, by a group's first member). A member reads with one script: what
it held and had not acknowledged when it joined (`XREADGROUP` from 0), else
messages other members held unacknowledged past the member's `claim_idle_ms`
(`XAUTOCLAIM`, or `XCLAIM` while it holds an idle one of its own), else new
ones (`XREADGROUP >`), no more than its room under `max_unacked` (its count
in `XPENDING`). With nothing to read, it waits in a plain blocked `XREAD`
after the stream's last entry (a while at most, so that claims are looked
for again), then reads with the script: a blocked `XREADGROUP` would take
messages into the member's hands even when its subscriber left while it
waited, and they would wait for `claim_idle_ms` before anyone received them.
`Ack` is one script: every offset must be pending with the member
(`XPENDING`) before any is acknowledged (`XACK`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Awaitable, Sequence
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .._redis import ScriptCalls, connect_redis
from ..errors import HubUnavailableError, LimitExceededError, OffsetOutOfRangeError
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
    lost,
    not_pending,
    offset_epoch,
    parse_offset,
    redacted_url,
    resume_check,
    too_many_groups,
    unknown_group,
    woken,
)

__all__ = ["RedisHubStore"]

logger = logging.getLogger("agentscope_proto.hub")

_PREFIX = "agentscope:hub:"
_FIELD = b"m"
_EPOCH = b"e"
# Entries one read hands out at most (and the retention's floor for it).
_BATCH = 256
# A blocked read returns after this long with nothing, and reads again: a
# connection that died without a word is noticed, and a read left behind by
# a cancelled subscriber (see `read`) ends.
_BLOCK_MS = 5_000
# Entries handed to a subscription and not taken yet past which it leaves
# its topic's tail and reads for itself (its client is slow); past
# `subscriber_buffer_mb` of their bytes first, it ends (RESOURCE_EXHAUSTED).
_BEHIND = 4096
# The epoch of the stream KEYS[1]: its last entry's, or "" (none, or an
# entry written before epochs).
_LAST_EPOCH = """
local function last_epoch(key)
  local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
  if last == nil then return '' end
  for i = 1, #last[2], 2 do
    if last[2][i] == 'e' then return last[2][i + 1] end
  end
  return ''
end
"""

# [last offset, first retained offset or "", 1 if ever trimmed, epoch], or
# nil for a topic with no stream yet. entries-added (Redis 7) counts every
# XADD; a Redis without it is taken as having trimmed.
_STATE = (
    _LAST_EPOCH
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local f = {}
for i = 1, #info, 2 do f[info[i]] = info[i + 1] end
local first = ''
if f['length'] > 0 then first = f['first-entry'][1] end
local trimmed = 1
if f['entries-added'] and f['entries-added'] <= f['length'] then trimmed = 0 end
return {f['last-generated-id'], first, trimmed, last_epoch(KEYS[1])}
"""
)


# Appends ARGV[4..] to the stream KEYS[1] (MAXLEN ~ ARGV[1]) in order, each
# with the stream's epoch (ARGV[2], fresh, for a stream that has none): one
# round trip for a batch of one topic, and its subscribers' XREAD BLOCK wakes
# once for all of it. With ARGV[3] > 0, then trims the entries older than
# ARGV[3] ms by Redis's clock (MINID ~: whole nodes, never a newer entry).
# Returns {epoch, ids} or, at the first XADD that fails (maxmemory, say),
# {epoch, ids so far, its error}: nothing after it is added, so no message
# overtakes one that failed.
_PUBLISH = (
    _LAST_EPOCH
    + """
local ok, epoch = pcall(last_epoch, KEYS[1])
if not ok then return {'', {}, epoch.err or tostring(epoch)} end
if epoch == '' then epoch = ARGV[2] end
local ids = {}
for i = 4, #ARGV do
  local id = redis.pcall(
    'XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'm', ARGV[i], 'e', epoch)
  if type(id) == 'table' and id.err then return {epoch, ids, id.err} end
  ids[#ids + 1] = id
end
local age = tonumber(ARGV[3])
if age > 0 then
  local now = redis.call('TIME')
  local oldest = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - age
  redis.call('XTRIM', KEYS[1], 'MINID', '~', math.max(oldest, 0))
end
return {epoch, ids}
"""
)


# Makes the group ARGV[1] of the stream KEYS[1] (and the stream) unless it
# exists, starting after ARGV[2] ('$': the end, '0': the start): 1 made, 0
# there already, -1 the stream has ARGV[3] groups already.
_CREATE_GROUP = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
  for _, group in ipairs(groups) do
    if group[2] == ARGV[1] then return 0 end
  end
  if #groups >= tonumber(ARGV[3]) then return -1 end
end
redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM')
return 1
"""

# What the member ARGV[2] of the group ARGV[1] of the stream KEYS[1] reads
# now: with ARGV[5] an id, what it holds after that id (entries the
# retention trimmed are acknowledged: nothing is left to deliver); else,
# within its room under ARGV[3] unacknowledged, entries other members held
# more than ARGV[4] ms, else new ones. {room, entries}. XAUTOCLAIM (a
# bounded scan of the group's pending entries) takes the claimer's own idle
# entries too, which would hand them to it again and restart their idle
# time, so that another member might never get them: while the member holds
# an idle entry (checked in its own list, at most max_unacked long), the
# group's idle entries are listed instead (of the first room + held, at most
# `held` are its own) and the others' claimed (XCLAIM).
_GROUP_READ = """
local key, group, member = KEYS[1], ARGV[1], ARGV[2]
if ARGV[5] ~= '' then
  local read = redis.call('XREADGROUP', 'GROUP', group, member, 'COUNT', ARGV[3],
    'STREAMS', key, ARGV[5])
  local kept = {}
  for _, entry in ipairs(read[1][2]) do
    if entry[2] then kept[#kept + 1] = entry else redis.call('XACK', key, group, entry[1]) end
  end
  return {#read[1][2], kept}
end
local held = 0
local summary = redis.call('XPENDING', key, group)
if summary[4] then
  for _, consumer in ipairs(summary[4]) do
    if consumer[1] == member then held = tonumber(consumer[2]) end
  end
end
local room = tonumber(ARGV[3]) - held
if room <= 0 then return {0, {}} end
local claimed = {}
if #redis.call('XPENDING', key, group, 'IDLE', ARGV[4], '-', '+', 1, member) == 0 then
  claimed = redis.call('XAUTOCLAIM', key, group, member, ARGV[4], '0-0', 'COUNT', room)[2]
else
  local others = {}
  local idle = redis.call('XPENDING', key, group, 'IDLE', ARGV[4], '-', '+', room + held)
  for _, pending in ipairs(idle) do
    if pending[2] ~= member and #others < room then others[#others + 1] = pending[1] end
  end
  if #others > 0 then
    -- (Entries the retention trimmed leave the pending list, unclaimed.)
    claimed = redis.call('XCLAIM', key, group, member, ARGV[4], unpack(others))
  end
end
if #claimed > 0 then return {room, claimed} end
local read = redis.call('XREADGROUP', 'GROUP', group, member, 'COUNT', room, 'STREAMS', key, '>')
if read then return {room, read[1][2]} end
local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
return {room, {}, last and last[1] or '0-0'}
"""

# Acknowledges the offsets ARGV[3..] (`<id>.<epoch>`, or an id) for the
# member ARGV[2] of the group ARGV[1] of the stream KEYS[1] if every one is
# pending with it, and of the stream's epoch: minus how many were; else the
# (1-based) index of the first that is not, nothing acknowledged.
_ACK = (
    _LAST_EPOCH
    + """
local epoch = last_epoch(KEYS[1])
local ids = {}
for i = 3, #ARGV do
  local id, of = string.match(ARGV[i], '^([^.]*)%.?(.*)$')
  local held = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
  if #held == 0 or held[1][2] ~= ARGV[2] or (of ~= '' and of ~= epoch) then return i - 2 end
  ids[#ids + 1] = id
end
return -redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
"""
)


def _key(topic: str) -> str:
    return f"{_PREFIX}{{{topic}}}"


def _left_behind(read: asyncio.Future[Any]) -> None:
    """A read nobody waits for any more: its outcome is of no interest (and
    an error left unretrieved would be logged as a bug)."""
    if not read.cancelled():
        read.exception()


def _unavailable(exc: RedisError) -> HubUnavailableError:
    """The error hub clients get. redis-py's connection errors name the
    store's address, which clients have no business knowing: they get the
    error's kind, the server's log the rest; Redis's own replies (WRONGTYPE,
    OOM, ...) name no address and go as they are."""
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        logger.warning("the hub store failed: %s: %s", type(exc).__name__, exc)
        return HubUnavailableError(
            f"the hub store failed: {type(exc).__name__} (the server's log has the details)"
        )
    return HubUnavailableError(f"the hub store failed: {type(exc).__name__}: {exc}")


def _bare(offset: bytes) -> str:
    """The stream entry id of an offset, as XREAD takes it."""
    return offset.partition(b".")[0].decode()


class RedisHubStore(HubStore):
    """Topics in Redis Streams, shared by every server using the same Redis."""

    def __init__(self, client: Any, config: HubConfig) -> None:
        # redis-py's `Redis`, or its `RedisCluster` (the same commands).
        self._client = client
        self._calls = ScriptCalls(client)
        self._retention = str(config.retention)
        self._age_ms = str(config.retention_seconds * 1000)
        self._batch = min(_BATCH, config.retention)
        self.buffer = config.subscriber_buffer_mb * 1024 * 1024
        self._state = client.register_script(_STATE)
        self._publish = client.register_script(_PUBLISH)
        self._create_group = client.register_script(_CREATE_GROUP)
        self.group_read = client.register_script(_GROUP_READ)
        self._ack = client.register_script(_ACK)
        # Set on every Ack this server stores: wakes the members waiting
        # for room under their max_unacked (acks through another server or
        # a direct client are seen at their next look, `_ROOM_POLL_S`).
        self.acked = asyncio.Event()
        # The topics followed by subscriptions on this server, one read each.
        self.tails: dict[str, _Tail] = {}

    @classmethod
    async def connect(cls, config: HubConfig) -> RedisHubStore:
        """A store on the Redis `config.url` names, once it answers a PING."""
        try:
            client = await connect_redis(config.url)
        except (RedisError, OSError) as exc:
            raise HubUnavailableError(f"cannot reach {redacted_url(config.url)}: {exc}") from None
        return cls(client, config)

    async def publish(self, topic: str, msg: bytes) -> str:
        try:
            reply = await self.run(
                self._publish, [_key(topic)], [self._retention, _new_epoch(), self._age_ms, msg]
            )
        except RedisError as exc:
            raise _unavailable(exc) from None
        (outcome,) = _outcomes(reply, 1)
        if isinstance(outcome, HubUnavailableError):
            raise outcome
        return outcome

    async def publish_many(self, messages: Sequence[tuple[str, bytes]]) -> list[Published]:
        # One script call per topic (a topic's key is one Cluster slot), sent
        # together (`run_all`: one batch); each message's result goes back to
        # its place.
        groups: dict[str, list[int]] = {}
        for index, (topic, _) in enumerate(messages):
            groups.setdefault(topic, []).append(index)
        calls: list[tuple[list[str], list[str | bytes]]] = [
            (
                [_key(topic)],
                [
                    self._retention,
                    _new_epoch(),
                    self._age_ms,
                    *(messages[i][1] for i in indexes),
                ],
            )
            for topic, indexes in groups.items()
        ]
        if len(calls) == 1:
            try:
                replies: list[Any] = [await self.run(self._publish, *calls[0])]
            except RedisError as exc:
                raise _unavailable(exc) from None
        else:
            replies = await self._calls.run_all(
                [(self._publish, keys, args) for keys, args in calls]
            )
        results: list[Published] = [""] * len(messages)
        for indexes, reply in zip(groups.values(), replies, strict=True):
            for index, outcome in zip(indexes, _outcomes(reply, len(indexes)), strict=True):
                results[index] = outcome
        return results

    async def state(self, key: str) -> tuple[Key, Key | None, bool, str]:
        """The stream's last offset, its oldest retained one, whether it was
        ever trimmed, its epoch."""
        try:
            reply: Any = await self.run(self._state, [key], [])
        except RedisError as exc:
            raise _unavailable(exc) from None
        if reply is None:
            return (0, 0), None, False, ""
        last, first, trimmed, epoch = reply
        oldest = parse_offset(first.decode()) if first else None
        return parse_offset(last.decode()), oldest, trimmed == 1, epoch.decode()

    async def subscribe(self, topic: str, after: str) -> Subscription:
        key = _key(topic)
        last, first, trimmed, epoch = await self.state(key)
        if not after:
            return _RedisSubscription(self, key, format_offset(last, epoch), epoch)
        if offset_epoch(after) not in ("", epoch):
            raise lost(after, format_offset(first, epoch) if first else "")
        resume_check(parse_offset(after), last, first, trimmed)
        return _RedisSubscription(self, key, after, epoch)

    async def join(self, topic: str, group: Group) -> Subscription:
        key = _key(topic)
        try:
            made = await self.run(
                self._create_group, [key], [group.name, "0" if group.earliest else "$", MAX_GROUPS]
            )
        except RedisError as exc:
            raise _unavailable(exc) from None
        if made == -1:
            raise too_many_groups()
        return _RedisMember(self, key, group)

    async def ack(self, topic: str, group: str, member: str, offsets: Sequence[str]) -> int:
        try:
            failed = int(await self.run(self._ack, [_key(topic)], [group, member, *offsets]))
        except ResponseError as exc:
            if "NOGROUP" in str(exc) or "no such key" in str(exc):
                raise unknown_group(group) from None
            raise _unavailable(exc) from None
        except RedisError as exc:
            raise _unavailable(exc) from None
        if failed > 0:
            raise not_pending(failed - 1, group, member)
        self.acked.set()
        self.acked = asyncio.Event()
        return -failed

    def run(self, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> Awaitable[Any]:
        """`script`'s reply (redis-py's `RedisError` as it is), sent with
        the other script calls of the moment."""
        return self._calls.run(script, keys, args)

    async def read(self, key: str, cursor: str) -> list[Entry]:
        """Up to a batch of entries after `cursor` (none after `_BLOCK_MS`)."""
        command = self._client.xread({key: cursor}, count=self._batch, block=_BLOCK_MS)
        try:
            return await _blocked(command)
        except ResponseError as exc:
            raise _unavailable(exc) from None

    async def wait_new(self, key: str, last: str, group: Group) -> None:
        """Once the stream has an entry after `last`, or after half of
        `group`'s claim_idle_ms (`_BLOCK_MS` at most)."""
        block = min(_BLOCK_MS, max(group.claim_idle_ms // 2, 50))
        try:
            await _blocked(self._client.xread({key: last}, count=1, block=block))
        except ResponseError as exc:
            raise _unavailable(exc) from None

    @property
    def batch(self) -> int:
        return self._batch

    async def close(self) -> None:
        await self._calls.close()
        await self._client.aclose()


async def _left_to_finish(command: Awaitable[Any], stop: bool = True) -> Any:
    """`command`'s reply, shielded from the caller's cancellation: redis-py
    (8.1) can swallow a cancellation that arrives while a command starts,
    and the subscriber's RPC would then wait for the read to end; shielded,
    the RPC ends at once. A read left behind is told to `stop` (it ends
    within _BLOCK_MS at most); a group's read is left to finish instead (a
    script call, it takes no time): what it takes stays pending with its
    member, delivered again when it comes back or claimed by another."""
    call = asyncio.ensure_future(command)
    try:
        return await asyncio.shield(call)
    except asyncio.CancelledError:
        if stop:
            call.cancel()
        call.add_done_callback(_left_behind)
        raise


async def _blocked(command: Awaitable[Any]) -> list[Entry]:
    """The entries a blocked XREAD of one stream returns (`ResponseError`
    as it is)."""
    try:
        reply: Any = await _left_to_finish(command)
    except ResponseError:
        raise
    except RedisError as exc:
        raise _unavailable(exc) from None
    if not reply:
        return []
    return [
        (offset + b"." + fields[_EPOCH] if _EPOCH in fields else offset, fields[_FIELD])
        for offset, fields in reply[0][1]
    ]


def _new_epoch() -> str:
    """An epoch for a stream that has none yet (the script keeps a stream's
    own). Drawn for every publish call, so from the cheap generator (seeded
    from the OS): it tells runs of a stream apart, it guards no secret."""
    return f"{random.getrandbits(32):08x}"


def _outcomes(reply: Any, count: int) -> list[Published]:
    """The `count` results of one `_PUBLISH` call from its reply (or error)."""
    if isinstance(reply, RedisError):
        return [_unavailable(reply)] * count
    if isinstance(reply, BaseException):  # not the store's (a cluster's call, gathered)
        raise reply
    epoch: str = reply[0].decode()
    ids: list[bytes] = reply[1]
    results: list[Published] = [f"{offset.decode()}.{epoch}" for offset in ids]
    if len(reply) > 2:
        failed = HubUnavailableError(f"the hub store refused the message: {reply[2].decode()}")
        results += [failed] * (count - len(ids))
    return results


class _Tail:
    """The one blocked `XREAD` of a topic on this server, its batches handed
    to every subscription of the topic that has caught up with it: a topic
    with n subscribers here costs one read and one reply's parsing per
    batch, not n. A subscription too far behind to be handed batches (a
    slow client) leaves it and reads for itself until it catches up again."""

    def __init__(self, store: RedisHubStore, key: str, cursor: str) -> None:
        self._store = store
        self._key = key
        # The last offset read, and where each listener was when it joined
        # (it skips what it had; None: it joined exactly here).
        self.cursor = cursor
        self.listeners: dict[_RedisSubscription, Key | None] = {}
        self._task = asyncio.ensure_future(self._run())

    def join(self, subscription: _RedisSubscription, cursor: Key) -> None:
        here = parse_offset(self.cursor)
        self.listeners[subscription] = None if cursor == here else cursor

    def leave(self, subscription: _RedisSubscription) -> None:
        self.listeners.pop(subscription, None)
        if not self.listeners:
            self._store.tails.pop(self._key, None)
            self._task.cancel()

    async def _run(self) -> None:
        try:
            while self.listeners:
                batch = await self._store.read(self._key, self.cursor)
                if not batch:
                    continue
                if len(batch) == self._store.batch:
                    await self._refuse_the_trimmed()
                self.cursor = _bare(batch[-1][0])
                for subscription, skip in list(self.listeners.items()):
                    if skip is None:
                        subscription.hand(batch)
                        continue
                    if parse_offset(self.cursor) >= skip:  # past where it joined
                        self.listeners[subscription] = None
                    subscription.hand([e for e in batch if parse_offset(e[0].decode()) > skip])
        except HubUnavailableError as exc:
            for subscription in list(self.listeners):
                subscription.fail(exc)
            self.listeners.clear()
        if self._store.tails.get(self._key) is self:
            del self._store.tails[self._key]

    async def _refuse_the_trimmed(self) -> None:
        """Fail the listeners past whose place the retention trimmed messages
        before this read (a full batch: they may have fallen behind)."""
        _, first, trimmed, _ = await self._store.state(self._key)
        if not trimmed:
            return
        here = parse_offset(self.cursor)
        for subscription, skip in list(self.listeners.items()):
            if first is None or first > (skip or here):
                del self.listeners[subscription]
                subscription.fail(_behind())


def _behind() -> OffsetOutOfRangeError:
    return OffsetOutOfRangeError(
        "after", "this subscriber fell behind the topic's retention", "expired"
    )


class _RedisSubscription(Subscription):
    """Reads for itself until it has caught up with the topic's `_Tail`
    (or starts one), then takes the tail's batches."""

    def __init__(self, store: RedisHubStore, key: str, after: str, epoch: str) -> None:
        self._store = store
        self._key = key
        self._cursor = after.partition(".")[0]
        self.after = after
        # The epoch of what this subscriber had; "": none yet (the first read's).
        self._epoch = offset_epoch(after) or epoch
        # Batches the tail handed over, not taken yet; the tail followed, if any.
        self._handed: deque[list[Entry]] = deque()
        self._pending = 0
        # The bytes of the messages in `_handed`: what this server holds for it.
        self.held = 0
        self._ready = asyncio.Event()
        self._tail: _Tail | None = None
        self._error: Exception | None = None

    def hand(self, batch: list[Entry]) -> None:
        """A batch from the tail (leaving it when too much waits: the client is slow)."""
        if not batch:
            return
        size = sum(len(msg) for _, msg in batch)
        # Past the buffer with something held already: one read's batch is
        # always taken (a read is the unit; it may exceed a small buffer).
        if self.held and self.held + size > self._store.buffer and self._tail is not None:
            self._tail.leave(self)
            megabytes = self._store.buffer // (1024 * 1024)
            self.fail(
                LimitExceededError(
                    "hub_subscriber_buffer_mb",
                    f"this subscriber fell more than {megabytes} MiB of messages behind its "
                    "topic; resume from the last offset received",
                )
            )
            return
        if self._pending >= _BEHIND and self._tail is not None:
            self._tail.leave(self)
            self._tail = None
            self._release()  # read again from Redis, from the cursor on
            self._ready.set()
            return
        self._handed.append(batch)
        self._pending += len(batch)
        self.held += size
        self._ready.set()

    def _release(self) -> None:
        """Drop the batches handed over and not taken."""
        self._handed.clear()
        self._pending = self.held = 0

    def fail(self, error: Exception) -> None:
        """End with `error` once what was handed before it is taken (all of
        it dropped when this subscriber is too far behind)."""
        self._tail = None
        self._error = error
        if isinstance(error, LimitExceededError):
            self._release()
        self._ready.set()

    async def next(self) -> list[Entry]:
        while True:
            if self._handed:
                batch = self._handed.popleft()
                self._pending -= len(batch)
                self.held -= sum(len(msg) for _, msg in batch)
                self._check_epoch(batch)
                self._cursor = _bare(batch[-1][0])
                return batch
            if self._error is not None:
                raise self._error
            if self._tail is not None:
                self._ready.clear()
                await self._ready.wait()
                continue
            if self._follow():
                continue
            batch = await self._store.read(self._key, self._cursor)
            if not batch:
                continue
            if len(batch) == self._store.batch:
                await self._check()
            self._check_epoch(batch)
            self._cursor = _bare(batch[-1][0])
            return batch

    def _follow(self) -> bool:
        """Join the topic's tail if this subscription has what it read (or
        start one here); False: read for itself to catch up first."""
        tail = self._store.tails.get(self._key)
        cursor = parse_offset(self._cursor)
        if tail is None:
            tail = self._store.tails[self._key] = _Tail(self._store, self._key, self._cursor)
        elif parse_offset(tail.cursor) > cursor:
            return False
        tail.join(self, cursor)
        self._tail = tail
        return True

    def close(self) -> None:
        if self._tail is not None:
            self._tail.leave(self)
            self._tail = None
        self._release()
        # A `next()` waiting for the tail ends (one reading for itself, once
        # its read returns), and none follows the topic again.
        self._error = closed_subscription()
        self._ready.set()

    def _check_epoch(self, batch: list[Entry]) -> None:
        """Refuse to go on into another epoch: the stream was lost and made
        again, and what this subscriber had not read of it is gone. (One
        reply reads one stream: its last entry's epoch is the batch's; an
        entry written before epochs has none, and passes.)"""
        epoch = offset_epoch(batch[-1][0].decode())
        if epoch and self._epoch and epoch != self._epoch:
            had = format_offset(parse_offset(self._cursor), self._epoch)
            raise lost(had, batch[0][0].decode())
        self._epoch = epoch or self._epoch

    async def _check(self) -> None:
        """Refuse to go on past messages the retention trimmed before this read."""
        _, first, trimmed, _ = await self._store.state(self._key)
        if trimmed and (first is None or first > parse_offset(self._cursor)):
            raise _behind()


def _group_lost(group: Group) -> OffsetOutOfRangeError:
    return OffsetOutOfRangeError(
        "group",
        f"the topic's group {group.name!r} is gone: its store lost it (emptied, restarted "
        "without persistence or failed over); subscribe again to make it anew",
        "lost",
    )


def _script_entries(entries: list[Any]) -> list[Entry]:
    """Stream entries as a script returns them ([id, [field, value, ...]]), as `Entry`s."""
    out: list[Entry] = []
    for offset, flat in entries:
        fields = dict(zip(flat[::2], flat[1::2], strict=True))
        epoch = fields.get(_EPOCH)
        out.append((offset + b"." + epoch if epoch else offset, fields[_FIELD]))
    return out


# How often a member held at its max_unacked looks again for room (acks
# through this server wake it at once).
_ROOM_POLL_S = 1.0


class _RedisMember(Subscription):
    """A consumer group member (see the module doc): one script call per
    batch, and a blocked read when there is room and nothing to read."""

    def __init__(self, store: RedisHubStore, key: str, group: Group) -> None:
        self._store = store
        self._key = key
        self._group = group
        self.after = ""
        # Where this member is in what it held when it joined ("": done).
        self._own = "0"
        self._closed = False

    async def next(self) -> list[Entry]:
        group = self._group
        args: list[str | int] = [group.name, group.member, group.max_unacked, group.claim_idle_ms]
        while True:
            if self._closed:  # takes nothing more into its pending list
                raise closed_subscription()
            try:
                room, entries, *last = await _left_to_finish(
                    self._store.run(self._store.group_read, [self._key], [*args, self._own]),
                    stop=False,
                )
            except ResponseError as exc:
                if "NOGROUP" in str(exc):
                    raise _group_lost(group) from None
                raise _unavailable(exc) from None
            except RedisError as exc:
                raise _unavailable(exc) from None
            if self._own:
                if room == 0:  # all of it delivered again
                    self._own = ""
                    continue
                self._own = entries[-1][0].decode() if entries else self._own
                if not entries:
                    continue
                return _script_entries(entries)
            if entries:
                return _script_entries(entries)
            if room > 0:
                await self._store.wait_new(self._key, last[0].decode(), group)
            else:
                await woken(self._store.acked, _ROOM_POLL_S)

    def close(self) -> None:
        self._closed = True
