"""The hub on Redis Streams: topics shared by every server on one Redis (the `redis` extra).

Each topic is one stream, `agentscope:hub:{<topic>}`: the braces make the
topic a hash tag, so a topic's keys stay in one slot of a Redis Cluster and
no command spans two slots (the connection itself is redis-py's single-node
client: a Cluster client is not wired in yet). An entry holds the message's protobuf bytes
under the field `m`; its offset is the entry id. `XADD ... MAXLEN ~ retention`
trims a topic as it grows (never below `retention` entries).

A subscriber reads with `XREAD BLOCK` from its last offset. It could only
miss a message if the retention trimmed one it had not read yet; that takes
at least `retention` newer messages, so only a full batch needs checking,
and then one script reads the stream's first entry and whether it was ever
trimmed (`XINFO STREAM`, Redis 7).
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..errors import HubUnavailableError, OffsetOutOfRangeError
from .store import (
    Entry,
    HubConfig,
    HubStore,
    Key,
    Subscription,
    format_offset,
    parse_offset,
    redacted_url,
    resume_check,
)

__all__ = ["RedisHubStore"]

_PREFIX = "agentscope:hub:"
_FIELD = b"m"
# Entries one read hands out at most (and the retention's floor for it).
_BATCH = 256
# A blocked read returns after this long with nothing, and reads again: a
# connection that died without a word is noticed, and a read left behind by
# a cancelled subscriber (see `read`) ends.
_BLOCK_MS = 5_000
# How long Redis has to answer beyond that: the connection's read timeout is
# their sum (redis-py's default, 5 s, would end every idle blocked read as a
# failure).
_REPLY_S = 10.0

# [last offset, first retained offset or "", 1 if ever trimmed], or nil for
# a topic with no stream yet. entries-added (Redis 7) counts every XADD; a
# Redis without it is taken as having trimmed.
_STATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local f = {}
for i = 1, #info, 2 do f[info[i]] = info[i + 1] end
local first = ''
if f['length'] > 0 then first = f['first-entry'][1] end
local trimmed = 1
if f['entries-added'] and f['entries-added'] <= f['length'] then trimmed = 0 end
return {f['last-generated-id'], first, trimmed}
"""


def _key(topic: str) -> str:
    return f"{_PREFIX}{{{topic}}}"


def _left_behind(read: asyncio.Future[Any]) -> None:
    """A read nobody waits for any more: its outcome is of no interest (and
    an error left unretrieved would be logged as a bug)."""
    if not read.cancelled():
        read.exception()


def _unavailable(exc: RedisError) -> HubUnavailableError:
    return HubUnavailableError(f"the hub store failed: {type(exc).__name__}: {exc}")


class RedisHubStore(HubStore):
    """Topics in Redis Streams, shared by every server using the same Redis."""

    def __init__(self, client: aioredis.Redis, config: HubConfig) -> None:
        self._client = client
        self._retention = str(config.retention)
        self._batch = min(_BATCH, config.retention)
        self._state = client.register_script(_STATE)

    @classmethod
    async def connect(cls, config: HubConfig) -> RedisHubStore:
        """A store on the Redis `config.url` names, once it answers a PING."""
        client = aioredis.Redis.from_url(
            config.url, socket_connect_timeout=5, socket_timeout=_BLOCK_MS / 1000 + _REPLY_S
        )
        try:
            await client.ping()
        except (RedisError, OSError) as exc:
            await client.aclose()
            raise HubUnavailableError(f"cannot reach {redacted_url(config.url)}: {exc}") from None
        return cls(client, config)

    async def publish(self, topic: str, msg: bytes) -> str:
        try:
            offset: bytes = await self._client.execute_command(  # type: ignore[no-untyped-call]
                "XADD", _key(topic), "MAXLEN", "~", self._retention, "*", _FIELD, msg
            )
        except RedisError as exc:
            raise _unavailable(exc) from None
        return offset.decode()

    async def state(self, key: str) -> tuple[Key, Key | None, bool]:
        """The stream's last offset, its oldest retained one, whether it was ever trimmed."""
        try:
            reply: Any = await self._state(keys=[key])
        except RedisError as exc:
            raise _unavailable(exc) from None
        if reply is None:
            return (0, 0), None, False
        last, first, trimmed = reply
        oldest = parse_offset(first.decode()) if first else None
        return parse_offset(last.decode()), oldest, trimmed == 1

    async def subscribe(self, topic: str, after: str) -> Subscription:
        key = _key(topic)
        last, first, trimmed = await self.state(key)
        if not after:
            return _RedisSubscription(self, key, format_offset(last))
        resume_check(parse_offset(after), last, first, trimmed)
        return _RedisSubscription(self, key, after)

    async def read(self, key: str, cursor: str) -> list[Entry]:
        """Up to a batch of entries after `cursor` (none after `_BLOCK_MS`)."""
        # redis-py (8.1) can swallow a cancellation that arrives while a
        # command starts, and the subscriber's RPC would then wait for the
        # read to end; shielded, the RPC ends at once and the read, told to
        # stop, ends within _BLOCK_MS at most.
        read = asyncio.ensure_future(
            self._client.xread({key: cursor}, count=self._batch, block=_BLOCK_MS)
        )
        try:
            reply: Any = await asyncio.shield(read)
        except asyncio.CancelledError:
            read.cancel()
            read.add_done_callback(_left_behind)
            raise
        except RedisError as exc:
            raise _unavailable(exc) from None
        if not reply:
            return []
        return [(offset, fields[_FIELD]) for offset, fields in reply[0][1]]

    @property
    def batch(self) -> int:
        return self._batch

    async def close(self) -> None:
        await self._client.aclose()


class _RedisSubscription(Subscription):
    def __init__(self, store: RedisHubStore, key: str, after: str) -> None:
        self._store = store
        self._key = key
        self._cursor = after
        self.after = after

    async def next(self) -> list[Entry]:
        while True:
            batch = await self._store.read(self._key, self._cursor)
            if not batch:
                continue
            if len(batch) == self._store.batch:
                await self._check()
            self._cursor = batch[-1][0].decode()
            return batch

    async def _check(self) -> None:
        """Refuse to go on past messages the retention trimmed before this read."""
        _, first, trimmed = await self._store.state(self._key)
        if trimmed and (first is None or first > parse_offset(self._cursor)):
            raise OffsetOutOfRangeError(
                "after", "this subscriber fell behind the topic's retention", "expired"
            )
