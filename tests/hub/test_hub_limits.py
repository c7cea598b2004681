"""What a hub client can make a real server hold, and the bounds on it
(SECURITY.md, "Surfaces and limits") not covered by the contract tests: the
memory store's byte bound, the bytes of one SubscribeBatches response, and
the size of a request."""

from __future__ import annotations

import grpc
import pytest

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from agentscope_proto.hub import SERVICE_NAME, HubClient

from hub_fixtures import hub_server, msg

KIB = 1024


def test_the_memory_hub_drops_its_oldest_messages_past_its_bytes(topic: str) -> None:
    server = hub_server("memory", memory_mb=1)
    try:
        with HubClient(server.target) as hub:
            marker = hub.publish(topic, msg("before"))
            # Three messages of 400 KiB: the store holds two (1 MiB).
            offsets = [hub.publish(topic, msg(str(i) * (400 * KIB))) for i in range(3)]
            with pytest.raises(errors.OffsetOutOfRangeError) as caught:
                hub.subscribe(topic, after=marker)
            assert caught.value.why == "expired"
            with hub.subscribe(topic, after=offsets[0]) as events:
                assert [next(events).offset for _ in range(2)] == offsets[1:]
    finally:
        server.stop()


def test_a_batch_response_holds_at_most_4_mib_of_events(topic: str) -> None:
    server = hub_server("memory", max_msg_kb=4 * KIB)
    try:
        with HubClient(server.target) as hub:
            marker = hub.publish(topic, msg("before"))
            big = [hub.publish(topic, msg(text * (2500 * KIB))) for text in "ab"]
            small = [hub.publish(topic, msg(text)) for text in "cd"]
        with grpc.insecure_channel(server.target) as channel:
            stub = pb_grpc.HubServiceStub(channel)
            request = pb.SubscribeBatchesRequest(topic=topic, after=marker)
            responses = stub.SubscribeBatches(request, timeout=30)
            batches = [[event.offset for event in next(responses).events] for _ in range(2)]
            responses.cancel()
        # Two events of 2.5 MB would make 5 MB: the second goes alone, with
        # the small ones after it.
        assert batches == [big[:1], [big[1], *small]]
    finally:
        server.stop()


def test_a_hub_request_over_the_size_limit_is_resource_exhausted(topic: str) -> None:
    server = hub_server("memory", max_message_mb=1)
    too_big = b"x" * (2 * 1024 * KIB)  # not a request either: only the size is refused first
    try:
        with grpc.insecure_channel(server.target) as channel:
            publish = channel.unary_unary(f"/{SERVICE_NAME}/Publish")
            with pytest.raises(grpc.RpcError) as info:
                publish(too_big, timeout=10)
            assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            stream = channel.stream_stream(f"/{SERVICE_NAME}/PublishStream")
            with pytest.raises(grpc.RpcError) as info:
                list(stream(iter([too_big]), timeout=10))
            assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        server.stop()
