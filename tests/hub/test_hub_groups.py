"""Consumer groups on hub topics, the same on both stores (memory, Redis
Streams on a real redis-server): each message to one member, acknowledged,
taken over from a member that leaves it unacknowledged, at most
`max_unacked` held at once; bad input named by field."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import grpc
import pytest

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from agentscope_proto.hub import ConsumerGroup, HubClient

from hub_fixtures import STORES, hub_server, msg, status_details, store_url
from server_harness import RunningServer


@pytest.fixture(scope="module", params=STORES)
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    running = hub_server(store_url(request, request.param))
    yield running
    running.stop()


@pytest.fixture
def client(server: RunningServer) -> Iterator[HubClient]:
    with HubClient(server.target) as hub:
        yield hub


@pytest.fixture
def stub(server: RunningServer) -> Iterator[pb_grpc.HubServiceStub]:
    with grpc.insecure_channel(server.target) as channel:
        yield pb_grpc.HubServiceStub(channel)


def _member(member: str, **options: int) -> ConsumerGroup:
    return ConsumerGroup(name="workers", member=member, **options)


def _violation(error: grpc.RpcError) -> str:
    return str(status_details(error)["BadRequest"].field_violations[0].field)


def test_each_message_goes_to_one_member_and_acks_are_counted(
    client: HubClient, topic: str
) -> None:
    with (
        client.subscribe(topic, group=_member("a", max_unacked=5)) as a,
        client.subscribe(topic, group=_member("b", max_unacked=5)) as b,
    ):
        offsets = client.publish_many(topic, [msg(f"m{i}") for i in range(10)])
        # Each member holds at most 5 unacknowledged: the 10 are split.
        first = [next(a) for _ in range(5)]
        second = [next(b) for _ in range(5)]
        got = [e.offset for e in first + second]
        assert sorted(got) == sorted(offsets)
        assert a.ack(*(e.offset for e in first)) == 5
        assert client.ack(topic, "workers", "b", [e.offset for e in second]) == 5


def test_a_member_gets_more_once_it_acknowledges(client: HubClient, topic: str) -> None:
    with client.subscribe(topic, group=_member("a", max_unacked=2)) as a:
        client.publish_many(topic, [msg(f"m{i}") for i in range(4)])
        held = [next(a), next(a)]
        assert [e.msg.text for e in held] == ["m0", "m1"]
        a.ack(held[0].offset)
        assert next(a).msg.text == "m2"


def test_an_unacknowledged_message_goes_to_another_member_after_claim_idle(
    client: HubClient, topic: str
) -> None:
    with client.subscribe(topic, group=_member("a", claim_idle_ms=200)) as a:
        offset = client.publish(topic, msg("job"))
        assert next(a).offset == offset  # a holds it, and never acknowledges
        with client.subscribe(topic, group=_member("b", claim_idle_ms=200)) as b:
            taken = next(b)
            assert (taken.offset, taken.msg.text) == (offset, "job")
            with pytest.raises(errors.HubError) as caught:
                a.ack(offset)  # no longer a's
            assert caught.value.path == "offsets[0]"
            assert b.ack(offset) == 1


def test_a_member_that_comes_back_gets_what_it_held_first(client: HubClient, topic: str) -> None:
    with client.subscribe(topic, group=_member("a")) as a:
        offsets = client.publish_many(topic, [msg("one"), msg("two")])
        assert [next(a).offset, next(a).offset] == offsets
    with client.subscribe(topic, group=_member("a")) as again:
        client.publish(topic, msg("three"))
        assert [next(again).msg.text for _ in range(3)] == ["one", "two", "three"]


def test_a_new_group_starts_at_the_end_or_at_the_start(client: HubClient, topic: str) -> None:
    client.publish(topic, msg("before"))
    earliest = ConsumerGroup(name="all", member="x", start=pb.GROUP_START_EARLIEST)
    with (
        client.subscribe(topic, group=earliest) as everything,
        client.subscribe(topic, group=_member("x")) as latest,
    ):
        client.publish(topic, msg("after"))
        assert [next(everything).msg.text for _ in range(2)] == ["before", "after"]
        assert next(latest).msg.text == "after"


def test_groups_and_plain_subscribers_each_see_every_message(client: HubClient, topic: str) -> None:
    with (
        client.subscribe(topic) as plain,
        client.subscribe(topic, group=_member("a")) as a,
        client.subscribe(topic, group=ConsumerGroup(name="other", member="a")) as other,
    ):
        offset = client.publish(topic, msg("x"))
        assert next(plain).offset == next(a).offset == next(other).offset == offset


@pytest.mark.parametrize(
    ("group", "field"),
    [
        (ConsumerGroup(member="a"), "group.name"),
        (ConsumerGroup(name="bad name", member="a"), "group.name"),
        (ConsumerGroup(name="g"), "group.member"),
        (ConsumerGroup(name="g", member="-a"), "group.member"),
        (ConsumerGroup(name="g", member="a", start=7), "group.start"),  # type: ignore[arg-type]
        (ConsumerGroup(name="g", member="a", claim_idle_ms=99), "group.claim_idle_ms"),
        (ConsumerGroup(name="g", member="a", claim_idle_ms=86_400_001), "group.claim_idle_ms"),
        (ConsumerGroup(name="g", member="a", max_unacked=257), "group.max_unacked"),
    ],
)
def test_bad_group_options_are_invalid_argument_naming_the_field(
    stub: pb_grpc.HubServiceStub, topic: str, group: ConsumerGroup, field: str
) -> None:
    for request in (
        pb.SubscribeRequest(topic=topic, group=group),
        pb.SubscribeBatchesRequest(topic=topic, group=group),
    ):
        call = stub.Subscribe if isinstance(request, pb.SubscribeRequest) else stub.SubscribeBatches
        with pytest.raises(grpc.RpcError) as caught:
            next(call(request, timeout=10))  # type: ignore[operator]
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert _violation(caught.value) == field


def test_a_member_with_an_offset_is_invalid_argument(
    stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    request = pb.SubscribeRequest(topic=topic, after="0-0", group=_member("a"))
    with pytest.raises(grpc.RpcError) as caught:
        next(stub.Subscribe(request, timeout=10))
    assert _violation(caught.value) == "after"


def test_bad_acks_are_invalid_argument_naming_the_field_and_acknowledge_nothing(
    client: HubClient, stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    with client.subscribe(topic, group=_member("a", max_unacked=1)) as a:
        offsets = client.publish_many(topic, [msg("one"), msg("two")])
        held = next(a).offset
        cases = [
            (pb.AckRequest(topic=topic, group="nope", member="a", offsets=[held]), "group"),
            (pb.AckRequest(topic=topic, group="workers", member="", offsets=[held]), "member"),
            (pb.AckRequest(topic=topic, group="workers", member="a"), "offsets"),
            (pb.AckRequest(topic=topic, group="workers", member="a", offsets=["x"]), "offsets[0]"),
            # offsets[1] was never delivered: nothing is acknowledged, held included
            (
                pb.AckRequest(topic=topic, group="workers", member="a", offsets=[held, offsets[1]]),
                "offsets[1]",
            ),
            (pb.AckRequest(topic=topic, group="workers", member="b", offsets=[held]), "offsets[0]"),
            (pb.AckRequest(topic="bad topic", group="workers", member="a"), "topic"),
            (
                pb.AckRequest(topic=topic, group="workers", member="a", offsets=[held] * 1001),
                "offsets",
            ),
        ]
        for request, field in cases:
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ack(request, timeout=10)
            assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT, field
            assert _violation(caught.value) == field
        assert a.ack(held, held) == 1  # still pending: nothing above acknowledged it
        with pytest.raises(errors.HubError) as again:
            a.ack(held)
        assert again.value.path == "offsets[0]"
        assert next(a).offset == offsets[1]


def test_an_ack_through_another_client_gives_the_member_room(
    server: RunningServer, client: HubClient, topic: str
) -> None:
    with (
        client.subscribe(topic, group=_member("a", max_unacked=1)) as a,
        HubClient(server.target) as other,
    ):
        client.publish_many(topic, [msg("one"), msg("two")])
        other.ack(topic, "workers", "a", [next(a).offset])
        assert next(a).msg.text == "two"


@pytest.mark.parametrize("store", STORES)
def test_a_member_never_takes_its_own_unacknowledged_message_over(
    request: pytest.FixtureRequest, store: str, topic: str
) -> None:
    """A message its member holds past `claim_idle_ms` goes to another
    member, and to that one alone: the holder does not take it over from
    itself (which would deliver it to the holder again, restart its idle
    time, and keep it from the others for as long as the holder kept
    winning the race)."""
    from agentscope_proto.hub.factory import open_hub_store
    from agentscope_proto.hub.store import Group, HubConfig

    async def run() -> None:
        hub = await open_hub_store(HubConfig(url=store_url(request, store)))
        a = await hub.join(topic, Group("workers", "a", claim_idle_ms=100))
        b = None
        try:
            offset = await hub.publish(topic, b"job")
            assert [entry[0] for entry in await a.next()] == [offset.encode()]
            # Several times the claim time: the holder looks for messages to
            # take over all along, and finds none of its own.
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(a.next(), 0.6)
            b = await hub.join(topic, Group("workers", "b", claim_idle_ms=100))
            taken = await asyncio.wait_for(b.next(), 5)
            assert [entry[0] for entry in taken] == [offset.encode()]
        finally:
            for subscription in (a, b):
                if subscription is not None:
                    subscription.close()
            await hub.close()

    asyncio.run(run())


def test_a_member_holding_an_idle_message_takes_only_others_over(
    request: pytest.FixtureRequest, topic: str
) -> None:
    """The Redis group read of a member that holds an idle message of its
    own (the case XAUTOCLAIM gets wrong) claims the other members' idle
    messages and leaves its own as they were."""
    import redis

    from agentscope_proto.hub.redis_streams import _GROUP_READ

    client = redis.Redis.from_url(store_url(request, "redis"))
    try:
        client.xgroup_create(topic, "g", "$", mkstream=True)
        mine, theirs = client.xadd(topic, {"d": "1"}), client.xadd(topic, {"d": "2"})
        client.xreadgroup("g", "a", {topic: ">"}, count=1)
        client.xreadgroup("g", "b", {topic: ">"}, count=1)
        time.sleep(0.15)  # both idle past the claim time below
        room, claimed, *_ = client.register_script(_GROUP_READ)([topic], ["g", "a", 5, 100, ""])
        assert (room, [entry[0] for entry in claimed]) == (4, [theirs])
        pending = {p["message_id"]: p for p in client.xpending_range(topic, "g", "-", "+", 10)}
        held = {key: (p["consumer"], p["times_delivered"]) for key, p in pending.items()}
        assert held == {mine: (b"a", 1), theirs: (b"a", 2)}
    finally:
        client.close()


@pytest.mark.parametrize("store", STORES)
def test_groups_beyond_the_limit_per_topic_are_resource_exhausted(
    request: pytest.FixtureRequest, store: str, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentscope_proto.hub import memory, redis_streams
    from agentscope_proto.hub.factory import open_hub_store
    from agentscope_proto.hub.store import Group, HubConfig

    for module in (memory, redis_streams):  # 1,000 groups, as 2
        monkeypatch.setattr(module, "MAX_GROUPS", 2)

    async def run() -> None:
        hub = await open_hub_store(HubConfig(url=store_url(request, store)))
        try:
            for name in ("g1", "g2", "g1"):  # joining a group that exists makes none
                (await hub.join(topic, Group(name, "m"))).close()
            with pytest.raises(errors.LimitExceededError) as caught:
                await hub.join(topic, Group("g3", "m"))
            assert caught.value.path == "hub_max_groups"
        finally:
            await hub.close()

    asyncio.run(run())
