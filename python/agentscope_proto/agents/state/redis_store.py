"""Sessions' states and leases in Redis, shared by every replica using it
(the `redis` extra).

Each session has the keys `agentscope:session:{<agent>/<session>}:state:v2`
(a hash: the `SessionState` bytes without its context under `s`, their
version under `v`), `...:context:v2` (a list: the context's `Msg` bytes,
oldest first; a save trims it to what it kept and pushes the new messages,
so a turn sends its own messages, not the whole conversation again),
`...:lease` (the holder's token, with a time to live; `<token>:idle` for a
lease held idle after a call), `...:interrupt` (a caller's request to
interrupt the reply running there, on whichever replica runs it), and a
stream per reply, `...:reply:<reply id>` (an entry's bytes under `d`; the
entry id is its position), which expires a while after its last entry. A
session saved by an earlier version (`state:v1`: the whole `SessionState`
under `s`) is read as it is, and written as v2 by its next save. The braces
make the agent and session a hash tag (`_redis.hash_tag`: escaped, so that no
other agent's or session's keys are the same), so a session's keys share one
slot of a Redis Cluster and each script below touches one slot. `<agent>` is
the served agent's name: agents served on one Redis keep their sessions apart.
The encoding's version is in the key: a later encoding is stored beside it.

Every step that must see and change a key at once is one Lua script (Redis
runs each alone): a save checks the lease and writes in one step, so a
replica whose lease ran out cannot overwrite its successor's state. A
replica hears about the sessions it holds on its pub/sub channel
`agentscope:replica:<token>`, which the scripts publish to.

The URL may name any node of a Redis Cluster: the store asks the server
whether it is one (`INFO cluster`) and then talks to the whole cluster,
each session's keys on the node of their slot.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..._redis import ScriptCalls, connect_redis, hash_tag
from ...errors import StateUnavailableError
from ...service.config import redacted_url
from .store import Entry, Holder, LeaseLost, Notice, Renewed, Save, StateStore, Stored

__all__ = ["RedisStateStore", "unavailable"]

logger = logging.getLogger("agentscope_proto.agents")

# Each replica's notices (`StateStore.notices`), by its token: a session it
# holds the lease of is wanted (`w<session>`), or its call to be interrupted
# (`i<session>`). Pub/sub: a cluster's nodes pass each message to all.
_CHANNEL = "agentscope:replica:"
# A lease is its holder's token: `<owner>` held for a call, `<owner>:idle`
# held idle after one (`Save.hold_ms`). `_HOLDER` (Lua) gives a lease's
# owner and whether it is held idle.
_HOLDER = """
local function holder(lease)
  if lease == false then
    return false, false
  end
  if string.sub(lease, -5) == ':idle' then
    return string.sub(lease, 1, -6), true
  end
  return lease, false
end
-- Whether a call's holder (`Holder`: owner, base version) is fenced out:
-- another holds the lease, or none does and the state moved on from base.
local function fenced(lease_key, state_key, v1_key, owner, base)
  local lease = redis.call('GET', lease_key)
  if lease then
    return holder(lease) ~= owner
  end
  local version = redis.call('HGET', state_key, 'v') or redis.call('HGET', v1_key, 'v') or 0
  return tonumber(version) ~= tonumber(base)
end
"""
# KEYS: lease, state (v2), interrupt, state v1. ARGV: owner, ttl ms, the
# session's id. The lease taken if free or the caller's: the stored
# state's version (0: none); else -1, and its holder told it is wanted.
_ACQUIRE = (
    _HOLDER
    + """
local owner, idle = holder(redis.call('GET', KEYS[1]))
if owner == false or (owner == ARGV[1] and idle) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  -- A new call's turn: an interrupt asked for before it is void.
  redis.call('DEL', KEYS[3])
elseif owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  redis.call('PUBLISH', '"""
    + _CHANNEL
    + """' .. owner, 'w' .. ARGV[3])
  return -1
end
return tonumber(redis.call('HGET', KEYS[2], 'v') or redis.call('HGET', KEYS[4], 'v') or 0)
"""
)
# KEYS: state (v2), context, state v1. {version, rest or whole state, 1 if
# whole (v1), the context's messages...}; {} if none.
_LOAD = """
local version, rest = unpack(redis.call('HMGET', KEYS[1], 'v', 's'))
if rest then
  local out = {version, rest, 0}
  for _, msg in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
    out[#out + 1] = msg
  end
  return out
end
version, rest = unpack(redis.call('HMGET', KEYS[3], 'v', 's'))
if rest then
  return {version, rest, 1}
end
return {}
"""
# KEYS: lease, interrupt, state (v2), state v1. ARGV: owner, ttl ms, base
# version. 0: the lease is lost (fenced); 1: renewed (held for a call from
# now on, taken back if it had run out); 2: renewed, and a caller asked to
# interrupt the call (taken).
_RENEW = (
    _HOLDER
    + """
if fenced(KEYS[1], KEYS[3], KEYS[4], ARGV[1], ARGV[3]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('DEL', KEYS[2]) == 1 then
  return 2
end
return 1
"""
)
# KEYS: lease. ARGV: owner, 1 to give it up only if held idle (not if a
# call took it back meanwhile).
_RELEASE = (
    _HOLDER
    + """
local owner, idle = holder(redis.call('GET', KEYS[1]))
if owner == ARGV[1] and (idle or ARGV[2] == '0') then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
)
# KEYS: lease, interrupt. ARGV: ttl ms, the session's id. A call's holder
# takes the request at its next renewal; an idle holder is told (the call
# may have begun there before its first renewal).
_INTERRUPT = (
    _HOLDER
    + """
local owner, idle = holder(redis.call('GET', KEYS[1]))
if owner == false then
  return 0
end
if idle then
  redis.call('PUBLISH', '"""
    + _CHANNEL
    + """' .. owner, 'i' .. ARGV[2])
else
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
end
return 1
"""
)
# A session's save (a Lua function: `_SAVE` runs it alone, `_APPEND` with a
# reply's last entries). K: the lease, the state (v2), its context, the
# state v1, the interrupt; ARGV from `at`: owner, base version, state bytes,
# idle ms, how long to hold the lease idle (0: give it up), how many stored
# messages to keep, then the new ones. The new version, or -1 when the
# holder is fenced out.
_SAVE_FUNCTION = (
    _HOLDER
    + """
local function save(K, at)
if fenced(K[1], K[2], K[4], ARGV[at], ARGV[at + 1]) then
  return -1
end
at = at + 1
local version = tonumber(redis.call('HGET', K[2], 'v') or redis.call('HGET', K[4], 'v') or 0)
redis.call('DEL', K[4])
redis.call('HSET', K[2], 's', ARGV[at + 1], 'v', version + 1)
local kept = tonumber(ARGV[at + 4])
if kept == 0 then
  redis.call('DEL', K[3])
elseif redis.call('LLEN', K[3]) > kept then
  redis.call('LTRIM', K[3], 0, kept - 1)
end
-- In slices: Lua unpacks a few thousand values at most.
for first = at + 5, #ARGV, 1000 do
  redis.call('RPUSH', K[3], unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
redis.call('PEXPIRE', K[2], ARGV[at + 2])
redis.call('PEXPIRE', K[3], ARGV[at + 2])
if ARGV[at + 3] == '0' then
  redis.call('DEL', K[1])
else
  redis.call('SET', K[1], ARGV[at - 1] .. ':idle', 'PX', ARGV[at + 3])
end
-- The call ended: an interrupt asked for it is void.
redis.call('DEL', K[5])
return version + 1
end
"""
)
_SAVE = _SAVE_FUNCTION + "return save(KEYS, 1)\n"
# KEYS: the reply's stream, then (fenced) the save's. ARGV: keep ms, how many
# entries, the entries, then (fenced) the holder's owner and base version,
# then (with a save) the rest of the save's. The save's version (0: no save;
# -1: the holder is fenced out, nothing written), then the entries' ids.
_APPEND = """
local count = tonumber(ARGV[2])
local out = {0}
if #ARGV > 4 + count then
  out[1] = save({KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]}, 3 + count)
  if out[1] < 0 then
    return out
  end
elseif #KEYS > 1 and fenced(KEYS[2], KEYS[3], KEYS[5], ARGV[3 + count], ARGV[4 + count]) then
  return {-1}
end
for i = 3, 2 + count do
  out[#out + 1] = redis.call('XADD', KEYS[1], '*', 'd', ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return out
"""


def unavailable(exc: RedisError) -> StateUnavailableError:
    """What callers get: the error's kind, not the store's address (the
    server's log has it)."""
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        logger.warning("the state store failed: %s: %s", type(exc).__name__, exc)
        return StateUnavailableError(
            f"the state store failed: {type(exc).__name__} (the server's log has the details)"
        )
    return StateUnavailableError(f"the state store failed: {type(exc).__name__}: {exc}")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


class RedisStateStore(StateStore):
    """Sessions in Redis (see the module doc)."""

    def __init__(self, client: Any, agent: str) -> None:
        # redis-py's `Redis`, or its `RedisCluster` (the same commands); what
        # else the served agent keeps in Redis (A2A tasks) uses it too.
        self.client = client
        self._agent = agent
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._interrupt = client.register_script(_INTERRUPT)
        self._save = client.register_script(_SAVE)
        self._load = client.register_script(_LOAD)
        self._append = client.register_script(_SAVE_FUNCTION + _APPEND)
        # Concurrent sessions' script calls go together (group commit).
        self._calls = ScriptCalls(client)

    @classmethod
    async def connect(cls, url: str, agent: str) -> RedisStateStore:
        """A store on the Redis `url` names, once it answers a PING; `agent`
        keeps this agent's sessions apart from others' on the same Redis."""
        try:
            client = await connect_redis(url)
        except (RedisError, OSError) as exc:
            raise StateUnavailableError(f"cannot reach {redacted_url(url)}: {exc}") from None
        return cls(client, agent)

    def _base(self, session_id: str) -> str:
        return f"agentscope:session:{hash_tag(self._agent, session_id)}"

    def _keys(self, session_id: str) -> tuple[str, str]:
        base = self._base(session_id)
        return f"{base}:lease", f"{base}:state:v2"

    def _state_keys(self, session_id: str) -> list[str]:
        """The state's, its context's and the earlier encoding's."""
        base = self._base(session_id)
        return [f"{base}:state:v2", f"{base}:context:v2", f"{base}:state:v1"]

    def _interrupt_key(self, session_id: str) -> str:
        return f"{self._base(session_id)}:interrupt"

    async def _run(
        self, script: Any, keys: list[str], args: list[Any], linger_s: float = 0.0
    ) -> Any:
        try:
            return await self._calls.run(script, keys, args, linger_s)
        except RedisError as exc:
            raise unavailable(exc) from None

    async def acquire(self, session_id: str, owner: str, ttl_ms: int) -> int | None:
        lease, state = self._keys(session_id)
        keys = [lease, state, self._interrupt_key(session_id), self._state_keys(session_id)[2]]
        version = int(await self._run(self._acquire, keys, [owner, ttl_ms, session_id]))
        return None if version < 0 else version

    async def renew(self, session_id: str, holder: Holder, ttl_ms: int) -> Renewed:
        lease, state = self._keys(session_id)
        keys = [lease, self._interrupt_key(session_id), state, self._state_keys(session_id)[2]]
        args = [holder.owner, ttl_ms, holder.base]
        return Renewed(int(await self._run(self._renew, keys, args)))

    async def request_interrupt(self, session_id: str, ttl_ms: int) -> None:
        lease, _ = self._keys(session_id)
        keys = [lease, self._interrupt_key(session_id)]
        await self._run(self._interrupt, keys, [ttl_ms, session_id])

    async def release(self, session_id: str, owner: str, *, only_idle: bool = False) -> None:
        lease, _ = self._keys(session_id)
        await self._run(self._release, [lease], [owner, "1" if only_idle else "0"])

    async def notices(self, owner: str) -> AsyncIterator[tuple[Notice, str]]:
        pubsub = self.client.pubsub()
        try:
            await pubsub.subscribe(f"{_CHANNEL}{owner}")
            yield Notice.LISTENING, ""
            async for message in pubsub.listen():
                if message.get("type") == "message":
                    data = _text(message["data"])
                    with contextlib.suppress(ValueError):
                        yield Notice(data[:1]), data[1:]
        except RedisError as exc:
            raise unavailable(exc) from None
        finally:
            await pubsub.aclose()

    async def version(self, session_id: str) -> int:
        state, _, earlier = self._state_keys(session_id)
        try:
            version = await self.client.hget(state, "v") or await self.client.hget(earlier, "v")
        except RedisError as exc:
            raise unavailable(exc) from None
        return int(version or 0)

    async def load(self, session_id: str) -> Stored | None:
        found = await self._run(self._load, self._state_keys(session_id), [])
        if not found:
            return None
        version, state, whole, *context = found
        if int(whole):
            return Stored(_bytes(state), int(version or 0))  # v1: context inside
        return Stored(_bytes(state), int(version or 0), tuple(map(_bytes, context)))

    async def save(self, session_id: str, save: Save) -> int:
        keys, args = self._save_keys(session_id), self._save_args(save)
        version = int(await self._run(self._save, keys, args, save.gather_ms / 1000))
        if version < 0:
            raise LeaseLost(session_id)
        return version

    def _save_keys(self, session_id: str) -> list[str]:
        lease, _ = self._keys(session_id)
        return [lease, *self._state_keys(session_id), self._interrupt_key(session_id)]

    @staticmethod
    def _save_args(save: Save) -> list[Any]:
        holder = save.holder
        args = [holder.owner, holder.base, save.state, save.idle_ms, save.hold_ms, save.kept]
        return [*args, *save.context]

    async def append(
        self,
        session_id: str,
        reply_id: str,
        entries: list[bytes],
        keep_ms: int,
        holder: Holder | None = None,
        save: Save | None = None,
    ) -> tuple[list[str], int | None]:
        keys = [f"{self._base(session_id)}:reply:{reply_id}"]
        args: list[Any] = [keep_ms, len(entries), *entries]
        if save is not None:
            keys += self._save_keys(session_id)
            args += self._save_args(save)
        elif holder is not None:
            keys += self._save_keys(session_id)
            args += [holder.owner, holder.base]
        linger_s = save.gather_ms / 1000 if save is not None else 0.0
        version, *positions = await self._run(self._append, keys, args, linger_s)
        if int(version) < 0:
            raise LeaseLost(session_id)
        return [_text(position) for position in positions], int(version) if save else None

    async def read(
        self, session_id: str, reply_id: str, after: str, wait_ms: int
    ) -> list[Entry] | None:
        key = f"{self._base(session_id)}:reply:{reply_id}"
        found: Any
        try:
            found = await self.client.xrange(key, min=f"({after}" if after else "-", count=512)
            if not found:
                if not await self.client.exists(key):
                    return None
                if wait_ms > 0:
                    streams: Any = await self.client.xread(
                        {key: after or "0-0"}, count=512, block=wait_ms
                    )
                    found = streams[0][1] if streams else []
        except RedisError as exc:
            raise unavailable(exc) from None
        return [Entry(_text(position), fields[b"d"]) for position, fields in found]

    async def last(self, session_id: str, reply_id: str) -> Entry | None:
        key = f"{self._base(session_id)}:reply:{reply_id}"
        found: Any
        try:
            found = await self.client.xrevrange(key, count=1)
        except RedisError as exc:
            raise unavailable(exc) from None
        return Entry(_text(found[0][0]), found[0][1][b"d"]) if found else None

    async def leased(self, session_id: str) -> bool:
        lease, _ = self._keys(session_id)
        try:
            token = await self.client.get(lease)
        except RedisError as exc:
            raise unavailable(exc) from None
        return token is not None and not _text(token).endswith(":idle")

    async def close(self) -> None:
        await self._calls.close()
        await self.client.aclose()
