"""The stores in process, on both kinds (memory, a real redis-server):
`publish_many` in one call, and Redis subscriptions sharing one read per
topic: joining it from behind, from ahead, leaving it when slow, missing
nothing and repeating nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto.errors import HubUnavailableError
from agentscope_proto.hub import HubConfig, HubStore, open_hub_store

from hub_fixtures import STORES, RedisServer, store_url


def _run(url: str, body: Callable[[HubStore], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        store = await open_hub_store(HubConfig(url=url))
        try:
            return await body(store)
        finally:
            await store.close()

    return asyncio.run(main())


async def _take(subscription: Any, count: int) -> list[tuple[bytes, bytes]]:
    got: list[tuple[bytes, bytes]] = []
    while len(got) < count:
        got += await asyncio.wait_for(subscription.next(), 30)
    assert len(got) == count
    return got


@pytest.mark.parametrize("store", STORES)
def test_publish_many_stores_in_order_across_topics(
    request: pytest.FixtureRequest, store: str
) -> None:
    a, b = f"t/{uuid.uuid4().hex}", f"t/{uuid.uuid4().hex}"

    async def body(hub: HubStore) -> None:
        on_a, on_b = await hub.subscribe(a, ""), await hub.subscribe(b, "")
        offsets = await hub.publish_many([(a, b"1"), (b, b"2"), (a, b"3"), (a, b"4")])
        assert all(isinstance(o, str) for o in offsets)
        assert await _take(on_a, 3) == [
            (offsets[i].encode(), m) for i, m in ((0, b"1"), (2, b"3"), (3, b"4"))
        ]  # type: ignore[union-attr]
        assert await _take(on_b, 1) == [(offsets[1].encode(), b"2")]  # type: ignore[union-attr]
        on_a.close()
        on_b.close()

    _run(store_url(request, store), body)


def test_redis_publish_many_fails_per_topic(redis_server: RedisServer) -> None:
    """A topic whose key Redis refuses (here: not a stream) fails alone."""
    import redis

    good, bad = f"t/{uuid.uuid4().hex}", f"t/{uuid.uuid4().hex}"
    redis.Redis(port=redis_server.port).set(f"agentscope:hub:{{{bad}}}", "not a stream")

    async def body(hub: HubStore) -> list[Any]:
        return await hub.publish_many([(good, b"1"), (bad, b"2"), (good, b"3"), (bad, b"4")])

    results = _run(redis_server.url, body)
    assert isinstance(results[0], str)
    assert isinstance(results[2], str)
    for failed in (results[1], results[3]):
        assert isinstance(failed, HubUnavailableError)
        assert "WRONGTYPE" in failed.reason


def _count_batches(hub: HubStore) -> list[int]:
    """The sizes of the batches of script calls `hub` (a `RedisHubStore`)
    sends from now on, one round trip each."""
    calls: Any = getattr(hub, "_calls")  # noqa: B009 (the store's own, private)
    sizes: list[int] = []
    send = calls._send

    async def counting(batch: list[Any]) -> None:
        sizes.append(len(batch))
        await send(batch)

    calls._send = counting
    return sizes


def test_redis_concurrent_publishes_share_round_trips_each_its_own_offset(
    redis_server: RedisServer,
) -> None:
    topic, other = f"t/{uuid.uuid4().hex}", f"t/{uuid.uuid4().hex}"

    async def body(hub: HubStore) -> None:
        live = await hub.subscribe(topic, "")
        sizes = _count_batches(hub)
        offsets = await asyncio.gather(*(hub.publish(topic, str(i).encode()) for i in range(40)))
        assert len(sizes) < 40, sizes  # several publishers' calls in one round trip
        assert [o.decode() for o, _ in await _take(live, 40)] == offsets  # stored as made
        # Several topics in one publish_many: their calls in one batch too
        # (no pipeline, no SCRIPT EXISTS before it).
        sizes.clear()
        mixed = await hub.publish_many([(topic, b"a"), (other, b"b"), (topic, b"c")])
        assert sizes == [2]
        assert [o.decode() for o, _ in await _take(live, 2)] == [mixed[0], mixed[2]]
        live.close()

    _run(redis_server.url, body)


def test_redis_publishes_of_a_batch_whose_connection_fails_fail_unavailable(
    tmp_path: Path,
) -> None:
    """Redis gone under a batch (three topics' calls): each of its messages
    fails with the hub's error (none is sent again), and the next publish
    reconnects."""
    server = RedisServer(tmp_path)
    topics = [f"t/{uuid.uuid4().hex}" for _ in range(3)]

    async def body(hub: HubStore) -> None:
        assert await hub.publish(topics[0], b"before")
        sizes = _count_batches(hub)
        server.restart()  # nothing persisted: the topics are gone too
        outcomes = await hub.publish_many([(topic, b"lost") for topic in topics])
        assert sizes == [3]
        for outcome in outcomes:
            assert isinstance(outcome, HubUnavailableError), outcome
            assert outcome.reason.startswith("the hub store failed: ConnectionError")
            assert "127.0.0.1" not in outcome.reason  # the address stays in the log
        after = await hub.publish(topics[0], b"after")
        live = await hub.subscribe(topics[0], "0-0")
        assert await _take(live, 1) == [(after.encode(), b"after")]
        live.close()

    try:
        _run(server.url, body)
    finally:
        server.stop()


def test_redis_subscriptions_share_a_read_and_each_gets_its_own_sequence(
    redis_server: RedisServer,
) -> None:
    topic = f"t/{uuid.uuid4().hex}"

    async def body(hub: HubStore) -> None:
        first = await hub.publish_many([(topic, str(i).encode()) for i in range(10)])
        offsets: list[str] = [o for o in first if isinstance(o, str)]
        live = await hub.subscribe(topic, "")  # starts the tail here
        behind = await hub.subscribe(topic, offsets[2])  # reads 3..9 itself, then joins
        new = await hub.publish_many([(topic, str(i).encode()) for i in range(10, 20)])
        offsets += [o for o in new if isinstance(o, str)]
        assert [m for _, m in await _take(live, 10)] == [str(i).encode() for i in range(10, 20)]
        got = await _take(behind, 17)
        assert [o.decode() for o, _ in got] == offsets[3:]
        assert len(getattr(hub, "tails", {})) == 1
        # One that joins ahead of the tail (it read further itself) skips
        # what it had, and repeats nothing.
        ahead = await hub.subscribe(topic, offsets[-1])
        more = await hub.publish_many([(topic, b"20"), (topic, b"21")])
        for subscription in (live, behind, ahead):
            assert [o.decode() for o, _ in await _take(subscription, 2)] == more
            subscription.close()
        await asyncio.sleep(0)
        assert getattr(hub, "tails", {}) == {}

    _run(redis_server.url, body)


def test_a_slow_redis_subscription_leaves_the_tail_and_catches_up(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentscope_proto.hub import redis_streams

    monkeypatch.setattr(redis_streams, "_BEHIND", 5)
    topic = f"t/{uuid.uuid4().hex}"

    async def body(hub: HubStore) -> None:
        fast, slow = await hub.subscribe(topic, ""), await hub.subscribe(topic, "")
        offsets: list[str] = []
        for round_ in range(6):  # the slow one takes nothing meanwhile
            batch = await hub.publish_many([(topic, f"{round_}.{i}".encode()) for i in range(3)])
            offsets += [o for o in batch if isinstance(o, str)]
            assert [o.decode() for o, _ in await _take(fast, 3)] == offsets[-3:]
        tail = getattr(hub, "tails", {})[f"agentscope:hub:{{{topic}}}"]
        assert list(tail.listeners) == [fast]  # the slow one left
        assert [o.decode() for o, _ in await _take(slow, 18)] == offsets
        last = await hub.publish_many([(topic, b"last")])
        for subscription in (fast, slow):
            assert [o.decode() for o, _ in await _take(subscription, 1)] == last
            subscription.close()

    _run(redis_server.url, body)


class _ScriptedRedis:
    """What `_Tail` and `_RedisSubscription` use of a `RedisHubStore`, the
    reads scripted: each cursor's read returns its batch, then waits for ever."""

    batch = 256

    def __init__(self, reads: dict[str, list[tuple[bytes, bytes]]]) -> None:
        self.tails: dict[str, Any] = {}
        self._reads = reads

    async def read(self, key: str, cursor: str) -> list[tuple[bytes, bytes]]:
        await asyncio.sleep(0)  # a read takes a turn of the loop at least
        if cursor in self._reads:
            return self._reads.pop(cursor)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_subscription_that_joins_ahead_of_the_tail_skips_what_it_had() -> None:
    from agentscope_proto.hub.redis_streams import _RedisSubscription

    def entries(*seqs: int) -> list[tuple[bytes, bytes]]:
        return [(f"1-{s}".encode(), str(s).encode()) for s in seqs]

    async def main() -> tuple[list[bytes], list[bytes]]:
        store: Any = _ScriptedRedis({"1-0": entries(1, 2), "1-2": entries(3, 4, 5)})
        aligned = _RedisSubscription(store, "k", "1-0", "")  # starts the tail at 1-0
        first = asyncio.ensure_future(aligned.next())
        await asyncio.sleep(0)
        ahead = _RedisSubscription(store, "k", "1-3", "")  # read up to 1-3 itself
        second = asyncio.ensure_future(ahead.next())
        await asyncio.sleep(0)
        assert store.tails["k"].listeners == {aligned: None, ahead: (1, 3)}
        got_aligned = [m for _, m in await asyncio.wait_for(first, 10)]
        got_aligned += [m for _, m in await asyncio.wait_for(aligned.next(), 10)]
        got_ahead = [m for _, m in await asyncio.wait_for(second, 10)]
        assert store.tails["k"].listeners == {aligned: None, ahead: None}
        aligned.close()
        ahead.close()
        return got_aligned, got_ahead

    got_aligned, got_ahead = asyncio.run(main())
    assert got_aligned == [b"1", b"2", b"3", b"4", b"5"]
    assert got_ahead == [b"4", b"5"]
