"""PublishStream and SubscribeBatches, the same on both stores (memory, Redis
Streams on a real redis-server): answers in order, one result per message,
errors per message without ending the stream, the stream's own errors and
limit, batches; the clients on them (a shared stream for concurrent
publishes, `publish_many`, batched subscriptions) and their fallback to
`Publish` and `Subscribe` on a server that predates them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from agentscope_proto.hub import SERVICE_NAME, AsyncHubClient, HubClient
from agentscope_proto.hub import servicer as hub_servicer

from hub_fixtures import STORES, details, hub_server, msg, status_details, store_url
from server_harness import RunningServer


@pytest.fixture(scope="module", params=STORES)
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    running = hub_server(store_url(request, request.param))
    yield running
    running.stop()


@pytest.fixture(scope="module", params=STORES)
def small_server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    """Messages of 1 KiB at most, two subscriptions and two publish streams."""
    running = hub_server(
        store_url(request, request.param), max_msg_kb=1, max_subscribers=2, max_publishers=2
    )
    yield running
    running.stop()


@pytest.fixture
def stub(server: RunningServer) -> Iterator[pb_grpc.HubServiceStub]:
    with grpc.insecure_channel(server.target) as channel:
        yield pb_grpc.HubServiceStub(channel)


def _publishes(topic: str, *texts: str) -> pb.PublishStreamRequest:
    return pb.PublishStreamRequest(
        publishes=[pb.PublishRequest(topic=topic, msg=msg(text)) for text in texts]
    )


def _events(call: Any, count: int) -> list[pb.HubEvent]:
    """`count` events of a SubscribeBatches call, batch after batch."""
    events: list[pb.HubEvent] = []
    while len(events) < count:
        batch = next(call)
        assert batch.events, "a batch holds at least one event"
        events.extend(batch.events)
    assert len(events) == count
    return events


# -- PublishStream ----------------------------------------------------------------


def test_each_request_is_answered_in_order_with_one_offset_per_message(
    stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    live = stub.SubscribeBatches(pb.SubscribeBatchesRequest(topic=topic))
    assert dict(live.initial_metadata())["hub-after"]
    requests = [_publishes(topic, "a", "b", "c"), _publishes(topic), _publishes(topic, "d")]
    responses = list(stub.PublishStream(iter(requests), timeout=30))
    assert [len(r.results) for r in responses] == [3, 0, 1]
    offsets = [result.offset for r in responses for result in r.results]
    assert all(offsets)
    assert len(set(offsets)) == 4
    events = _events(live, 4)
    live.cancel()
    assert [(e.offset, e.msg.text) for e in events] == list(zip(offsets, "abcd", strict=True))


def test_a_bad_message_fails_alone_and_the_stream_goes_on(
    small_server: RunningServer, topic: str
) -> None:
    with grpc.insecure_channel(small_server.target) as channel:
        stub = pb_grpc.HubServiceStub(channel)
        first = pb.PublishStreamRequest(
            publishes=[
                pb.PublishRequest(topic=topic, msg=msg("ok 1")),
                pb.PublishRequest(topic="no spaces", msg=msg("x")),
                pb.PublishRequest(topic=topic),
                pb.PublishRequest(topic=topic, msg=msg("x" * 2000)),
                pb.PublishRequest(topic=topic, msg=msg("ok 2")),
            ]
        )
        responses = list(stub.PublishStream(iter([first, _publishes(topic, "ok 3")]), timeout=30))
        with HubClient(small_server.target) as hub:
            stored = [e.msg.text for e in _replay(hub, topic, 3)]
    results = responses[0].results
    assert [r.WhichOneof("outcome") for r in results] == [
        "offset",
        "error",
        "error",
        "error",
        "offset",
    ]
    assert responses[1].results[0].offset
    assert stored == ["ok 1", "ok 2", "ok 3"]
    # Each error is the status a Publish of that message would end with.
    bad_topic, no_msg, too_big = (results[i].error for i in (1, 2, 3))
    assert (bad_topic.code, no_msg.code) == (code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT)
    assert details(bad_topic)["BadRequest"].field_violations[0].field == "topic"
    assert details(no_msg)["BadRequest"].field_violations[0].field == "msg"
    assert too_big.code == code_pb2.RESOURCE_EXHAUSTED
    assert details(too_big)["QuotaFailure"].violations[0].subject == "hub_max_msg_kb"
    assert details(too_big)["ErrorInfo"].reason == "LimitExceededError"


def _replay(hub: HubClient, topic: str, count: int) -> list[pb.HubEvent]:
    with hub.subscribe(topic, after="0-0") as events:
        return [next(events) for _ in range(count)]


def test_a_request_with_too_many_messages_ends_the_stream(
    stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    texts = [str(i) for i in range(hub_servicer.MAX_PUBLISHES + 1)]
    call = stub.PublishStream(iter([_publishes(topic, "first"), _publishes(topic, *texts)]))
    assert next(call).results[0].offset
    with pytest.raises(grpc.RpcError) as caught:
        next(call)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    violation = status_details(caught.value)["BadRequest"].field_violations[0]
    assert violation.field == "requests[1].publishes"


def test_an_undecodable_request_ends_the_stream_naming_it(
    server: RunningServer, topic: str
) -> None:
    good = _publishes(topic, "good").SerializeToString()
    with grpc.insecure_channel(server.target) as channel:
        publish = channel.stream_stream(
            f"/{SERVICE_NAME}/PublishStream",
            response_deserializer=pb.PublishStreamResponse.FromString,
        )
        call = publish(iter([good, b"\x0a\x05ab"]), timeout=30)
        assert next(call).results[0].offset
        with pytest.raises(grpc.RpcError) as caught:
            next(call)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert status_details(caught.value)["BadRequest"].field_violations[0].field == "requests[1]"


def test_publish_streams_beyond_the_limit_are_resource_exhausted(
    small_server: RunningServer, topic: str
) -> None:
    with grpc.insecure_channel(small_server.target) as channel:
        stub = pb_grpc.HubServiceStub(channel)
        gates = [threading.Event() for _ in range(3)]

        def requests(gate: threading.Event) -> Iterator[pb.PublishStreamRequest]:
            yield _publishes(topic, "x")
            gate.wait(30)

        open_calls = [stub.PublishStream(requests(gate)) for gate in gates[:2]]
        for call in open_calls:
            assert next(call).results[0].offset  # both streams are open
        third = stub.PublishStream(requests(gates[2]))
        with pytest.raises(grpc.RpcError) as caught:
            next(third)
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        quota = status_details(caught.value)["QuotaFailure"].violations[0]
        assert quota.subject == "hub_max_publishers"
        gates[0].set()  # the first stream ends: its slot frees once the server sees it
        assert list(open_calls[0]) == []
        for _ in range(500):
            again = stub.PublishStream(iter([_publishes(topic, "y")]))
            try:
                assert next(again).results
                break
            except grpc.RpcError:
                assert again.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                threading.Event().wait(0.01)
        else:
            pytest.fail("the ended stream's slot was never freed")
        for gate in gates:
            gate.set()


# -- SubscribeBatches ---------------------------------------------------------------


def test_batches_resume_after_an_offset_and_stay_live(
    stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    first = stub.Publish(pb.PublishRequest(topic=topic, msg=msg("m0")), timeout=10).offset
    (answer,) = stub.PublishStream(iter([_publishes(topic, *"12345")]), timeout=30)
    backlog = [result.offset for result in answer.results]
    call = stub.SubscribeBatches(pb.SubscribeBatchesRequest(topic=topic, after=first))
    assert dict(call.initial_metadata())["hub-after"] == first
    assert [e.offset for e in _events(call, 5)] == backlog
    live = stub.Publish(pb.PublishRequest(topic=topic, msg=msg("m6")), timeout=10).offset
    assert [e.offset for e in _events(call, 1)] == [live]
    call.cancel()


def test_batch_subscriptions_refuse_what_subscribe_refuses(
    stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    last = stub.Publish(pb.PublishRequest(topic=topic, msg=msg("m")), timeout=10).offset
    ms, seq = last.split("-")
    cases = [
        (pb.SubscribeBatchesRequest(topic="a b"), grpc.StatusCode.INVALID_ARGUMENT, "topic"),
        (
            pb.SubscribeBatchesRequest(topic=topic, after="x"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "after",
        ),
        (
            pb.SubscribeBatchesRequest(topic=topic, after=f"{int(ms) + 10**9}-{seq}"),
            grpc.StatusCode.OUT_OF_RANGE,
            "after",
        ),
    ]
    for request, code, field in cases:
        with pytest.raises(grpc.RpcError) as caught:
            next(stub.SubscribeBatches(request, timeout=10))
        assert caught.value.code() is code
        assert status_details(caught.value)["BadRequest"].field_violations[0].field == field


def test_batch_subscriptions_count_against_the_subscriber_limit(
    small_server: RunningServer, topic: str
) -> None:
    with grpc.insecure_channel(small_server.target) as channel:
        stub = pb_grpc.HubServiceStub(channel)
        one = stub.Subscribe(pb.SubscribeRequest(topic=topic))
        two = stub.SubscribeBatches(pb.SubscribeBatchesRequest(topic=topic))
        assert one.initial_metadata()
        assert two.initial_metadata()
        with pytest.raises(grpc.RpcError) as caught:
            next(stub.SubscribeBatches(pb.SubscribeBatchesRequest(topic=topic), timeout=10))
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        one.cancel()
        two.cancel()


def test_a_response_holds_at_most_the_batch_bytes_or_one_event() -> None:
    sizes = [10, 600, 10, 1500, 5]
    entries = [(f"1-{i}".encode(), msg("x" * n).SerializeToString()) for i, n in enumerate(sizes)]
    original = hub_servicer._BATCH_BYTES
    hub_servicer._BATCH_BYTES = 1000
    try:
        responses = [
            pb.SubscribeBatchesResponse.FromString(r) for r in hub_servicer._batches(entries)
        ]
    finally:
        hub_servicer._BATCH_BYTES = original
    assert [[e.offset for e in r.events] for r in responses] == [
        ["1-0", "1-1", "1-2"],
        ["1-3"],
        ["1-4"],
    ]


# -- the clients --------------------------------------------------------------------


def test_concurrent_async_publishes_share_a_stream_and_keep_each_ones_order(
    server: RunningServer, topic: str
) -> None:
    tasks, each = 20, 15

    async def run() -> tuple[list[list[str]], list[pb.HubEvent]]:
        async with AsyncHubClient(server.target) as hub:
            subscription = await hub.subscribe(topic)

            async def publish(n: int) -> list[str]:
                return [await hub.publish(topic, msg(str(i), f"p{n}")) for i in range(each)]

            offsets = await asyncio.gather(*(publish(n) for n in range(tasks)))
            received = []
            async for event in subscription:
                received.append(event)
                if len(received) == tasks * each:
                    break
            await subscription.close()
            return offsets, received

    offsets, received = asyncio.run(run())
    assert sorted(o for mine in offsets for o in mine) == sorted(e.offset for e in received)
    for n in range(tasks):
        mine = [e for e in received if e.msg.name == f"p{n}"]
        assert [int(e.msg.text) for e in mine] == list(range(each))
        assert [e.offset for e in mine] == offsets[n]


def test_publish_many_returns_the_offsets_in_order(server: RunningServer, topic: str) -> None:
    texts = [f"m{i}" for i in range(1200)]  # more than one request's worth

    async def run() -> list[str]:
        async with AsyncHubClient(server.target) as hub:
            return await hub.publish_many(topic, [msg(t) for t in texts])

    async_offsets = asyncio.run(run())
    with HubClient(server.target) as hub:
        sync_offsets = hub.publish_many(topic, [{"name": "a", "role": "user", "content": "d"}])
        with hub.subscribe(topic, after="0-0") as events:
            got = [next(events) for _ in range(1201)]
    assert [e.offset for e in got] == async_offsets + sync_offsets
    assert [e.msg.text for e in got] == [*texts, "d"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_publish_many_raises_the_first_failure_after_all_were_answered(
    small_server: RunningServer, topic: str, kind: str
) -> None:
    batch = [msg("a"), msg("x" * 2000), msg("b")]
    if kind == "sync":
        with (
            HubClient(small_server.target) as hub,
            pytest.raises(errors.LimitExceededError) as caught,
        ):
            hub.publish_many(topic, batch)
    else:

        async def run() -> None:
            async with AsyncHubClient(small_server.target) as hub:
                await hub.publish_many(topic, batch)

        with pytest.raises(errors.LimitExceededError) as caught:
            asyncio.run(run())
    assert caught.value.path == "hub_max_msg_kb"
    assert "msgs[1] was not published; 2 of the 3 were" in getattr(caught.value, "__notes__", [])
    with HubClient(small_server.target) as hub:
        assert [e.msg.text for e in _replay(hub, topic, 2)] == ["a", "b"]


def test_async_publish_raises_the_servers_error_for_its_message(
    small_server: RunningServer, topic: str
) -> None:
    async def run() -> list[Any]:
        async with AsyncHubClient(small_server.target) as hub:
            return await asyncio.gather(
                hub.publish(topic, msg("x" * 2000)),
                hub.publish("bad topic", msg("y")),
                hub.publish(topic, msg("fine")),
                return_exceptions=True,
            )

    too_big, bad_topic, fine = asyncio.run(run())
    assert isinstance(too_big, errors.LimitExceededError)
    assert isinstance(bad_topic, errors.HubError)
    assert bad_topic.path == "topic"
    assert isinstance(fine, str)


def test_a_message_too_large_for_the_client_is_refused_before_sending(
    server: RunningServer, topic: str
) -> None:
    big = msg("x" * (1024 * 1024 + 10))

    async def run() -> str:
        async with AsyncHubClient(server.target, max_message_mb=1) as hub:
            with pytest.raises(errors.RemoteError) as caught:
                await hub.publish(topic, big)
            assert caught.value.code is grpc.StatusCode.RESOURCE_EXHAUSTED
            return await hub.publish(topic, msg("the stream is fine"))

    assert asyncio.run(run())
    with HubClient(server.target, max_message_mb=1) as hub, pytest.raises(errors.RemoteError):
        hub.publish_many(topic, [big])


def test_closing_the_async_client_settles_every_publish(server: RunningServer, topic: str) -> None:
    async def run() -> list[Any]:
        hub = AsyncHubClient(server.target)
        await hub.publish(topic, msg("the stream is open"))
        pending = [asyncio.ensure_future(hub.publish(topic, msg(str(i)))) for i in range(50)]
        await asyncio.sleep(0)
        await hub.close()
        return await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 30)

    for outcome in asyncio.run(run()):
        if not isinstance(outcome, str):
            assert isinstance(outcome, errors.RemoteError), outcome
            assert outcome.code is grpc.StatusCode.CANCELLED


def test_closing_a_client_ends_the_iterations_of_its_subscriptions(
    server: RunningServer, topic: str
) -> None:
    """A client closed while a thread (blocking client) or a task (asyncio)
    iterates one of its subscriptions ends that iteration, as closing the
    subscription does: no `CancelledError` out of a read grpc's closed
    channel cancelled, no `CANCELLED` status."""
    hub = HubClient(server.target)
    events = hub.subscribe(topic)
    outcome: list[Any] = []

    def iterate() -> None:
        try:
            outcome.extend(event.msg.text for event in events)
        except Exception as exc:  # the outcome this test checks
            outcome.append(exc)

    reader = threading.Thread(target=iterate)
    reader.start()
    hub.publish(topic, msg("before"))
    while not outcome:
        threading.Event().wait(0.01)
    hub.close()
    reader.join(10)
    assert not reader.is_alive()
    assert outcome == ["before"]

    async def run() -> list[str]:
        client = AsyncHubClient(server.target)
        subscription = await client.subscribe(topic)
        texts: list[str] = []

        async def read() -> None:
            async for event in subscription:
                texts.append(event.msg.text)

        task = asyncio.ensure_future(read())
        await client.publish(topic, msg("before"))
        while not texts:
            await asyncio.sleep(0.01)
        await client.close()
        await asyncio.wait_for(task, 10)  # ended, not cancelled
        return texts

    assert asyncio.run(run()) == ["before"]


def test_closing_a_client_ends_a_subscription_waiting_to_reconnect() -> None:
    """Its server gone, a subscription waits to reconnect; closing its client
    then ends its iteration (it used to try the closed channel: `ValueError`,
    `UsageError`)."""
    running = hub_server("memory")
    hub = HubClient(running.target)
    events = hub.subscribe("t", reconnect=None)
    outcome: list[Any] = []

    def iterate() -> None:
        try:
            outcome.extend(event.msg.text for event in events)
            outcome.append("ended")
        except Exception as exc:  # the outcome this test checks
            outcome.append(exc)

    reader = threading.Thread(target=iterate)
    reader.start()
    running.stop()
    threading.Event().wait(0.5)  # reconnecting now
    hub.close()
    reader.join(10)
    assert outcome == ["ended"]

    async def run() -> list[Any]:
        running = hub_server("memory")
        client = AsyncHubClient(running.target)
        subscription = await client.subscribe("t", reconnect=None)
        ended: list[Any] = []

        async def read() -> None:
            try:
                ended.extend([event async for event in subscription])
                ended.append("ended")
            except Exception as exc:  # the outcome this test checks
                ended.append(exc)

        task = asyncio.ensure_future(read())
        running.stop()
        await asyncio.sleep(0.5)
        await client.close()
        await asyncio.wait_for(task, 10)
        return ended

    assert asyncio.run(run()) == ["ended"]


# -- a server that predates the stream RPCs -------------------------------------------


class _OldServer:
    """A HubService with only Publish and Subscribe, as the first release
    served it; `most_at_once`: the most Publish calls it ran at a time."""

    def __init__(self) -> None:
        self.running = self.most_at_once = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server, self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(
            10
        )

    async def _start(self) -> tuple[grpc.aio.Server, int]:
        from agentscope_proto.hub import HubServicer, MemoryHubStore

        hub = HubServicer(MemoryHubStore())
        server = grpc.aio.server()

        async def publish(request: pb.PublishRequest, context: Any) -> Any:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            try:
                await asyncio.sleep(0.001)  # calls sent together would meet here
                return await hub.Publish(request, context)
            finally:
                self.running -= 1

        methods = {
            "Publish": grpc.unary_unary_rpc_method_handler(
                publish,
                request_deserializer=pb.PublishRequest.FromString,
                response_serializer=pb.PublishResponse.SerializeToString,
            ),
            "Subscribe": grpc.unary_stream_rpc_method_handler(
                hub.Subscribe,
                request_deserializer=pb.SubscribeRequest.FromString,
                response_serializer=bytes,
            ),
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, methods),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(0), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_clients_fall_back_to_publish_and_subscribe_on_an_older_server() -> None:
    old = _OldServer()
    target = f"127.0.0.1:{old.port}"
    try:

        async def run() -> tuple[list[str], list[str]]:
            async with AsyncHubClient(target) as hub:
                subscription = await hub.subscribe("room")
                offsets = list(
                    await asyncio.gather(*(hub.publish("room", msg(str(i))) for i in range(5)))
                )
                # Unary publishes, one after another: stored in the list's order.
                old.most_at_once = 0
                offsets += await hub.publish_many("room", [msg(str(i)) for i in range(5, 45)])
                assert old.most_at_once == 1
                got = []
                async for event in subscription:
                    got.append(event.offset)
                    if len(got) == 45:
                        break
                await subscription.close()
                return offsets, got

        offsets, got = asyncio.run(run())
        assert got == offsets
        with HubClient(target) as hub:
            more = hub.publish_many("room", [msg("7"), msg("8")])
            with hub.subscribe("room", after=offsets[-1]) as events:
                assert [next(events).offset for _ in range(2)] == more
    finally:
        old.stop()
