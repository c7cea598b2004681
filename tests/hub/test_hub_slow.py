"""A subscriber that stops reading costs a Redis hub server at most
`subscriber_buffer_mb` of its topic's messages: past it the subscription
ends RESOURCE_EXHAUSTED, the bytes held for it are released, and the Python
clients resume from the last offset they received, missing nothing. The
bytes are measured by the subscription's own accounting (`held`)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from agentscope_proto.hub import HubClient, HubConfig, open_hub_store

from hub_fixtures import RedisServer, hub_server, msg, status_details
from server_harness import RunningServer

MB = 1024 * 1024
BIG = 256 * 1024  # bytes of text per message


def test_a_slow_subscription_is_ended_past_its_buffer_and_released(
    redis_server: RedisServer,
) -> None:
    topic = f"t/{uuid.uuid4().hex}"

    async def main() -> None:
        store: Any = await open_hub_store(HubConfig(url=redis_server.url, subscriber_buffer_mb=1))
        try:
            fast = await store.subscribe(topic, "")
            slow = await store.subscribe(topic, "")
            # Both follow the topic's read (it hands them its batches) from here on.
            reads = [asyncio.ensure_future(sub.next()) for sub in (fast, slow)]
            await asyncio.sleep(0.1)
            first = await store.publish(topic, b"x" * 100)
            got = await asyncio.wait_for(asyncio.gather(*reads), 30)
            assert [[o.decode() for o, _ in batch] for batch in got] == [[first], [first]]
            taken = 1
            held: list[int] = []
            offsets = []
            for _ in range(12):  # 12 x 128 KiB: 1.5 MiB behind
                offsets.append(await store.publish(topic, b"y" * (128 * 1024)))
                while taken < len(offsets) + 1:
                    taken += len(await asyncio.wait_for(fast.next(), 30))
                held.append(slow.held)
            assert max(held) <= MB
            assert held[-1] == 0  # ended, and nothing kept for it
            with pytest.raises(errors.LimitExceededError) as caught:
                await asyncio.wait_for(slow.next(), 30)
            assert caught.value.path == "hub_subscriber_buffer_mb"
            tail = store.tails[f"agentscope:hub:{{{topic}}}"]
            assert list(tail.listeners) == [fast]
            slow.close()
            again = await store.subscribe(topic, first)  # resumes by its offset
            got: list[str] = []
            while len(got) < len(offsets):
                got += [o.decode() for o, _ in await asyncio.wait_for(again.next(), 30)]
            assert got == offsets
            again.close()
            fast.close()
        finally:
            await store.close()

    asyncio.run(main())


@pytest.fixture(scope="module")
def small_buffer(redis_server: RedisServer) -> Iterator[RunningServer]:
    running = hub_server(redis_server.url, subscriber_buffer_mb=1)
    yield running
    running.stop()


def _held(server: RunningServer) -> int:
    """The most bytes the server's Redis store holds for one subscription now."""
    assert server.hub is not None
    tails = list(server.hub.store.tails.values())  # type: ignore[attr-defined]
    return max((s.held for tail in tails for s in list(tail.listeners)), default=0)


def test_a_subscriber_that_stops_reading_costs_the_server_its_buffer_at_most(
    small_buffer: RunningServer, topic: str
) -> None:
    with (
        grpc.insecure_channel(small_buffer.target) as channel,
        HubClient(small_buffer.target) as client,
    ):
        stub = pb_grpc.HubServiceStub(channel)
        stalled = stub.Subscribe(pb.SubscribeRequest(topic=topic))
        stalled.initial_metadata()
        resuming = client.subscribe(topic)  # read only once all is published
        with client.subscribe(topic) as reader:
            offsets: list[str] = []
            held: list[int] = []
            for i in range(48):  # 12 MiB for each subscriber
                offsets.append(client.publish(topic, msg(f"{i} " + "z" * BIG)))
                assert next(reader).offset == offsets[-1]  # the topic's read goes on
                held.append(_held(small_buffer))
        assert max(held) <= MB
        deadline = time.monotonic() + 30
        while _held(small_buffer) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _held(small_buffer) == 0
        received: list[str] = []
        with pytest.raises(grpc.RpcError) as caught:
            received.extend(event.offset for event in stalled)
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        violation = status_details(caught.value)["QuotaFailure"].violations[0]
        assert violation.subject == "hub_subscriber_buffer_mb"
        assert received == offsets[: len(received)]  # in order, then the end
        assert len(received) < len(offsets)
        # The client resumes from its last offset by itself, missing nothing.
        with resuming:
            assert [next(resuming).offset for _ in offsets] == offsets
