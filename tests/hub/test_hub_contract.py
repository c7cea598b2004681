"""The HubService contract, the same on both stores (memory, Redis Streams on a
real redis-server): delivery, order, resume, live headers, bad input, limits,
auth, TLS, health and reflection."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from agentscope_proto.hub import SERVICE_NAME, AsyncHubClient, HubClient

from hub_fixtures import STORES, hub_server, msg, status_details, store_url
from server_harness import RunningServer

TOKEN = "hub-s3cret"


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


def _texts(events: list[pb.HubEvent]) -> list[str]:
    return [event.msg.text for event in events]


def _take(subscription: Any, count: int) -> list[pb.HubEvent]:
    return [next(subscription) for _ in range(count)]


# -- delivery -------------------------------------------------------------------


def test_subscribers_get_every_message_with_the_offset_publish_returned(
    client: HubClient, topic: str
) -> None:
    with client.subscribe(topic) as first, client.subscribe(topic) as second:
        offsets = [client.publish(topic, msg(f"m{i}")) for i in range(20)]
        for subscription in (first, second):
            events = _take(subscription, 20)
            assert [e.offset for e in events] == offsets
            assert _texts(events) == [f"m{i}" for i in range(20)]
    assert len(set(offsets)) == 20


def test_a_message_arrives_exactly_as_published(client: HubClient, topic: str) -> None:
    from agentscope_proto import new_image_block, new_msg, new_text_block, new_tool_use_block

    image = new_image_block(data=b"\x89PNG\r\n", media_type="image/png")
    tool_use = new_tool_use_block("c1", "f", {"x": [1, 2.5]})
    sent = new_msg("bob", [new_text_block("look"), image, tool_use], "assistant")
    with client.subscribe(topic) as events:
        client.publish(topic, sent)
        assert next(events).msg == sent


def test_dict_messages_are_read_like_from_dict(client: HubClient, topic: str) -> None:
    as_dict = {"id": "m1", "name": "bob", "role": "assistant", "content": "hi", "timestamp": "t"}
    with client.subscribe(topic) as events:
        client.publish(topic, as_dict)
        received = next(events).msg
    assert (received.id, received.name, received.text) == ("m1", "bob", "hi")


def test_order_is_kept_per_topic_under_concurrent_publishers(client: HubClient, topic: str) -> None:
    publishers, each = 4, 40
    with client.subscribe(topic) as events:

        def publish(name: str) -> None:
            for i in range(each):
                client.publish(topic, msg(str(i), name))

        threads = [threading.Thread(target=publish, args=(f"p{n}",)) for n in range(publishers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        received = _take(events, publishers * each)
    for n in range(publishers):
        mine = [int(e.msg.text) for e in received if e.msg.name == f"p{n}"]
        assert mine == list(range(each))


def test_topics_are_separate(client: HubClient, topic: str) -> None:
    with client.subscribe(topic + "/a") as a, client.subscribe(topic + "/b") as b:
        client.publish(topic + "/b", msg("for b"))
        client.publish(topic + "/a", msg("for a"))
        assert next(a).msg.text == "for a"
        assert next(b).msg.text == "for b"


# -- live headers and resume ------------------------------------------------------


def test_subscribe_returns_once_live_and_says_where_it_starts(
    client: HubClient, topic: str
) -> None:
    before = client.publish(topic, msg("before"))
    with client.subscribe(topic) as events:
        # Live: `after` is the last offset so far, and only what follows arrives.
        assert events.after == before
        after = client.publish(topic, msg("after"))
        event = next(events)
    assert (event.offset, event.msg.text) == (after, "after")


def test_headers_arrive_before_any_message(stub: pb_grpc.HubServiceStub, topic: str) -> None:
    call = stub.Subscribe(pb.SubscribeRequest(topic=topic))
    headers = dict(call.initial_metadata())
    assert headers["hub-after"]
    call.cancel()


def test_resume_after_an_offset_gets_exactly_what_followed(client: HubClient, topic: str) -> None:
    offsets = [client.publish(topic, msg(f"m{i}")) for i in range(10)]
    for start in (0, 4, 8):
        with client.subscribe(topic, after=offsets[start]) as events:
            assert events.after == offsets[start]
            got = _take(events, 9 - start)
        assert [e.offset for e in got] == offsets[start + 1 :]
    with client.subscribe(topic, after=offsets[-1]) as events:
        new = client.publish(topic, msg("new"))
        assert next(events).offset == new


def test_a_resumed_subscription_then_dedup_by_offset_is_exactly_once(
    client: HubClient, topic: str
) -> None:
    seen: dict[str, str] = {}
    with client.subscribe(topic) as events:
        offsets = [client.publish(topic, msg(f"m{i}")) for i in range(30)]
        for event in _take(events, 12):
            seen.setdefault(event.offset, event.msg.text)
        last = events.after
    # Resuming from an older offset than the last (as after a crash that lost
    # some progress) repeats messages; dedup by offset leaves each once.
    with client.subscribe(topic, after=offsets[5]) as events:
        assert last == offsets[11]
        for event in _take(events, 24):
            seen.setdefault(event.offset, event.msg.text)
    assert list(seen) == offsets
    assert list(seen.values()) == [f"m{i}" for i in range(30)]


def test_async_client_publishes_subscribes_and_resumes(server: RunningServer, topic: str) -> None:
    async def run() -> tuple[list[str], list[str], list[str]]:
        async with AsyncHubClient(server.target) as hub:
            subscription = await hub.subscribe(topic)
            offsets = [await hub.publish(topic, msg(f"m{i}")) for i in range(5)]
            got = []
            async with subscription:
                async for event in subscription:
                    got.append(event.offset)
                    if len(got) == 3:
                        break
            resumed = await hub.subscribe(topic, after=subscription.after)
            rest = [(await resumed.__anext__()).offset for _ in range(2)]
            await resumed.close()
            return offsets, got, rest

    offsets, got, rest = asyncio.run(run())
    assert got + rest == offsets


# -- bad input --------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["", " room", "room name", "{room}", "ro\nom", "é", "-room", "x" * 257]
)
def test_a_bad_topic_is_invalid_argument_naming_the_field(
    stub: pb_grpc.HubServiceStub, bad: str
) -> None:
    calls = [
        lambda: stub.Publish(pb.PublishRequest(topic=bad, msg=msg("x")), timeout=10),
        lambda: next(stub.Subscribe(pb.SubscribeRequest(topic=bad), timeout=10)),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as caught:
            call()
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        violation = status_details(caught.value)["BadRequest"].field_violations[0]
        assert violation.field == "topic"


def test_the_longest_and_oddest_good_topics_work(client: HubClient) -> None:
    for name in ("x" * 256, "a.b_c-d:e/f", "0"):
        with client.subscribe(name) as events:
            offset = client.publish(name, msg("ok"))
            assert next(events).offset == offset


def test_a_publish_without_a_message_is_invalid_argument(
    stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.Publish(pb.PublishRequest(topic=topic), timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert status_details(caught.value)["BadRequest"].field_violations[0].field == "msg"


def test_undecodable_requests_are_invalid_argument(server: RunningServer) -> None:
    cut_short = b"\x0a\x05ab"  # a string field whose bytes end early
    with grpc.insecure_channel(server.target) as channel:
        publish = channel.unary_unary(f"/{SERVICE_NAME}/Publish")
        subscribe = channel.unary_stream(f"/{SERVICE_NAME}/Subscribe")
        for call in (lambda: publish(cut_short, timeout=10), lambda: next(subscribe(cut_short))):
            with pytest.raises(grpc.RpcError) as caught:
                call()
            assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    "bad",
    [
        "abc",
        "1",
        "1-",
        "-1",
        "1-2-3",
        "99999999999999999999999-0",
        "\u0661-\u0660",  # Arabic-Indic digits: digits to `\\d`, not to Redis
        "\uff11-0",  # a fullwidth 1
        "1-0.",
        "1-0.ABCDEF12",
        "1-0.abc",
    ],
)
def test_a_malformed_offset_is_invalid_argument(client: HubClient, topic: str, bad: str) -> None:
    with pytest.raises(errors.HubError) as caught:
        client.subscribe(topic, after=bad)
    assert not isinstance(caught.value, errors.OffsetOutOfRangeError)
    assert caught.value.path == "after"


def test_an_offset_the_topic_never_gave_is_out_of_range(
    client: HubClient, stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    last = client.publish(topic, msg("m"))
    position, _, epoch = last.partition(".")
    ms, seq = (int(part) for part in position.split("-"))
    future = f"{ms + 10**9}-{seq}.{epoch}"
    with pytest.raises(errors.OffsetOutOfRangeError) as caught:
        client.subscribe(topic, after=future)
    assert (caught.value.path, caught.value.why) == ("after", "unknown")
    with pytest.raises(grpc.RpcError) as raw:
        next(stub.Subscribe(pb.SubscribeRequest(topic=topic, after=future), timeout=10))
    assert raw.value.code() is grpc.StatusCode.OUT_OF_RANGE
    details = status_details(raw.value)
    assert details["ErrorInfo"].metadata["why"] == "unknown"
    assert details["BadRequest"].field_violations[0].field == "after"


def test_an_offset_of_another_topic_is_out_of_range(
    client: HubClient, stub: pb_grpc.HubServiceStub, topic: str
) -> None:
    """Even one older than the topic's last offset, which its position alone
    would let pass: its epoch is the other topic's."""
    other = client.publish(f"{topic}/other", msg("elsewhere"))
    client.publish(topic, msg("here"))
    with pytest.raises(errors.OffsetOutOfRangeError) as caught:
        client.subscribe(topic, after=other, reconnect=0)
    assert caught.value.path == "after"
    assert caught.value.why in {"unknown", "lost"}  # memory knows; Redis cannot tell
    for call, request in (
        (stub.Subscribe, pb.SubscribeRequest(topic=topic, after=other)),
        (stub.SubscribeBatches, pb.SubscribeBatchesRequest(topic=topic, after=other)),
    ):
        with pytest.raises(grpc.RpcError) as raw:
            next(call(request, timeout=10))
        assert raw.value.code() is grpc.StatusCode.OUT_OF_RANGE


@pytest.fixture(scope="module", params=STORES)
def small_server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    """Retention 5 (Redis trims whole nodes of 100 entries, so past them),
    messages of 1 KiB, two subscribers."""
    running = hub_server(
        store_url(request, request.param), retention=5, max_msg_kb=1, max_subscribers=2
    )
    yield running
    running.stop()


def test_an_offset_the_retention_trimmed_is_out_of_range(
    small_server: RunningServer, topic: str
) -> None:
    with HubClient(small_server.target) as hub:
        offsets = [hub.publish(topic, msg(str(i))) for i in range(250)]
        with pytest.raises(errors.OffsetOutOfRangeError) as caught:
            hub.subscribe(topic, after=offsets[0])
        assert caught.value.why == "expired"
        # From the newest messages on, the topic resumes.
        with hub.subscribe(topic, after=offsets[-2]) as events:
            assert next(events).offset == offsets[-1]


# -- limits -------------------------------------------------------------------------


def test_an_oversize_message_is_resource_exhausted(small_server: RunningServer, topic: str) -> None:
    big = msg("x" * 2000)
    with grpc.insecure_channel(small_server.target) as channel:
        stub = pb_grpc.HubServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Publish(pb.PublishRequest(topic=topic, msg=big), timeout=10)
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert status_details(caught.value)["QuotaFailure"].violations[0].subject == "hub_max_msg_kb"
    with HubClient(small_server.target) as hub:
        hub.publish(topic, msg("x" * 900))  # under the limit


def test_subscribers_beyond_the_limit_are_resource_exhausted(
    small_server: RunningServer, topic: str
) -> None:
    with HubClient(small_server.target) as hub:
        first, second = hub.subscribe(topic), hub.subscribe(topic)
        with pytest.raises(errors.LimitExceededError) as caught:
            hub.subscribe(topic)
        assert caught.value.path == "hub_max_subscribers"
        first.close()
        # The server frees the slot once it sees the cancellation.
        for _ in range(500):
            try:
                third = hub.subscribe(topic)
                break
            except errors.LimitExceededError:
                threading.Event().wait(0.01)
        else:
            pytest.fail("the closed subscription's slot was never freed")
        offset = hub.publish(topic, msg("still"))
        assert next(second).offset == next(third).offset == offset
        second.close()
        third.close()


# -- standard services, auth, TLS -----------------------------------------------------


def test_health_and_reflection_list_the_hub(server: RunningServer) -> None:
    with grpc.insecure_channel(server.target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        reply = health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE_NAME),
        ]
        listed, files = list(reflection.ServerReflectionInfo(iter(requests), timeout=5))
    assert SERVICE_NAME in {s.name for s in listed.list_services_response.service}
    from google.protobuf import descriptor_pb2

    names = {
        descriptor_pb2.FileDescriptorProto.FromString(raw).name
        for raw in files.file_descriptor_response.file_descriptor_proto
    }
    assert {"agentscope/agent/v1/hub_service.proto", "agentscope/message/v1/message.proto"} <= names


@pytest.fixture(scope="module", params=STORES)
def auth_server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    running = hub_server(store_url(request, request.param), auth_token=TOKEN)
    yield running
    running.stop()


@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x"])
def test_auth_refuses_publish_and_subscribe_without_the_token(
    auth_server: RunningServer, topic: str, token: str | None
) -> None:
    with HubClient(auth_server.target, token=token) as hub:
        for call in (lambda: hub.publish(topic, msg("x")), lambda: hub.subscribe(topic)):
            with pytest.raises(errors.RemoteError) as caught:
                call()
            assert caught.value.code is grpc.StatusCode.UNAUTHENTICATED
            assert TOKEN not in str(caught.value)


@pytest.mark.parametrize("token", [None, "wrong"])
def test_auth_refuses_every_streaming_rpc_at_once(
    auth_server: RunningServer, topic: str, token: str | None
) -> None:
    """PublishStream (client streaming) too: its refusal must not wait for a
    request the client sends only once it has the response headers."""
    metadata = () if token is None else (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(auth_server.target) as channel:
        stub = pb_grpc.HubServiceStub(channel)
        calls = {
            "PublishStream": lambda: stub.PublishStream(iter(()), metadata=metadata, timeout=10),
            "Subscribe": lambda: stub.Subscribe(
                pb.SubscribeRequest(topic=topic), metadata=metadata, timeout=10
            ),
            "SubscribeBatches": lambda: stub.SubscribeBatches(
                pb.SubscribeBatchesRequest(topic=topic), metadata=metadata, timeout=10
            ),
        }
        for name, call in calls.items():
            stream = call()
            stream.initial_metadata()  # waits for the headers, as the clients do
            with pytest.raises(grpc.RpcError) as caught:
                next(stream)
            assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED, name


@pytest.mark.parametrize("token", [None, "wrong"])
def test_the_async_client_surfaces_an_auth_failure(
    auth_server: RunningServer, topic: str, token: str | None
) -> None:
    async def main() -> None:
        async with AsyncHubClient(auth_server.target, token=token) as hub:
            for call in (
                lambda: hub.publish(topic, msg("x")),
                lambda: hub.publish_many(topic, [msg("x"), msg("y")]),
            ):
                with pytest.raises(errors.RemoteError) as caught:
                    await asyncio.wait_for(call(), 30)  # a hang fails here
                assert caught.value.code is grpc.StatusCode.UNAUTHENTICATED

    asyncio.run(main())


def test_auth_accepts_the_token(auth_server: RunningServer, topic: str) -> None:
    with HubClient(auth_server.target, token=TOKEN) as hub, hub.subscribe(topic) as events:
        offset = hub.publish(topic, msg("x"))
        assert next(events).offset == offset


@pytest.mark.parametrize("store", STORES)
def test_tls_and_mutual_tls(
    request: pytest.FixtureRequest, store: str, tmp_path: Any, topic: str
) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    key_path, cert_path, ca_path = tmp_path / "key.pem", tmp_path / "cert.pem", tmp_path / "ca.pem"
    cert.private_key_pem.write_to_path(str(key_path))
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    ca.cert_pem.write_to_path(str(ca_path))
    running = hub_server(
        store_url(request, store), tls_cert=cert_path, tls_key=key_path, tls_client_ca=ca_path
    )
    try:
        client_cert = ca.issue_cert("client@example.com")
        credentials = grpc.ssl_channel_credentials(
            root_certificates=ca.cert_pem.bytes(),
            private_key=client_cert.private_key_pem.bytes(),
            certificate_chain=client_cert.cert_chain_pems[0].bytes(),
        )
        target = f"localhost:{running.port}"
        with HubClient(target, credentials=credentials) as hub, hub.subscribe(topic) as events:
            offset = hub.publish(topic, msg("secret"))
            assert next(events).offset == offset
        anonymous = grpc.ssl_channel_credentials(root_certificates=ca.cert_pem.bytes())
        with HubClient(target, credentials=anonymous) as hub:
            with pytest.raises(errors.RemoteError) as caught:
                hub.publish(topic, msg("x"), timeout=5)
            assert caught.value.code is grpc.StatusCode.UNAVAILABLE
    finally:
        running.stop()
