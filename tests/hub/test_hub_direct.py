"""The direct path (`DirectHub`: the hub's streams from Python, no server)
on a real redis-server beside a hub server on the same Redis: one stream
format both ways, consumer groups shared, the same checks; closing ends
what iterates and refuses what follows; and retention by age on both
stores."""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from agentscope_proto import errors
from agentscope_proto.hub import AsyncHubClient, ConsumerGroup, DirectHub, HubClient

from hub_fixtures import RedisServer, hub_server, msg
from server_harness import RunningServer


@pytest.fixture(scope="module")
def served(redis_server: RedisServer) -> Iterator[RunningServer]:
    running = hub_server(redis_server.url)
    yield running
    running.stop()


def _entries(url: str, topic: str) -> list[dict[bytes, bytes]]:
    with redis.Redis.from_url(url) as raw:
        return [fields for _, fields in raw.xrange(f"agentscope:hub:{{{topic}}}")]


def test_direct_and_served_publishes_are_one_stream_both_ways(
    redis_server: RedisServer, served: RunningServer, topic: str
) -> None:
    async def run() -> None:
        hub = await DirectHub.connect(redis_server.url)
        client = AsyncHubClient(served.target)
        try:
            served_events = await client.subscribe(topic)
            direct_events = await hub.subscribe(topic)
            mine = await hub.publish(topic, msg("direct"))
            theirs = await client.publish(topic, msg("served"))
            for events in (served_events, direct_events):
                got = [await events.__anext__() for _ in range(2)]
                assert [(e.offset, e.msg.text) for e in got] == [
                    (mine, "direct"),
                    (theirs, "served"),
                ]
            # A direct subscriber resumes from a served offset, and back.
            async with await hub.subscribe(topic, after=mine) as resumed:
                assert (await resumed.__anext__()).offset == theirs
            await served_events.close()
            direct_events.close()
        finally:
            await client.close()
            await hub.close()

    asyncio.run(run())
    fields = _entries(redis_server.url, topic)
    assert [set(f) for f in fields] == [{b"m", b"e"}] * 2  # the same entry format
    assert fields[0][b"e"] == fields[1][b"e"]  # one epoch


def test_concurrent_direct_publishes_go_together_each_with_its_offset(
    redis_server: RedisServer, topic: str
) -> None:
    async def run() -> list[str]:
        hub = await DirectHub.connect(redis_server.url)
        try:
            events = await hub.subscribe(topic)
            offsets = await asyncio.gather(*(hub.publish(topic, msg(str(i))) for i in range(200)))
            got = [await events.__anext__() for _ in range(200)]
            assert [e.offset for e in got] == list(offsets)  # gathered in order
            assert [e.msg.text for e in got] == [str(i) for i in range(200)]
            return list(offsets)
        finally:
            await hub.close()

    assert len(set(asyncio.run(run()))) == 200


def test_the_direct_path_checks_what_the_server_checks(redis_server: RedisServer) -> None:
    async def run() -> None:
        hub = await DirectHub.connect(redis_server.url, max_msg_kb=1)
        try:
            with pytest.raises(errors.HubError) as bad_topic:
                await hub.publish("bad topic", msg("x"))
            assert bad_topic.value.path == "topic"
            with pytest.raises(errors.LimitExceededError) as large:
                await hub.publish("t", msg("x" * 2000))
            assert large.value.path == "hub_max_msg_kb"
            with pytest.raises(errors.HubError) as bad_member:
                await hub.subscribe("t", group=ConsumerGroup(name="g", member="bad member"))
            assert bad_member.value.path == "group.member"
            with pytest.raises(errors.HubError) as bad_ack:
                await hub.ack("t", "g", "m", ["nope"])
            assert bad_ack.value.path == "offsets[0]"
        finally:
            await hub.close()

    asyncio.run(run())


def test_direct_and_served_members_share_one_group(
    redis_server: RedisServer, served: RunningServer, topic: str
) -> None:
    async def run() -> None:
        hub = await DirectHub.connect(redis_server.url)
        try:
            direct = await hub.subscribe(
                topic, group=ConsumerGroup(name="g", member="direct", max_unacked=3)
            )
            with HubClient(served.target) as client:
                offsets = client.publish_many(topic, [msg(str(i)) for i in range(6)])
                mine = [await direct.__anext__() for _ in range(3)]  # then it is full
                group = ConsumerGroup(name="g", member="served", max_unacked=3)
                with client.subscribe(topic, group=group) as theirs:
                    others = [next(theirs) for _ in range(3)]
                    assert theirs.ack(*(e.offset for e in others)) == 3
                assert await direct.ack(*(e.offset for e in mine)) == 3
            assert sorted(e.offset for e in mine + others) == sorted(offsets)
            direct.close()
        finally:
            await hub.close()

    asyncio.run(run())


def test_closing_ends_iterations_waiting_and_the_closed_hub_refuses_what_follows(
    redis_server: RedisServer, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A subscription closed while another task waits on it ends that
    iteration (it used to wait for ever) and gives nothing published after;
    a group member's too; closing the hub closes the subscriptions left open
    (no store failure logged) and refuses publishes and subscriptions after."""

    async def run() -> None:
        hub = await DirectHub.connect(redis_server.url)
        received: list[str] = []

        async def iterate(events: Any) -> None:
            async for event in events:
                received.append(event.msg.text)

        try:
            plain = await hub.subscribe(topic)
            member = await hub.subscribe(
                topic, group=ConsumerGroup(name="g", member="m", claim_idle_ms=200)
            )
            tasks = [asyncio.ensure_future(iterate(s)) for s in (plain, member)]
            await hub.publish(topic, msg("before"))
            while len(received) < 2:
                await asyncio.sleep(0.01)
            plain.close()
            member.close()
            await asyncio.wait_for(asyncio.gather(*tasks), 5)
            await hub.publish(topic, msg("after"))
            for closed in (plain, member):
                with pytest.raises(StopAsyncIteration):
                    await closed.__anext__()
            assert received == ["before", "before"]
            left_open = await hub.subscribe(topic)
            waiting = asyncio.ensure_future(left_open.__anext__())
            await asyncio.sleep(0.1)
        finally:
            await hub.close()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(waiting, 5)
        with pytest.raises(errors.RemoteError, match="the client was closed"):
            await hub.publish(topic, msg("late"))  # as a closed AsyncHubClient says
        with pytest.raises(errors.RemoteError, match="the client was closed"):
            await hub.subscribe(topic)

    with caplog.at_level(logging.WARNING, logger="agentscope_proto"):
        asyncio.run(run())
    assert [r.getMessage() for r in caplog.records] == []


@pytest.fixture(params=["memory", "redis"])
def aging_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store whose topics keep messages one second: a Redis of its own,
    with small stream nodes (MINID ~ trims whole nodes only)."""
    if request.param == "memory":
        yield "memory"
        return
    server = RedisServer(tmp_path, ("--stream-node-max-entries", "2"))
    yield server.url
    server.stop()


def test_retention_by_age_trims_old_messages_and_resuming_before_them_is_out_of_range(
    aging_url: str, topic: str
) -> None:
    running = hub_server(aging_url, retention_seconds=1)
    try:
        with HubClient(running.target) as client:
            old = client.publish_many(topic, [msg(str(i)) for i in range(6)])
            time.sleep(1.2)
            client.publish(topic, msg("new"))  # trims what is a second old
            with pytest.raises(errors.OffsetOutOfRangeError) as caught:
                client.subscribe(topic, after=old[0])
            assert caught.value.why == "expired"
            with client.subscribe(topic) as events:
                newer = client.publish(topic, msg("newer"))
                assert next(events).offset == newer
    finally:
        running.stop()


def test_the_hub_works_over_a_unix_socket(tmp_path: Path) -> None:
    # A short directory: a socket's path has at most about 100 bytes.
    socket_dir = Path(tempfile.mkdtemp(prefix="hub"))
    server = RedisServer(tmp_path, ("--unixsocket", str(socket_dir / "r.sock")))

    async def run() -> None:
        hub = await DirectHub.connect(f"unix://{socket_dir / 'r.sock'}")
        try:
            async with await hub.subscribe("t") as events:
                offset = await hub.publish("t", msg("over a socket"))
                assert (await events.__anext__()).offset == offset
        finally:
            await hub.close()

    try:
        asyncio.run(run())
    finally:
        server.stop()
        shutil.rmtree(socket_dir, ignore_errors=True)


def test_an_ack_of_an_offset_of_another_epoch_acknowledges_nothing(
    redis_server: RedisServer, topic: str
) -> None:
    async def run() -> None:
        hub = await DirectHub.connect(redis_server.url)
        try:
            member = await hub.subscribe(topic, group=ConsumerGroup(name="g", member="m"))
            await hub.publish(topic, msg("x"))
            offset = (await member.__anext__()).offset
            other = offset.rpartition(".")[0] + ".00000000"  # the same id, another run's
            with pytest.raises(errors.HubError) as caught:
                await member.ack(offset, other)
            assert caught.value.path == "offsets[1]"
            assert await member.ack(offset) == 1
            member.close()
        finally:
            await hub.close()

    asyncio.run(run())
