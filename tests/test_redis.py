"""`_redis.ScriptCalls` on a real redis-server: concurrent calls go together
and each gets its own reply, in order; a call may linger for others to join
it; an error reply fails its call alone;
scripts Redis lost are loaded again; a batch on a dropped connection fails
its calls (none is sent twice) and the next one reconnects. Against a fake
Redis (what a real one never sends): a batch cut off keeps the replies that
came, and a reply outside Redis's protocol fails its batch. Keys: no two
pairs of names callers choose share a hash tag (`hash_tag`), and sessions
named to meet another agent's or session's keys stay apart."""

from __future__ import annotations

import asyncio
import gc
import urllib.parse
import uuid
import warnings
from typing import Any

import hiredis
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from redis.crc import key_slot
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from agentscope_proto._redis import ScriptCalls, connect_redis, hash_tag

from hub_fixtures import RedisServer

# Appends ARGV[1] to the list KEYS[1]; its new length.
_PUSH = "return redis.call('RPUSH', KEYS[1], ARGV[1])"
_FAIL = "return redis.error_reply('refused ' .. ARGV[1])"
# Busy for ARGV[1] microseconds (a script cannot sleep), then answers.
_BUSY = (
    "local function now() local t = redis.call('TIME') return t[1] * 1000000 + t[2] end "
    "local stop = now() + tonumber(ARGV[1]) while now() < stop do end return 1"
)


async def _calls_on(url: str, body: Any) -> Any:
    """`body(client, calls)` on a client of `url` and its `ScriptCalls`, closed after."""
    client = await connect_redis(url)
    calls = ScriptCalls(client)
    try:
        return await body(client, calls)
    finally:
        await calls.close()
        await client.aclose()


def _run(url: str, body: Any) -> Any:
    return asyncio.run(_calls_on(url, body))


def _batch_sizes(calls: ScriptCalls) -> list[int]:
    """The size of each batch `calls` sends from now on, as it sends it."""
    sent: list[int] = []
    original = type(calls)._send

    async def counting(self: ScriptCalls, batch: list[Any]) -> None:
        sent.append(len(batch))
        await original(self, batch)

    calls._send = counting.__get__(calls)  # type: ignore[method-assign]
    return sent


def test_concurrent_calls_share_round_trips_and_keep_their_order(
    redis_server: RedisServer,
) -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push = client.register_script(_PUSH)
        await client.delete("calls:order", "calls:warm")
        await calls.run(push, ["calls:warm"], ["loaded"])  # the script known to Redis
        sent = _batch_sizes(calls)
        lengths = await asyncio.gather(
            *(calls.run(push, ["calls:order"], [str(i)]) for i in range(200))
        )
        assert sorted(lengths) == list(range(1, 201))
        # Redis ran them in the order they were made.
        assert lengths == list(range(1, 201))
        assert await client.lrange("calls:order", 0, -1) == [str(i).encode() for i in range(200)]
        assert sum(sent) == 200
        assert len(sent) < 200, sent
        # Alone, a call goes at once, in a batch of its own.
        assert await calls.run(push, ["calls:order"], ["last"]) == 201
        assert sent[-1] == 1

    _run(redis_server.url, body)


def test_an_error_reply_fails_its_call_alone(redis_server: RedisServer) -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push, fail = client.register_script(_PUSH), client.register_script(_FAIL)
        await client.delete("calls:errors")
        outcomes = await asyncio.gather(
            calls.run(push, ["calls:errors"], ["a"]),
            calls.run(fail, ["calls:errors"], ["b"]),
            calls.run(push, ["calls:errors"], ["c"]),
            return_exceptions=True,
        )
        assert outcomes[0::2] == [1, 2]
        assert isinstance(outcomes[1], ResponseError)
        assert "refused b" in str(outcomes[1])

    _run(redis_server.url, body)


def test_scripts_redis_lost_are_loaded_again(redis_server: RedisServer) -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push = client.register_script(_PUSH)
        await client.delete("calls:flushed")
        await client.script_flush()
        assert await asyncio.gather(
            calls.run(push, ["calls:flushed"], ["a"]), calls.run(push, ["calls:flushed"], ["b"])
        ) == [1, 2]

    _run(redis_server.url, body)


def test_a_dropped_connection_fails_its_batch_once_and_the_next_reconnects(
    tmp_path: Any,
) -> None:
    server = RedisServer(tmp_path)
    try:

        async def body(client: Any, calls: ScriptCalls) -> None:
            push = client.register_script(_PUSH)
            assert await calls.run(push, ["calls:drop"], ["a"]) == 1
            server.restart()  # nothing persisted: the list is gone too
            with pytest.raises(RedisConnectionError):
                await calls.run(push, ["calls:drop"], ["b"])
            # Not sent again by anyone: the new Redis has only what follows.
            assert await calls.run(push, ["calls:drop"], ["c"]) == 1
            assert await client.lrange("calls:drop", 0, -1) == [b"c"]

        _run(server.url, body)
    finally:
        server.stop()


def test_run_all_sends_a_callers_calls_in_one_batch_each_reply_in_its_place(
    redis_server: RedisServer,
) -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push, fail = client.register_script(_PUSH), client.register_script(_FAIL)
        await client.delete("calls:all")
        await calls.run(push, ["calls:warm"], ["loaded"])  # both scripts known to Redis
        with pytest.raises(ResponseError):
            await calls.run(fail, ["calls:all"], ["warm"])
        sent = _batch_sizes(calls)
        replies = await calls.run_all(
            [
                (push, ["calls:all"], ["a"]),
                (fail, ["calls:all"], ["b"]),
                (push, ["calls:all"], ["c"]),
            ]
        )
        assert sent == [3]
        assert replies[0::2] == [1, 2]
        assert isinstance(replies[1], ResponseError)
        assert "refused b" in str(replies[1])

    _run(redis_server.url, body)


def test_closing_fails_a_call_on_its_way_without_cancelling_its_caller(
    redis_server: RedisServer,
) -> None:
    """A call sent from its caller's task: `close()` fails it with a
    connection error (the caller is not cancelled, nothing hangs)."""

    async def body(client: Any, calls: ScriptCalls) -> None:
        script = client.register_script(_BUSY)
        await client.script_load(_BUSY)
        call = asyncio.ensure_future(calls.run(script, ["calls:slow"], [300_000]))
        await asyncio.sleep(0.05)  # sent (at once, from the caller's task)
        await calls.close()
        with pytest.raises(RedisConnectionError):
            await call
        assert not call.cancelled()

    _run(redis_server.url, body)


def test_calls_linger_for_others_while_calls_come_together(
    redis_server: RedisServer,
) -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push = client.register_script(_PUSH)
        await calls.run(push, ["calls:warm"], ["loaded"])
        sent = _batch_sizes(calls)
        loop = asyncio.get_running_loop()
        # Calls one at a time never wait, lingering or not.
        started = loop.time()
        assert await calls.run(push, ["calls:l"], ["alone"], 5.0) == 1
        assert loop.time() - started < 1.0
        # Once a batch carried several, lingering calls made a few ms apart
        # wait 0.2 s for each other and go together, in order.
        await calls.run_all([(push, ["calls:l"], ["a"]), (push, ["calls:l"], ["b"])])
        started = loop.time()
        lingering = []
        for i in range(3):
            lingering.append(asyncio.ensure_future(calls.run(push, ["calls:l"], [str(i)], 0.2)))
            await asyncio.sleep(0.005)
        assert not any(call.done() for call in lingering)
        assert await asyncio.gather(*lingering) == [4, 5, 6]
        assert loop.time() - started >= 0.2
        assert sent == [1, 2, 3]
        # A call that does not linger takes those waiting along at once.
        started = loop.time()
        waiting = asyncio.ensure_future(calls.run(push, ["calls:l"], ["w"], 5.0))
        await asyncio.sleep(0.005)
        assert await calls.run(push, ["calls:l"], ["now"]) == 8
        assert await waiting == 7
        assert loop.time() - started < 1.0
        assert sent == [1, 2, 3, 2]

    _run(redis_server.url, body)


def test_closing_fails_the_calls_that_linger(redis_server: RedisServer) -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push = client.register_script(_PUSH)
        await calls.run_all([(push, ["calls:w"], ["a"]), (push, ["calls:w"], ["b"])])
        call = asyncio.ensure_future(calls.run(push, ["calls:c"], ["x"], 5.0))
        await asyncio.sleep(0.01)
        assert not call.done()
        await calls.close()
        with pytest.raises(RedisConnectionError, match="closed"):
            await call
        assert await client.llen("calls:c") == 0

    _run(redis_server.url, body)


def test_commands_are_packed_as_redis_py_packs_them() -> None:
    """hiredis's packer (when installed) writes what redis-py's would: the
    state store's and the hub's arguments (bytes, text, integers)."""
    import redis.asyncio as aioredis

    from agentscope_proto._redis import _packed

    connection = aioredis.Redis().connection_pool.make_connection()
    commands = [
        ("EVALSHA", "f" * 40, 2, "agentscope:session:{a/é}:lease", "k", 600_000, b"\x00\xff", "ü"),
        ("EVALSHA", "0" * 40, 0, -1, b"", ""),
    ]
    assert _packed(connection, commands) == b"".join(connection.pack_commands(commands))


@pytest.mark.parametrize("where", ["node", "cluster"])
def test_a_lease_held_idle_is_asked_for_taken_back_and_given_up(
    where: str, redis_server: RedisServer, tmp_path: Any
) -> None:
    """The state store's leases (`RedisStateStore`): held for a call (the
    session busy) or idle after its save; another replica's try tells the
    holder it is wanted, an interrupt asked while idle is told too; giving
    an idle lease up leaves one a call took back; a save voids an interrupt
    asked for the call that saved. On one node and on a 3-master Redis
    Cluster (whose nodes pass each published notice to all)."""
    from agentscope_proto.agents.state.redis_store import RedisStateStore
    from agentscope_proto.agents.state.store import Holder, Notice, Renewed, Save

    from hub_fixtures import RedisCluster

    cluster = RedisCluster(tmp_path) if where == "cluster" else None
    url = cluster.url if cluster is not None else redis_server.url

    s = uuid.uuid4().hex

    async def body() -> None:
        store = await RedisStateStore.connect(url, "leases")
        heard: asyncio.Queue[tuple[Notice, str]] = asyncio.Queue()

        async def listen() -> None:
            async for notice in store.notices("a"):
                heard.put_nowait(notice)

        listener = asyncio.create_task(listen())
        try:
            assert await heard.get() == (Notice.LISTENING, "")
            assert await store.acquire(s, "a", 60_000) == 0
            assert await store.leased(s)
            assert await store.save(s, Save(Holder("a", 0), b"", 60_000, 60_000, 0, [])) == 1
            assert not await store.leased(s)  # held idle: no call runs
            assert await store.acquire(s, "b", 60_000) is None
            assert await heard.get() == (Notice.WANTED, s)
            await store.request_interrupt(s, 60_000)
            assert await heard.get() == (Notice.INTERRUPT, s)
            assert await store.acquire(s, "a", 60_000) == 1  # taken back for a call
            await store.release(s, "a", only_idle=True)
            assert await store.leased(s)
            await store.request_interrupt(s, 60_000)
            assert await store.renew(s, Holder("a", 1), 60_000) is Renewed.INTERRUPT
            await store.request_interrupt(s, 60_000)
            assert await store.save(s, Save(Holder("a", 1), b"", 60_000, 60_000, 0, [])) == 2
            assert await store.renew(s, Holder("a", 2), 60_000) is Renewed.HELD  # voided
            await store.release(s, "a")
            assert await store.acquire(s, "b", 60_000) == 2
            assert heard.empty()
        finally:
            listener.cancel()
            await store.close()

    try:
        asyncio.run(body())
    finally:
        if cluster is not None:
            cluster.stop()


def test_a_call_whose_lease_ran_out_writes_only_while_nobody_took_its_session(
    redis_server: RedisServer,
) -> None:
    """A call's writes are fenced by its `Holder`: its lease run out (a stall
    past it) with nobody taking the session since, it renews (taking the
    lease back), logs and saves; once another replica took the session, or
    saved it since, its renewal finds the lease lost and its log entries and
    save are refused whole (`LeaseLost`: nothing of them written)."""
    from agentscope_proto.agents.state.redis_store import RedisStateStore
    from agentscope_proto.agents.state.store import Holder, LeaseLost, Renewed, Save

    s = uuid.uuid4().hex

    def save(owner: str, base: int) -> Save:
        return Save(Holder(owner, base), b"state", 60_000, 0, 0, [b"msg"])

    async def run_out(ttl_ms: int) -> None:
        await asyncio.sleep(ttl_ms / 1000 + 0.05)
        assert not await store.leased(s)

    async def logged(reply: str) -> list[bytes]:
        return [entry.data for entry in await store.read(s, reply, "", 0) or []]

    async def body() -> None:
        nonlocal store
        store = await RedisStateStore.connect(redis_server.url, "fences")
        try:
            a = Holder("a", 0)
            assert await store.acquire(s, "a", 50) == 0
            await run_out(50)
            assert await store.renew(s, a, 60_000) is Renewed.HELD  # taken back
            assert await store.leased(s)
            await store.release(s, "a")
            assert await store.acquire(s, "a", 50) == 0
            await run_out(50)
            await store.append(s, "r1", [b"1"], 60_000, a)  # nobody took it: logged
            positions, version = await store.append(s, "r1", [b"2"], 60_000, a, save("a", 0))
            assert version == 1
            assert len(positions) == 1
            assert await logged("r1") == [b"1", b"2"]
            # Its lease run out, another replica took the session.
            assert await store.acquire(s, "a", 50) == 1
            await run_out(50)
            assert await store.acquire(s, "b", 60_000) == 1
            a = Holder("a", 1)
            assert await store.renew(s, a, 60_000) is Renewed.LOST
            with pytest.raises(LeaseLost):
                await store.append(s, "r2", [b"3"], 60_000, a)
            with pytest.raises(LeaseLost):
                await store.append(s, "r2", [b"4"], 60_000, a, save("a", 1))
            with pytest.raises(LeaseLost):
                await store.save(s, save("a", 1))
            assert await logged("r2") == []
            # The other saved and gave the lease up: the state moved on from 1.
            assert await store.save(s, save("b", 1)) == 2
            assert not await store.leased(s)
            assert await store.renew(s, a, 60_000) is Renewed.LOST
            with pytest.raises(LeaseLost):
                await store.save(s, save("a", 1))
            stored = await store.load(s)
            assert stored is not None
            assert stored.version == 2
            assert await store.append(s, "r2", [b"5"], 60_000) is not None  # not fenced
        finally:
            await store.close()

    store: Any = None
    asyncio.run(body())


class _Scripted(asyncio.Protocol):
    """A fake Redis: the handshake and INFO answered, each EVALSHA by the
    next of `answers` (raw bytes; None: the connection closed there)."""

    def __init__(self, answers: list[bytes | None]) -> None:
        self._reader = hiredis.Reader()
        self._answers = answers

    def connection_made(self, transport: Any) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._reader.feed(data)
        while (command := self._reader.gets()) is not False:
            name = command[0].upper()
            if name == b"HELLO":  # redis-py asks for RESP3
                self._transport.write(b"%1\r\n$5\r\nproto\r\n:3\r\n")
            elif name == b"INFO":
                self._transport.write(b"$17\r\ncluster_enabled:0\r\n")
            elif name != b"EVALSHA":
                self._transport.write(b"+OK\r\n")
            elif (answer := self._answers.pop(0)) is None:
                self._transport.close()
                return
            else:
                self._transport.write(answer)


def _against(answers: list[bytes | None], body: Any) -> Any:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Scripted(answers), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            return await _calls_on(f"redis://127.0.0.1:{port}/0", body)
        finally:
            server.close()

    return asyncio.run(main())


def test_a_batch_cut_off_gives_the_replies_that_came_and_fails_the_rest() -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push = client.register_script(_PUSH)
        outcomes = await calls.run_all([(push, ["k"], [str(i)]) for i in range(3)])
        assert outcomes[0] == 7
        assert all(isinstance(outcome, RedisConnectionError) for outcome in outcomes[1:])
        # The next batch goes on a new connection.
        assert await calls.run(push, ["k"], ["again"]) == 8

    _against([b":7\r\n", None, b":8\r\n"], body)


def test_a_reply_not_in_redis_protocol_fails_its_batch_and_the_next_reconnects() -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push = client.register_script(_PUSH)
        with pytest.raises(RedisConnectionError, match="InvalidResponse: Protocol error"):
            await calls.run(push, ["k"], ["a"])
        assert await calls.run(push, ["k"], ["b"]) == 1

    _against([b"?garbage\r\n", b":1\r\n"], body)


def test_the_connection_taken_from_redis_py_is_closed_once(redis_server: RedisServer) -> None:
    async def body(client: Any, calls: ScriptCalls) -> None:
        push = client.register_script(_PUSH)
        assert await calls.run(push, ["calls:closed"], ["a"]) == 1
        batches = calls._batches
        await calls.close()
        await asyncio.sleep(0)  # the transport's close
        assert batches is not None
        assert batches._transport.is_closing()
        assert batches.connection._writer is None  # redis-py's part of it is gone

    gc.collect()  # what earlier tests left, before this one's is watched
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(redis_server.url, body)
        gc.collect()
    unclosed = [str(w.message) for w in caught if "unclosed" in str(w.message)]
    assert not unclosed, unclosed


def test_a_caller_cancelled_while_its_batch_is_on_its_way_leaves_no_other_call_waiting(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A call sent from its caller's task takes along the calls lingering
    then; cancelling that caller mid-batch (a turn's lease renewal, ended)
    fails those calls at once instead of leaving them waiting forever."""

    async def body(client: Any, calls: ScriptCalls) -> None:
        push, script = client.register_script(_PUSH), client.register_script(_BUSY)
        await client.script_load(_BUSY)
        await calls.run_all([(push, ["calls:x"], ["a"]), (push, ["calls:x"], ["b"])])
        lingering = asyncio.ensure_future(calls.run(push, ["calls:x"], ["c"], 5.0))
        await asyncio.sleep(0.01)
        caller = asyncio.ensure_future(calls.run(script, ["calls:slow"], [200_000]))
        await asyncio.sleep(0.05)  # the batch (both calls) on its way
        caller.cancel()
        with pytest.raises(RedisConnectionError):
            await asyncio.wait_for(lingering, 5)
        # The next call goes on a new connection.
        assert await calls.run(push, ["calls:x"], ["d"]) == 4

    _run(redis_server.url, body)
    gc.collect()  # the cancelled caller's call: its failure is nobody's to log
    assert "never retrieved" not in caplog.text


def _read_tag(key: str) -> tuple[str, str, str]:
    """The scope, name and rest of a key that begins with `hash_tag`'s text,
    read back by its rules (a name's `}` doubled, its end a lone `}`)."""
    assert key.startswith("{")
    slash = key.index("/")
    scope, at, name = urllib.parse.unquote(key[1:slash]), slash + 1, []
    while key[at] != "}" or key[at + 1 : at + 2] == "}":
        name.append(key[at])
        at += 2 if key[at] == "}" else 1
    return scope, "".join(name), key[at + 1 :]


# Texts made of what a key's parts are written with, and anything else.
_PARTS = st.text(alphabet=st.sampled_from("ab%/{}:2F7D") | st.characters(), max_size=12)


@given(scope=_PARTS, name=_PARTS, rest=_PARTS)
@example(scope="support", name="eu/alice", rest=":lease")
@example(scope="support/eu", name="alice", rest=":lease")
@example(scope="x", name="x}:reply:y", rest=":lease")
@example(scope="x", name="x", rest=":reply:y}:lease")
def test_a_hash_tag_reads_back_as_its_names_so_no_two_pairs_share_a_key(
    scope: str, name: str, rest: str
) -> None:
    """Whatever the names hold, a key written from them reads back as them:
    no other pair (and suffix after the tag's `}:`) writes the same key."""
    assert _read_tag(hash_tag(scope, name) + ":" + rest) == (scope, name, ":" + rest)


def test_plain_names_keep_their_keys_and_one_names_keys_share_a_slot() -> None:
    """Names without `%`, `/` (the scope) and `}` give the keys they gave
    before escaping; every key of one name is in one Redis Cluster slot."""
    assert hash_tag("Friday", "held") == "{Friday/held}"
    assert hash_tag("Echo", "a/b{c%d") == "{Echo/a/b{c%d}"
    assert hash_tag("a/b%c}", "x}y") == "{a%2Fb%25c%7D/x}}y}"
    for name in ("plain", "x}:reply:y", "}", "a}}b"):
        base = "agentscope:session:" + hash_tag("Friday", name)
        slots = {
            key_slot(f"{base}:{suffix}".encode()) for suffix in ("lease", "state:v2", "reply:r")
        }
        assert len(slots) == 1, name


def test_sessions_named_to_meet_another_agents_or_sessions_keys_stay_apart(
    redis_server: RedisServer,
) -> None:
    """Agent `support`'s session `eu/alice` is not agent `support/eu`'s
    session `alice` (its state unreadable there), and a reply whose id
    continues a session's key into another session's (`y}:lease` in `x`) logs
    beside that session's lease, not on it."""
    from agentscope_proto.agents.state.redis_store import RedisStateStore
    from agentscope_proto.agents.state.store import Holder, Save

    async def body() -> None:
        support = await RedisStateStore.connect(redis_server.url, "support")
        eu = await RedisStateStore.connect(redis_server.url, "support/eu")
        try:
            assert await eu.acquire("alice", "r1", 60_000) == 0
            await eu.save("alice", Save(Holder("r1", 0), b"state", 60_000, 0, 0, [b"msg"]))
            assert await support.load("eu/alice") is None
            assert await support.acquire("eu/alice", "r2", 60_000) == 0
            await support.append("x", "y}:lease", [b"entry"], 60_000)
            assert not await support.leased("x}:reply:y")
            assert await support.acquire("x}:reply:y", "r3", 60_000) == 0
            assert await support.leased("x}:reply:y")
            assert [e.data for e in await support.read("x", "y}:lease", "", 0) or []] == [b"entry"]
        finally:
            await support.close()
            await eu.close()

    asyncio.run(body())
