"""A Redis hub whose Redis lost its data (restarted without persistence, or
FLUSHALL) never resumes past the loss in silence: an old offset is refused
OUT_OF_RANGE (`lost`) on every path (Subscribe, SubscribeBatches, both
Python clients, `hub subscribe`), once new messages were published too, and
a live subscription ends the same way when it reads into the new stream.
The Redis address never reaches a hub client. Each test has a redis-server
of its own (on a real port, nothing persisted), since it loses its data."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from agentscope_proto.hub import AsyncHubClient, HubClient, HubConfig, open_hub_store

from hub_fixtures import CLI, RedisServer, hub_server, msg, status_details
from server_harness import RunningServer


@pytest.fixture
def redis_alone(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def hub(redis_alone: RedisServer) -> Iterator[RunningServer]:
    running = hub_server(redis_alone.url)
    yield running
    running.stop()


def _flushall(redis_server: RedisServer) -> None:
    import redis

    redis.Redis(port=redis_server.port).flushall()


LOSSES: dict[str, Callable[[RedisServer], None]] = {
    "restart": RedisServer.restart,
    "flushall": _flushall,
}


def _publish(client: HubClient, topic: str, text: str) -> str:
    """`client.publish`, retried while the hub's Redis connection comes back
    (the first command after a restart may find it closed)."""
    for _ in range(50):
        try:
            return client.publish(topic, msg(text), timeout=10)
        except errors.HubUnavailableError:
            time.sleep(0.1)
    return client.publish(topic, msg(text), timeout=10)


def _refused_as_lost(error: errors.OffsetOutOfRangeError, after: str, first: str) -> None:
    assert (error.path, error.why) == ("after", "lost")
    assert after in error.reason
    assert f"it now starts at {first}" in error.reason


@pytest.mark.parametrize("loss", LOSSES)
def test_an_offset_from_before_the_loss_is_refused_on_every_path(
    redis_alone: RedisServer, hub: RunningServer, topic: str, loss: str
) -> None:
    with HubClient(hub.target) as client:
        old = client.publish_many(topic, [msg(f"old {i}") for i in range(30)])
        after = old[9]  # a subscriber that had 10 of them
        LOSSES[loss](redis_alone)
        new = [_publish(client, topic, f"new {i}") for i in range(5)]
        assert all(offset not in old for offset in new)

        with pytest.raises(errors.OffsetOutOfRangeError) as caught:
            client.subscribe(topic, after=after, reconnect=0)
        _refused_as_lost(caught.value, after, new[0])

    with grpc.insecure_channel(hub.target) as channel:
        stub = pb_grpc.HubServiceStub(channel)
        for call, request in (
            (stub.Subscribe, pb.SubscribeRequest(topic=topic, after=after)),
            (stub.SubscribeBatches, pb.SubscribeBatchesRequest(topic=topic, after=after)),
        ):
            with pytest.raises(grpc.RpcError) as raw:
                next(call(request, timeout=10))
            assert raw.value.code() is grpc.StatusCode.OUT_OF_RANGE
            assert status_details(raw.value)["ErrorInfo"].metadata["why"] == "lost"

    async def async_client() -> None:
        async with AsyncHubClient(hub.target) as client:
            with pytest.raises(errors.OffsetOutOfRangeError) as caught:
                await client.subscribe(topic, after=after, reconnect=0)
            _refused_as_lost(caught.value, after, new[0])

    asyncio.run(async_client())

    result = subprocess.run(
        [*CLI, "hub", "subscribe", "--target", hub.target, topic, "--after", after],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"the topic's messages after {after} are gone" in result.stderr


def _live(stub: Any, topic: str, after: str, batches: bool) -> Iterator[str]:
    """The offsets a raw stream receives, resumed after the last one when it
    ends UNAVAILABLE (as the clients do: a restarted Redis drops the hub's
    connection), live once this returns its first."""
    while True:
        if batches:
            stream = stub.SubscribeBatches(pb.SubscribeBatchesRequest(topic=topic, after=after))
        else:
            stream = stub.Subscribe(pb.SubscribeRequest(topic=topic, after=after))
        stream.initial_metadata()
        yield ""  # live
        try:
            for got in stream:
                for event in got.events if batches else [got]:
                    after = event.offset
                    yield after
        except grpc.RpcError as error:
            if error.code() is not grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(0.1)


def _next_event(stream: Iterator[str]) -> str:
    """The next offset `_live` yields, past its resumptions."""
    while (offset := next(stream)) == "":
        pass
    return offset


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("batches", [False, True])
def test_a_live_subscription_ends_when_its_topic_is_lost(
    redis_alone: RedisServer, hub: RunningServer, topic: str, loss: str, batches: bool
) -> None:
    with grpc.insecure_channel(hub.target) as channel, HubClient(hub.target) as client:
        stream = _live(pb_grpc.HubServiceStub(channel), topic, "", batches)
        assert next(stream) == ""
        offsets = [client.publish(topic, msg(f"old {i}")) for i in range(3)]
        assert [next(stream) for _ in offsets] == offsets
        LOSSES[loss](redis_alone)
        _publish(client, topic, "new")
        with pytest.raises(grpc.RpcError) as caught:
            _next_event(stream)
        assert caught.value.code() is grpc.StatusCode.OUT_OF_RANGE
        assert status_details(caught.value)["ErrorInfo"].metadata["why"] == "lost"
        assert f"the topic's messages after {offsets[-1]} are gone" in caught.value.details()


@pytest.mark.parametrize("loss", LOSSES)
def test_the_resuming_client_reports_the_loss(
    redis_alone: RedisServer, hub: RunningServer, topic: str, loss: str
) -> None:
    with HubClient(hub.target) as client, client.subscribe(topic) as events:
        offsets = [client.publish(topic, msg(f"old {i}")) for i in range(3)]
        assert [next(events).offset for _ in offsets] == offsets
        LOSSES[loss](redis_alone)
        _publish(client, topic, "new")
        with pytest.raises(errors.OffsetOutOfRangeError) as caught:
            next(events)
        assert caught.value.why == "lost"
        assert offsets[-1] in caught.value.reason


def test_a_subscription_reading_behind_its_topic_stops_at_the_loss(
    redis_alone: RedisServer, topic: str
) -> None:
    """One that reads by itself (not from the topic's shared read): it had
    the oldest message only when Redis lost the rest."""

    async def main() -> None:
        store = await open_hub_store(HubConfig(url=redis_alone.url))
        try:
            offsets = await store.publish_many([(topic, f"m{i}".encode()) for i in range(5)])
            subscription = await store.subscribe(topic, str(offsets[0]))
            _flushall(redis_alone)
            new = await store.publish(topic, b"new")
            with pytest.raises(errors.OffsetOutOfRangeError) as caught:
                await asyncio.wait_for(subscription.next(), 30)
            _refused_as_lost(caught.value, str(offsets[0]), new)
            subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_the_redis_address_never_reaches_a_hub_client(
    redis_alone: RedisServer, hub: RunningServer, topic: str
) -> None:
    with HubClient(hub.target) as client:
        client.publish(topic, msg("before"))
        redis_alone.stop()
        failures: list[Exception] = []
        with pytest.raises(errors.HubUnavailableError) as caught:
            client.publish(topic, msg("x"), timeout=30)
        failures.append(caught.value)
        with pytest.raises(errors.AgentScopeProtoError) as refused:
            client.subscribe(topic, reconnect=0)
        failures.append(refused.value)
    for failure in failures:
        assert "the hub store failed" in str(failure)
        assert str(redis_alone.port) not in str(failure), failure
        assert "127.0.0.1" not in str(failure), failure
