"""The HubService servicer: requests checked, then handed to a `HubStore`.

Like grpc's health servicer, it is built alone and added to any server:

    store = await open_hub_store(config)          # or MemoryHubStore(config)
    hub = HubServicer(store, config)
    add_hub_service(hub, server)                  # before server.start()
    ...
    await hub.close()                             # on shutdown: streams end UNAVAILABLE
    await store.close()

Messages travel as the bytes they arrived as: Publish stores the request's
`msg` bytes without decoding them again, and Subscribe writes each
`HubEvent` from the stored bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import grpc

from .._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from .._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from .._wire import field_bytes, varint_bytes
from ..errors import HubError, HubUnavailableError, LimitExceededError
from ..service._rpc import Context, Wired, decoded, rpc_errors
from .store import HubConfig, HubStore, check_topic, parse_offset

if TYPE_CHECKING:
    from ..service.app import HostedService

__all__ = [
    "AFTER_HEADER",
    "SERVICE_NAME",
    "HubServicer",
    "add_hub_service",
    "event_bytes",
    "hub_service",
]

SERVICE_NAME: str = pb.DESCRIPTOR.services_by_name["HubService"].full_name
# The response header of a live subscription: the offset it starts after.
AFTER_HEADER = "hub-after"
_MSG_FIELD = pb.PublishRequest.DESCRIPTOR.fields_by_name["msg"].number
_OFFSET_TAG = b"\x0a"  # HubEvent.offset: field 1, length-delimited
_MSG_TAG = b"\x12"  # HubEvent.msg: field 2, length-delimited


def event_bytes(offset: bytes, msg: bytes) -> bytes:
    """`HubEvent(offset=..., msg=...)` as protobuf writes it, from the stored bytes."""
    return b"".join(
        (_OFFSET_TAG, varint_bytes(len(offset)), offset, _MSG_TAG, varint_bytes(len(msg)), msg)
    )


class HubServicer(pb_grpc.HubServiceServicer):
    """Publish and Subscribe on `store`, within `config`'s limits."""

    def __init__(self, store: HubStore, config: HubConfig | None = None) -> None:
        self.store = store
        config = config or HubConfig()
        self._max_msg = config.max_msg_kb * 1024
        self._max_subscribers = config.max_subscribers
        # The tasks serving Subscribe streams, ended by `close()`.
        self._streams: set[asyncio.Task[Any]] = set()
        self._closing = False

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
            check_topic(message.topic)
            if not message.HasField("msg"):
                raise HubError("msg", "required")
            if len(data) > self._max_msg:
                raise LimitExceededError(
                    "hub_max_msg_kb",
                    f"the message is {len(data)} bytes; this hub stores at most {self._max_msg}",
                )
            return pb.PublishResponse(offset=await self.store.publish(message.topic, data))
        raise AssertionError("unreachable: rpc_errors aborts")  # pragma: no cover

    async def Subscribe(  # type: ignore[override]
        self, request: pb.SubscribeRequest, context: Context
    ) -> AsyncIterator[bytes]:
        async with rpc_errors("Subscribe", context):
            request = decoded(request)
            check_topic(request.topic)
            if request.after:
                parse_offset(request.after)
            if self._closing:
                raise HubUnavailableError("the server is shutting down")
            if len(self._streams) >= self._max_subscribers:
                raise LimitExceededError(
                    "hub_max_subscribers",
                    f"this server serves at most {self._max_subscribers} subscriptions at once",
                )
            task = asyncio.current_task()
            assert task is not None  # a handler always runs in a task
            # Counted until the RPC's task ends, however it ends: a stream
            # cancelled while it waits to write leaves this generator
            # suspended, not finished.
            self._streams.add(task)
            task.add_done_callback(self._streams.discard)
            try:
                subscription = await self.store.subscribe(request.topic, request.after)
                await context.send_initial_metadata(((AFTER_HEADER, subscription.after),))
                while True:
                    for offset, msg in await subscription.next():
                        yield event_bytes(offset, msg)
            except asyncio.CancelledError:
                if not self._closing:
                    raise
                raise HubUnavailableError(
                    "the server is shutting down; resume from the last offset"
                ) from None

    async def close(self) -> None:
        """End every Subscribe stream with UNAVAILABLE (clients resume
        elsewhere) and refuse new ones; Publish calls go on until the server stops."""
        self._closing = True
        streams = list(self._streams)
        for task in streams:
            task.cancel()
        # Let each stream send its status before the server stops.
        for _ in range(3):
            await asyncio.sleep(0)


def add_hub_service(servicer: HubServicer, server: grpc.aio.Server) -> None:
    """Add the HubService's handlers to `server` (before it starts), with
    deserializers that never raise (a request that does not decode is
    INVALID_ARGUMENT with details) and events written from the stored bytes."""
    from ..service.app import add_service

    add_service(
        server, pb, "HubService", servicer, keep_wire={"Publish"}, passing_bytes={"Subscribe"}
    )


def hub_service(servicer: HubServicer) -> HostedService:
    """The HubService, to host beside a server's other services: when the
    server drains, its subscriptions end (UNAVAILABLE) so clients resume
    elsewhere."""
    from ..service.app import HostedService

    return HostedService(
        SERVICE_NAME, lambda server: add_hub_service(servicer, server), servicer.close
    )
