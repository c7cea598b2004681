"""The hub under faults and load, for real: a subscriber process killed and
restarted from its last offset, a hub server killed and restarted while
publishers go on, and 10 publishers x 1,000 messages through two servers on
one Redis to three subscribers."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_proto import errors
from agentscope_proto.hub import AsyncHubClient, HubClient

from hub_fixtures import CLI, STORES, RedisServer, ServeProcess, hub_server, msg, store_url
from server_harness import RunningServer


def _subscriber(target: str, topic: str, *args: str) -> subprocess.Popen[str]:
    """`agentscope-proto hub subscribe` in a subprocess, once it is live."""
    process = subprocess.Popen(
        [*CLI, "hub", "subscribe", "--target", target, topic, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    assert "subscribed to" in line, line + process.stderr.read()
    return process


@pytest.fixture(scope="module", params=STORES)
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    running = hub_server(store_url(request, request.param))
    yield running
    running.stop()


def test_a_killed_subscriber_restarted_from_its_last_offset_misses_nothing(
    server: RunningServer, topic: str
) -> None:
    total = 300
    first = _subscriber(server.target, topic)
    offsets: list[str] = []
    with HubClient(server.target) as hub:

        def publish() -> None:
            for i in range(total):
                offsets.append(hub.publish(topic, msg(str(i))))

        publisher = threading.Thread(target=publish)
        publisher.start()
        assert first.stdout is not None
        seen = [json.loads(first.stdout.readline()) for _ in range(100)]
        first.send_signal(signal.SIGKILL)  # mid-stream: whatever it had not read is lost
        first.wait(10)
        # A new process resumes after the last message the dead one handled.
        second = _subscriber(
            server.target, topic, "--after", seen[-1]["offset"], "--count", str(total - 100)
        )
        out, _ = second.communicate(timeout=60)
        publisher.join()
    assert second.returncode == 0
    seen += [json.loads(line) for line in out.splitlines()]
    by_offset = {event["offset"]: event["msg"]["text"] for event in seen}
    assert list(by_offset) == offsets
    assert list(by_offset.values()) == [str(i) for i in range(total)]


# -- Redis: servers come and go, the topic stays ------------------------------------


def test_a_hub_server_killed_and_restarted_loses_nothing_acknowledged(
    redis_server: RedisServer, topic: str
) -> None:
    serve = ServeProcess(redis_server.url)
    port = serve.port
    acknowledged: dict[str, tuple[str, int]] = {}
    failures = []
    stop = threading.Event()

    def publish(name: str) -> None:
        with HubClient(serve.target) as hub:
            seq = 0
            while not stop.is_set():
                try:
                    offset = hub.publish(topic, msg(str(seq), name), timeout=5)
                except errors.AgentScopeProtoError as exc:
                    failures.append(exc)  # not acknowledged: publish it again
                    time.sleep(0.02)
                    continue
                acknowledged[offset] = (name, seq)
                seq += 1

    received: list[Any] = []
    with HubClient(serve.target) as hub:
        live = hub.subscribe(topic, reconnect=60)

        def follow() -> None:
            for event in live:
                received.append(event)

        follower = threading.Thread(target=follow)
        follower.start()
        publishers = [threading.Thread(target=publish, args=(f"p{n}",)) for n in range(3)]
        for thread in publishers:
            thread.start()
        _wait(lambda: len(acknowledged) >= 150)
        serve.kill()
        serve = ServeProcess(redis_server.url, port)
        _wait(lambda: len(acknowledged) >= 450 and len(failures) > 0)
        stop.set()
        for thread in publishers:
            thread.join()
        end = hub.publish(topic, msg("-1", "end"))
        _wait(lambda: bool(received) and received[-1].offset == end)
        live.close()
        follower.join()
        # Everything the store holds, read again from the start.
        everything = {}
        with hub.subscribe(topic, after="0-0") as replay:
            for event in replay:
                everything[event.offset] = (event.msg.name, int(event.msg.text))
                if event.offset == end:
                    break
    serve.stop()
    assert failures, "the publishers never saw the server down"
    for offset, sent in acknowledged.items():
        assert everything[offset] == sent
    # The live subscriber resumed across the restart: every message once, in order.
    assert [e.offset for e in received] == list(everything)
    for name in ("p0", "p1", "p2"):
        mine = [seq for who, seq in everything.values() if who == name]
        first_seen = list(dict.fromkeys(mine))
        assert first_seen == sorted(first_seen)


def test_a_client_of_two_named_servers_goes_on_through_the_other_when_one_is_killed(
    redis_server: RedisServer, topic: str
) -> None:
    """Two servers on one Redis, given to one client by host name (a channel
    each): the one it uses is killed and never comes back; publishes go on
    through the other (any cut off fails and is sent again), and the live
    subscription resumes there: every acknowledged message once, in order."""
    servers = [ServeProcess(redis_server.url) for _ in range(2)]
    acknowledged: list[str] = []
    failures: list[Exception] = []
    received: list[Any] = []
    try:
        with HubClient([f"localhost:{server.port}" for server in servers]) as hub:
            live = hub.subscribe(topic, reconnect=60)
            follower = threading.Thread(target=lambda: received.extend(live))
            follower.start()
            for seq in range(200):
                if seq == 100:
                    servers[0].kill()
                while True:
                    try:
                        acknowledged.append(hub.publish(topic, msg(str(seq), "p"), timeout=5))
                        break
                    except errors.AgentScopeProtoError as exc:
                        failures.append(exc)  # not acknowledged: publish it again
                    if len(failures) >= 50:
                        raise AssertionError(f"no server took the publish: {failures[-1]}")
                    time.sleep(0.02)
            _wait(lambda: len(received) >= len(acknowledged))
            live.close()
            follower.join()
    finally:
        for server in servers:
            server.stop()
    # (The client uses the first target until it fails: the second half went
    # through the other server, the first being dead.)
    assert [e.offset for e in received] == acknowledged
    assert [int(e.msg.text) for e in received] == list(range(200))


def test_stream_publishers_through_a_killed_and_restarted_server_lose_nothing_acknowledged(
    redis_server: RedisServer, topic: str
) -> None:
    """As above, with AsyncHubClient: three publishers share its PublishStream,
    a batched subscription follows; the server is killed with messages in
    flight on the stream."""
    serve = ServeProcess(redis_server.url)
    port = serve.port
    acknowledged: dict[str, tuple[str, int]] = {}
    failures: list[Exception] = []

    async def run() -> tuple[list[Any], dict[str, tuple[str, int]]]:
        nonlocal serve
        hub = AsyncHubClient(serve.target)
        live = await hub.subscribe(topic, reconnect=60)
        received: list[Any] = []
        stop = asyncio.Event()

        async def follow() -> None:
            async for event in live:
                received.append(event)

        async def publish(name: str) -> None:
            seq = 0
            while not stop.is_set():
                try:
                    offset = await hub.publish(topic, msg(str(seq), name), timeout=5)
                except errors.AgentScopeProtoError as exc:
                    failures.append(exc)  # not acknowledged: publish it again
                    await asyncio.sleep(0.02)
                    continue
                acknowledged[offset] = (name, seq)
                seq += 1

        async def until(condition: Any) -> None:
            deadline = time.monotonic() + 60
            while not condition():
                assert time.monotonic() < deadline, "timed out"
                await asyncio.sleep(0.01)

        follower = asyncio.ensure_future(follow())
        publishers = [asyncio.ensure_future(publish(f"p{n}")) for n in range(3)]
        await until(lambda: len(acknowledged) >= 300)
        serve.kill()
        serve = ServeProcess(redis_server.url, port)
        await until(lambda: len(acknowledged) >= 900 and len(failures) > 0)
        stop.set()
        await asyncio.gather(*publishers)
        end = await hub.publish(topic, msg("-1", "end"))
        await until(lambda: bool(received) and received[-1].offset == end)
        await live.close()
        await follower
        everything: dict[str, tuple[str, int]] = {}
        replay = await hub.subscribe(topic, after="0-0")
        async for event in replay:
            everything[event.offset] = (event.msg.name, int(event.msg.text))
            if event.offset == end:
                break
        await replay.close()
        await hub.close()
        return received, everything

    try:
        received, everything = asyncio.run(run())
    finally:
        serve.stop()
    assert failures, "the publishers never saw the server down"
    for offset, sent in acknowledged.items():
        assert everything[offset] == sent
    assert [e.offset for e in received] == list(everything)
    for name in ("p0", "p1", "p2"):
        mine = [seq for who, seq in everything.values() if who == name]
        first_seen = list(dict.fromkeys(mine))
        assert first_seen == sorted(first_seen)


def test_a_server_shutting_down_ends_publish_streams_unavailable(topic: str) -> None:
    import grpc

    from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
    from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc

    running = hub_server("memory")
    release = threading.Event()

    def requests() -> Any:
        yield pb.PublishStreamRequest(publishes=[pb.PublishRequest(topic=topic, msg=msg("x"))])
        release.wait(30)

    try:
        with grpc.insecure_channel(running.target) as channel:
            call = pb_grpc.HubServiceStub(channel).PublishStream(requests(), timeout=30)
            assert next(call).results[0].offset
            running.stop()  # the stream waits for its next request: it ends at once
            with pytest.raises(grpc.RpcError) as caught:
                next(call)
            assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "shutting down" in (caught.value.details() or "")
    finally:
        release.set()


def _wait(condition: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.load
def test_ten_publishers_two_servers_three_subscribers(
    redis_server: RedisServer, topic: str
) -> None:
    publishers, each, subscribers = 10, 1000, 3
    servers = [ServeProcess(redis_server.url) for _ in range(2)]

    async def run() -> list[list[tuple[str, str, int]]]:
        clients = [AsyncHubClient(s.target) for s in servers]
        subscriptions = [await clients[i % 2].subscribe(topic) for i in range(subscribers)]

        async def publish(n: int) -> None:
            client = clients[n % 2]
            for i in range(each):
                await client.publish(topic, msg(str(i), f"p{n}"))

        async def collect(subscription: Any) -> list[tuple[str, str, int]]:
            got = []
            async for event in subscription:
                got.append((event.offset, event.msg.name, int(event.msg.text)))
                if len(got) == publishers * each:
                    return got
            raise AssertionError("the subscription ended")

        collecting = [asyncio.ensure_future(collect(s)) for s in subscriptions]
        await asyncio.gather(*(publish(n) for n in range(publishers)))
        results = await asyncio.gather(*collecting)
        for subscription in subscriptions:
            await subscription.close()
        for client in clients:
            await client.close()
        return results

    try:
        results = asyncio.run(run())
    finally:
        for s in servers:
            s.stop()
    for got in results:
        assert len(got) == publishers * each
        assert got == results[0]  # one order of the topic, whichever server
        for n in range(publishers):
            assert [i for _, name, i in got if name == f"p{n}"] == list(range(each))


@pytest.mark.load
def test_an_idle_redis_subscription_outlives_the_blocked_reads(
    redis_server: RedisServer, topic: str
) -> None:
    """A raw stream (no client to resume it) idle for longer than one blocked
    XREAD and redis-py's default read timeout (5 s each) still delivers."""
    import grpc

    from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
    from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc

    running = hub_server(redis_server.url)
    try:
        with grpc.insecure_channel(running.target) as channel:
            stub = pb_grpc.HubServiceStub(channel)
            call = stub.Subscribe(pb.SubscribeRequest(topic=topic), timeout=60)
            assert dict(call.initial_metadata())["hub-after"]
            time.sleep(6.5)
            offset = stub.Publish(pb.PublishRequest(topic=topic, msg=msg("late")), timeout=10)
            assert next(call).offset == offset.offset
            call.cancel()
    finally:
        running.stop()
