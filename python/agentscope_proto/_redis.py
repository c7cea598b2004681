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

Script calls go through `ScriptCalls`: those made while a batch is on its way
go together in the next (group commit), so that under concurrent callers a
call costs a share of one round trip, not one of its own; a call may also
wait a little for others to join it (`linger_s`). Its batches go on a
connection redis-py opens (its handshake: TLS, AUTH, SELECT) and then hands
over (`_Batches`): a batch is one write, its replies parsed by hiredis as
they arrive, with none of redis-py's per-reply steps (a seventh of a lone
script call's CPU, bench/NOTES.md).

Keys whose parts callers name (an agent's and its session's, an agent's and
a task owner's) take their hash tag from `hash_tag`, which no two pairs of
names share.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis._parsers import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, NoScriptError, RedisError

__all__ = ["DEAD_S", "ScriptCalls", "connect_redis", "hash_tag"]

DEAD_S = 15
# The characters of a key's scope that `hash_tag` escapes.
_SCOPE_SPECIALS = frozenset("%/}")


def hash_tag(scope: str, name: str) -> str:
    """`{<scope>/<name>}`, the hash tag of the keys of one `name` (a session, a
    task owner) in one `scope` (the served agent), written so that no other
    pair gives the same text, however both were chosen: the scope's `%`, `/`
    and `}` are percent-escaped (the first `/` ends it), the name's `}` doubled
    (its end is the `}` a `:` follows). Without those, an agent `a`'s session
    `b/c` was agent `a/b`'s session `c`, and a session's key with a suffix
    (`...}:reply:<id>`) could be another session's. Plain names read as they
    are. The keys of one pair share their text up to the name's end, so a
    Redis Cluster puts them in one slot (its tag ends at the first `}`)."""
    if not _SCOPE_SPECIALS.isdisjoint(scope):  # `%` first, so that the text reads back
        scope = scope.replace("%", "%25").replace("/", "%2F").replace("}", "%7D")
    if "}" in name:
        name = name.replace("}", "}}")
    return f"{{{scope}/{name}}}"


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


def _packed(connection: Any, commands: list[tuple[Any, ...]]) -> bytes:
    """The commands in Redis's protocol: by hiredis where it takes every
    argument (the same bytes as redis-py's packer), else by redis-py's."""
    try:
        return b"".join(map(hiredis.pack_command, commands))
    except TypeError:
        return b"".join(connection.pack_commands(commands))


class _Batches(asyncio.Protocol):
    """The batches' connection, taken over from redis-py once it opened it:
    a batch is one write, and its replies, parsed by hiredis as they arrive
    (an error reply as the exception redis-py would raise), settle its
    `exchange` once the last is in. `received` holds those of a batch cut
    off by a lost connection."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection  # redis-py's, kept to pack what hiredis cannot
        self._reader = hiredis.Reader(
            protocolError=InvalidResponse, replyError=BaseParser.parse_error
        )
        self.received: list[Any] = []
        self._expected = 0
        self._done: asyncio.Future[list[Any]] | None = None
        self._lost: RedisError | None = None
        # Detached from redis-py, which no longer reads, writes or closes it;
        # its streams are kept (a stream writer collected closes its socket).
        self._streams = (connection._reader, connection._writer)
        connection._reader = connection._writer = None
        self._transport: asyncio.Transport = self._streams[1].transport
        self._transport.set_protocol(self)

    @classmethod
    async def open(cls, client: Any) -> _Batches:
        # RESP2, whatever the client speaks: a script's replies are RESP2's
        # anyway, and no push message (RESP3's) can come between them.
        pool = client.connection_pool
        connection = pool.connection_class(**{**pool.connection_kwargs, "protocol": 2})
        await connection.connect()
        return cls(connection)

    def exchange(self, data: bytes, count: int) -> asyncio.Future[list[Any]]:
        """Send `data` (`count` commands): their replies, once all are in."""
        self.received = []
        self._expected = count
        self._done = asyncio.get_running_loop().create_future()
        if self._lost is not None:
            self._done.set_exception(self._lost)
        else:
            self._transport.write(data)
        return self._done

    def data_received(self, data: bytes) -> None:
        self._reader.feed(data)
        try:
            while (reply := self._reader.gets()) is not False:
                self.received.append(reply)
        except InvalidResponse as exc:  # not Redis's protocol: nothing more is read
            self._transport.abort()
            self._end(exc)
            return
        done = self._done
        if done is not None and len(self.received) >= self._expected and not done.done():
            done.set_result(self.received)

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(RedisConnectionError(f"connection to Redis lost: {exc or 'closed'}"))

    def _end(self, error: RedisError) -> None:
        if self._lost is None:
            self._lost = error
        if self._done is not None and not self._done.done():
            self._done.set_exception(self._lost)

    def close(self) -> None:
        self._transport.close()


class _Call:
    """A script call waiting for its batch, and where its reply goes."""

    __slots__ = ("args", "future", "keys", "loaded", "script")

    def __init__(self, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> None:
        self.script, self.keys, self.args = script, keys, args
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.loaded = False  # sent again once its script was loaded

    def command(self) -> tuple[Any, ...]:
        return ("EVALSHA", self.script.sha, len(self.keys), *self.keys, *self.args)

    def settle(self, reply: Any) -> None:
        if self.future.done():
            return  # its caller is gone
        if isinstance(reply, Exception):
            self.future.set_exception(reply)
        else:
            self.future.set_result(reply)


class ScriptCalls:
    """Script calls (redis-py's registered `Script`s) on one client, sent
    together: the calls made while a batch is on its way go in the next, in
    one write on a connection of the batches' own, their replies read back
    in order. Under concurrent callers a call so costs a share of one round
    trip, of its system calls and of Redis's own wake-up; made when nothing
    is on its way, it goes at once from its caller's task (no task to start,
    no step of the loop to wait for: a caller that waits for each reply, as
    the hub's publishers do, pays nothing for the batching). `run_all`
    sends one caller's several calls in one batch. Nothing is sent twice
    but a call Redis refused unrun (its script unknown: Redis restarted),
    once the script is loaded; a batch whose connection fails fails each
    call not answered (a script may have run). A call made with `linger_s`
    when nothing is on its way, while calls come together (the last batch
    carried several), waits that long for others to go with it (sessions'
    saves under load: one write and one wake-up of Redis for several); a
    call made meanwhile without it sends them all at once. Calls that come
    one at a time never wait. A Redis Cluster's calls go one by one, each
    to its slot's node, as redis-py sends them."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._clustered = isinstance(client, aioredis.RedisCluster)
        self._pending: list[_Call] = []
        # Whether a batch is on its way (sent by its caller, or by `_sender`).
        self._busy = False
        self._sender: asyncio.Task[None] | None = None
        # Set while calls wait (`linger_s`) for others to join them; they
        # do while calls come together (the last batch carried several).
        self._lingering: asyncio.TimerHandle | None = None
        self._together = False
        self._batches: _Batches | None = None

    async def run(
        self, script: Any, keys: Sequence[Any], args: Sequence[Any], linger_s: float = 0.0
    ) -> Any:
        """The script's reply; redis-py's `RedisError` if it failed (an error
        reply, or the connection)."""
        if self._clustered:
            return await script(keys=keys, args=args)
        (reply,) = await self._made([_Call(script, keys, args)], linger_s)
        if isinstance(reply, RedisError):
            raise reply
        return reply

    async def run_all(self, calls: Sequence[tuple[Any, Sequence[Any], Sequence[Any]]]) -> list[Any]:
        """The reply of each `(script, keys, args)`, or the `RedisError` it
        failed with, in order; sent together."""
        if self._clustered:
            replies = await asyncio.gather(
                *(script(keys=keys, args=args) for script, keys, args in calls),
                return_exceptions=True,
            )
            return list(replies)
        return await self._made([_Call(*call) for call in calls])

    async def _made(self, made: list[_Call], linger_s: float = 0.0) -> list[Any]:
        self._pending += made
        if self._busy:
            pass  # they go with the next batch
        elif linger_s > 0 and (self._together or self._lingering is not None):
            if self._lingering is None:
                loop = asyncio.get_running_loop()
                self._lingering = loop.call_later(linger_s, self._linger_over)
        else:
            if self._lingering is not None:
                self._lingering.cancel()
                self._lingering = None
            try:
                await self._send_now()
            except BaseException:
                for call in made:  # its caller is gone: how they failed is nobody's to log
                    if call.future.done() and not call.future.cancelled():
                        call.future.exception()
                raise
        replies: list[Any] = []
        for call in made:
            try:
                replies.append(await call.future)
            except RedisError as exc:
                replies.append(exc)
        return replies

    async def _send_now(self) -> None:
        """Send what is pending (the caller's calls) from the caller's task;
        what is made meanwhile goes next, from a task of its own."""
        self._busy = True
        batch, self._pending = self._pending, []
        try:
            await self._send(batch)
        finally:
            self._busy = bool(self._pending)
            if self._busy:
                self._sender = asyncio.create_task(self._send_all())

    def _linger_over(self) -> None:
        self._lingering = None
        if not self._busy and self._pending:
            self._busy = True
            self._sender = asyncio.create_task(self._send_all())

    async def _send_all(self) -> None:
        batch: list[_Call] = []
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                await self._send(batch)
        except BaseException as exc:  # the batches' task cancelled (closing)
            for call in [*batch, *self._pending]:
                call.settle(RedisConnectionError(f"not sent: {exc!r}"))
            self._pending = []
            raise
        finally:
            self._busy = False
            self._sender = None

    async def _send(self, batch: list[_Call]) -> None:
        self._together = len(batch) > 1
        replies: list[Any] = []
        batches = self._batches
        try:
            if batches is None:
                batches = self._batches = await _Batches.open(self._client)
            commands = _packed(batches.connection, [call.command() for call in batch])
            replies = await batches.exchange(commands, len(batch))
            unknown = [
                c for c, r in zip(batch, replies, strict=True) if isinstance(r, NoScriptError)
            ]
            await self._load(batches, unknown)
        except BaseException as exc:
            # Replies left unread would answer the next batch: a new connection.
            if batches is not None:
                replies = replies or batches.received[: len(batch)]
                batches.close()
            self._batches = None
            for call in batch[len(replies) :]:
                call.settle(RedisConnectionError(f"{type(exc).__name__}: {exc}"))
            if not isinstance(exc, (RedisError, OSError)):
                raise  # the sending caller cancelled: its batch's others hear all the same
        finally:
            # Each call its reply (but one sent again once its script is loaded).
            for call, reply in zip(batch, replies, strict=False):
                if not (isinstance(reply, NoScriptError) and call.loaded):
                    call.settle(reply)

    async def _load(self, batches: _Batches, unknown: list[_Call]) -> None:
        """Load the scripts of the calls Redis did not know (it restarted),
        and send those calls first in the next batch (once)."""
        again = [call for call in unknown if not call.loaded]
        scripts = {call.script.sha: call.script for call in again}
        if scripts:
            loads = [("SCRIPT", "LOAD", script.script) for script in scripts.values()]
            for reply in await batches.exchange(_packed(batches.connection, loads), len(loads)):
                if isinstance(reply, RedisError):
                    raise reply
        for call in again:
            call.loaded = True
        self._pending[:0] = again

    async def close(self) -> None:
        """Stop sending (calls still waiting fail) and close the batches'
        connection."""
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
            for call in self._pending:
                call.settle(RedisConnectionError("not sent: the client closed"))
            self._pending = []
        if self._sender is not None:
            self._sender.cancel()
        if self._batches is not None:
            self._batches.close()
