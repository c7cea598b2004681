"""The HubService servicer: requests checked, then handed to a `HubStore`.

Like grpc's health servicer, it is built alone and added to any server:

    store = await open_hub_store(config)          # or MemoryHubStore(config)
    hub = HubServicer(store, config)
    add_hub_service(hub, server)                  # before server.start()
    ...
    await hub.close()                             # on shutdown: streams end UNAVAILABLE
    await store.close()

Messages travel as bytes: Publish stores the request's `msg` bytes without
decoding them again, PublishStream each message's bytes as protobuf writes
them (in C, cheaper than finding them in the request from Python), and
Subscribe and SubscribeBatches write their responses from the stored bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import grpc

from .._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from .._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from .._wire import field_bytes, varint_bytes
from ..errors import AgentScopeProtoError, HubError, HubUnavailableError, LimitExceededError
from ..service._rpc import Context, Wired, decoded, rpc_errors
from ..service.hosting import HostedService, add_service
from ..service.status import status_for
from .store import (
    CLAIM_IDLE_MS,
    MAX_UNACKED,
    Entry,
    Group,
    HubConfig,
    HubStore,
    Published,
    check_ack,
    check_name,
    check_topic,
    parse_offset,
)

__all__ = [
    "AFTER_HEADER",
    "MAX_PUBLISHES",
    "SERVICE_NAME",
    "HubServicer",
    "add_hub_service",
    "event_bytes",
    "hub_service",
]

SERVICE_NAME: str = pb.DESCRIPTOR.services_by_name["HubService"].full_name
# The response header of a live subscription: the offset it starts after.
AFTER_HEADER = "hub-after"
# Messages one PublishStream request may carry (the schema says so).
MAX_PUBLISHES = 1000
_MSG_FIELD = pb.PublishRequest.DESCRIPTOR.fields_by_name["msg"].number
_OFFSET_TAG = b"\x0a"  # HubEvent.offset: field 1, length-delimited
_MSG_TAG = b"\x12"  # HubEvent.msg: field 2, length-delimited
_EVENTS_TAG = b"\x0a"  # SubscribeBatchesResponse.events: field 1, length-delimited
# Bytes of events one SubscribeBatches response holds at most (an event
# larger than that goes alone), well under a client's 64 MB message limit.
_BATCH_BYTES = 4 * 1024 * 1024


def event_bytes(offset: bytes, msg: bytes) -> bytes:
    """`HubEvent(offset=..., msg=...)` as protobuf writes it, from the stored bytes."""
    return b"".join(
        (_OFFSET_TAG, varint_bytes(len(offset)), offset, _MSG_TAG, varint_bytes(len(msg)), msg)
    )


def _batches(entries: list[Entry]) -> list[bytes]:
    """`SubscribeBatchesResponse`s as protobuf writes them, each at most
    `_BATCH_BYTES` of events (or one event)."""
    responses: list[bytes] = []
    parts: list[bytes] = []
    size = 0
    for offset, msg in entries:
        event = event_bytes(offset, msg)
        if parts and size + len(event) > _BATCH_BYTES:
            responses.append(b"".join(parts))
            parts, size = [], 0
        parts += (_EVENTS_TAG, varint_bytes(len(event)), event)
        size += len(event) + 6
    responses.append(b"".join(parts))
    return responses


class HubServicer(pb_grpc.HubServiceServicer):
    """Publish, PublishStream, Subscribe, SubscribeBatches and Ack on
    `store`, within `config`'s limits."""

    def __init__(self, store: HubStore, config: HubConfig | None = None) -> None:
        self.store = store
        config = config or HubConfig()
        self._max_msg = config.max_msg_kb * 1024
        self._max_subscribers = config.max_subscribers
        self._max_publishers = config.max_publishers
        # The tasks serving Subscribe(Batches) and PublishStream streams, each
        # counted until its task ends, however it ends (a stream cancelled
        # while it waits to write leaves its generator suspended, not finished).
        self._streams: set[asyncio.Task[Any]] = set()
        self._publishers: set[asyncio.Task[Any]] = set()
        # PublishStreams waiting for their next request: `close()` ends them
        # at once; the others end after answering the request they hold.
        self._reading: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._last_batch: tuple[list[Entry] | None, list[bytes]] = (None, [])

    def _checked(self, topic: str, msg: bytes | None) -> bytes:
        return checked_msg(topic, msg, self._max_msg)

    async def Publish(
        self, request: pb.PublishRequest | Wired, context: Context
    ) -> pb.PublishResponse:
        async with rpc_errors("Publish", context):
            message: pb.PublishRequest
            if isinstance(request, Wired):
                message = request.message  # type: ignore[assignment]
                data = field_bytes(request.data, _MSG_FIELD)
            else:  # Connect hands over the message alone
                message = decoded(request)
                data = message.msg.SerializeToString()
            msg = self._checked(message.topic, data if message.HasField("msg") else None)
            return pb.PublishResponse(offset=await self.store.publish(message.topic, msg))
        raise AssertionError("unreachable: rpc_errors aborts")  # pragma: no cover

    async def PublishStream(
        self, request_iterator: Any, context: Context
    ) -> AsyncIterator[pb.PublishStreamResponse]:
        # Requests are read with context.read(), so that close() can tell a
        # stream waiting for one from a stream storing one.
        async with rpc_errors("PublishStream", context):
            with self._open(self._publishers, self._max_publishers, "hub_max_publishers"):
                # Headers once admitted: a client that waits for them sends
                # nothing to a stream that is refused (or to a server that has
                # no such RPC), so no message of it is left in doubt.
                await context.send_initial_metadata(())
                task = asyncio.current_task()
                assert task is not None  # a handler always runs in a task
                index = 0
                while True:
                    self._reading.add(task)
                    try:
                        received = await context.read()
                    finally:
                        self._reading.discard(task)
                    if received is grpc.aio.EOF:
                        return
                    request: pb.PublishStreamRequest = decoded(received, f"requests[{index}]")
                    yield await self._publish_all(request, index)
                    if self._closing:
                        raise HubUnavailableError(
                            "the server is shutting down; publish the rest elsewhere"
                        )
                    index += 1

    async def _publish_all(
        self, request: pb.PublishStreamRequest, index: int
    ) -> pb.PublishStreamResponse:
        """Each message of `request` stored (those that pass) in one store call."""
        publishes = request.publishes
        if len(publishes) > MAX_PUBLISHES:
            raise HubError(
                f"requests[{index}].publishes",
                f"{len(publishes)} messages; a request carries at most {MAX_PUBLISHES}",
            )
        outcomes: list[Published | AgentScopeProtoError] = []
        places: list[int] = []
        accepted: list[tuple[str, bytes]] = []
        for place, publish in enumerate(publishes):
            msg = publish.msg.SerializeToString() if publish.HasField("msg") else None
            try:
                accepted.append((publish.topic, self._checked(publish.topic, msg)))
            except AgentScopeProtoError as exc:
                outcomes.append(exc)
                continue
            outcomes.append("")
            places.append(place)
        if accepted:
            stored: list[Published]
            try:
                stored = await self.store.publish_many(accepted)
            except HubUnavailableError as exc:
                stored = [exc] * len(accepted)
            for place, outcome in zip(places, stored, strict=True):
                outcomes[place] = outcome
        response = pb.PublishStreamResponse()
        add = response.results.add
        for result in outcomes:
            if isinstance(result, str):
                add(offset=result)
            else:  # the status a Publish of it would end with, field for field
                add().error.ParseFromString(status_for(result).SerializeToString())
        return response

    async def Subscribe(  # type: ignore[override]
        self, request: pb.SubscribeRequest, context: Context
    ) -> AsyncIterator[bytes]:
        async with rpc_errors("Subscribe", context):
            async for entries in self._follow(request, context):
                for offset, msg in entries:
                    yield event_bytes(offset, msg)

    async def SubscribeBatches(  # type: ignore[override]
        self, request: pb.SubscribeBatchesRequest, context: Context
    ) -> AsyncIterator[bytes]:
        async with rpc_errors("SubscribeBatches", context):
            async for entries in self._follow(request, context):
                for response in self._encoded(entries):
                    yield response

    def _encoded(self, entries: list[Entry]) -> list[bytes]:
        """`_batches(entries)`, written once for all the subscriptions a Redis
        topic's tail hands the same batch to (the last one is remembered)."""
        if entries is not self._last_batch[0]:
            self._last_batch = (entries, _batches(entries))
        return self._last_batch[1]

    async def Ack(self, request: pb.AckRequest, context: Context) -> pb.AckResponse:
        async with rpc_errors("Ack", context):
            request = decoded(request)
            acknowledged = await acknowledge(
                self.store, request.topic, request.group, request.member, request.offsets
            )
            return pb.AckResponse(acknowledged=acknowledged)
        raise AssertionError("unreachable: rpc_errors aborts")  # pragma: no cover

    async def _follow(self, request: Any, context: Context) -> AsyncIterator[list[Entry]]:
        """A checked subscription's entries, batch after batch, once it is
        live and its headers are sent."""
        request = decoded(request)
        group = request.group if request.HasField("group") else None
        member = checked_subscription(request.topic, request.after, group)
        with self._open(self._streams, self._max_subscribers, "hub_max_subscribers"):
            subscription = await self.store.follow(request.topic, request.after, member)
            try:
                await context.send_initial_metadata(((AFTER_HEADER, subscription.after),))
                while True:
                    yield await subscription.next()
            finally:
                subscription.close()

    @contextlib.contextmanager
    def _open(self, streams: set[asyncio.Task[Any]], limit: int, name: str) -> Iterator[None]:
        """A stream of this task counted in `streams` (at most `limit`, the
        config field `name`) until the task ends; cancelled by `close()`, it
        ends UNAVAILABLE."""
        if self._closing:
            raise HubUnavailableError("the server is shutting down")
        if len(streams) >= limit:
            what = "subscriptions" if streams is self._streams else "publish streams"
            raise LimitExceededError(name, f"this server serves at most {limit} {what} at once")
        task = asyncio.current_task()
        assert task is not None  # a handler always runs in a task
        streams.add(task)
        task.add_done_callback(streams.discard)
        try:
            yield
        except asyncio.CancelledError:
            if not self._closing:
                raise
            raise HubUnavailableError(
                "the server is shutting down; resume from the last offset"
            ) from None

    async def close(self) -> None:
        """End every Subscribe stream and every PublishStream waiting for a
        request with UNAVAILABLE (clients go on elsewhere), the other
        PublishStreams once they answered the request they hold, and refuse
        new streams; Publish calls go on until the server stops."""
        self._closing = True
        for task in [*self._streams, *self._reading]:
            task.cancel()
        # Let each stream send its status before the server stops.
        for _ in range(3):
            await asyncio.sleep(0)


# Whether a new group starts at its topic's oldest message, by `GroupStart`.
_STARTS = {
    pb.GROUP_START_UNSPECIFIED: False,
    pb.GROUP_START_LATEST: False,
    pb.GROUP_START_EARLIEST: True,
}


def checked_msg(topic: str, msg: bytes | None, max_msg: int) -> bytes:
    """The bytes of a message to publish, once its topic, presence and size
    (at most `max_msg` bytes) pass."""
    check_topic(topic)
    if msg is None:
        raise HubError("msg", "required")
    if len(msg) > max_msg:
        raise LimitExceededError(
            "hub_max_msg_kb", f"the message is {len(msg)} bytes; this hub stores at most {max_msg}"
        )
    return msg


def group_member(group: pb.ConsumerGroup) -> Group:
    """The member a `ConsumerGroup` asks to be, checked (`HubError` naming the
    field: `Group` checks the names and bounds)."""
    earliest = _STARTS.get(group.start)
    if earliest is None:
        raise HubError("group.start", f"unknown GroupStart value {group.start}")
    return Group(
        group.name,
        group.member,
        earliest,
        group.claim_idle_ms or CLAIM_IDLE_MS,
        group.max_unacked or MAX_UNACKED,
    )


def checked_subscription(topic: str, after: str, group: pb.ConsumerGroup | None) -> Group | None:
    """The member a Subscribe asks to be (None: a plain subscriber), once
    its topic, offset and group pass their checks (`HubError` naming the
    field)."""
    check_topic(topic)
    member = group_member(group) if group is not None else None
    if after:
        if member is not None:
            raise HubError("after", "must be empty with a group: the group keeps its place")
        parse_offset(after)
    return member


async def acknowledge(
    store: HubStore, topic: str, group: str, member: str, offsets: Sequence[str]
) -> int:
    """An `Ack`, checked (`HubError` naming the field) and stored."""
    check_topic(topic)
    check_name(group, "group")
    check_name(member, "member")
    return await store.ack(topic, group, member, check_ack(offsets))


def add_hub_service(servicer: HubServicer, server: grpc.aio.Server) -> None:
    """Add the HubService's handlers to `server` (before it starts), with
    deserializers that never raise (a request that does not decode is
    INVALID_ARGUMENT with details) and events written from the stored bytes."""
    add_service(
        server,
        pb,
        "HubService",
        servicer,
        keep_wire={"Publish"},
        passing_bytes={"Subscribe", "SubscribeBatches"},
    )


def hub_service(servicer: HubServicer) -> HostedService:
    """The HubService, to host beside a server's other services (over
    Connect too, with `--http-port`): when the server drains, its
    subscriptions end (UNAVAILABLE) so clients resume elsewhere."""
    return HostedService(
        SERVICE_NAME,
        lambda server: add_hub_service(servicer, server),
        servicer.close,
        connect=(pb, servicer),
    )
