"""Clients of the HubService: `HubClient` (blocking) and `AsyncHubClient` (asyncio).

`subscribe()` returns once the subscription is live (the server sent its
headers), so whatever is published after it returns reaches the iterator.
The iterator resumes by itself: when the stream breaks with UNAVAILABLE (a
server restarting or shutting down, a lost connection), it subscribes again
after the last offset it handed out, for up to `reconnect` seconds, so the
caller sees every message once, in order. Errors are the package's
exceptions, rebuilt from the status details (`OffsetOutOfRangeError`,
`HubError`, `LimitExceededError`, ...).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import grpc

from .._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from .._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..dialects import from_dict
from ..errors import RemoteError
from ..service.status import error_from_rpc
from .servicer import AFTER_HEADER

__all__ = ["AsyncHubClient", "AsyncSubscription", "HubClient", "Subscription"]

# Waits between reconnection attempts: doubling from the first to the last.
_BACKOFF = (0.05, 1.0)


def _msg(msg: Msg | Mapping[str, Any]) -> Msg:
    return msg if isinstance(msg, Msg) else from_dict(msg)


def _options(max_message_mb: int) -> list[tuple[str, int]]:
    limit = max_message_mb * 1024 * 1024
    return [("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)]


def _metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def _after(metadata: Any) -> str | None:
    for key, value in metadata or ():
        if key == AFTER_HEADER:
            return str(value)
    return None


class _Retry:
    """When to subscribe again after the stream broke: until `budget` seconds
    have passed since the first failure in a row."""

    def __init__(self, budget: float | None) -> None:
        self._budget = budget
        self._since: float | None = None
        self._wait = _BACKOFF[0]

    def next_wait(self, error: grpc.RpcError | None) -> float | None:
        """Seconds to wait before trying again after `error` (None: the
        stream ended without one), or None to give up."""
        if error is not None and error.code() is not grpc.StatusCode.UNAVAILABLE:
            return None
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if self._budget is not None and now - self._since >= self._budget:
            return None
        wait, self._wait = self._wait, min(self._wait * 2, _BACKOFF[1])
        return wait

    def reset(self) -> None:
        self._since = None
        self._wait = _BACKOFF[0]


class HubClient:
    """A blocking client: `publish`, and `subscribe` as an iterator that resumes."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        options = _options(max_message_mb)
        self._channel = (
            grpc.secure_channel(target, credentials, options)
            if credentials
            else grpc.insecure_channel(target, options)
        )
        self._stub = pb_grpc.HubServiceStub(self._channel)
        self._metadata = _metadata(token)

    def publish(
        self, topic: str, msg: Msg | Mapping[str, Any], *, timeout: float | None = None
    ) -> str:
        """Store `msg` (a `Msg`, or a dict in any dialect `from_dict` reads)
        in `topic`; its offset. Not retried: a retry after a lost answer
        would store the message twice."""
        request = pb.PublishRequest(topic=topic, msg=_msg(msg))
        try:
            reply = self._stub.Publish(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
        return reply.offset

    def subscribe(
        self, topic: str, after: str | None = None, *, reconnect: float | None = 30.0
    ) -> Subscription:
        """Follow `topic` after the offset `after` (None: from now on); returns
        once live. `reconnect`: seconds to keep resuming a broken stream (None:
        for ever, 0: never)."""
        return Subscription(self, topic, after or "", reconnect)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Subscription:
    """The events of a topic, in order; iterate it. `after` is the offset of
    the last one handed out (or where the subscription started), the one to
    resume from."""

    def __init__(self, client: HubClient, topic: str, after: str, reconnect: float | None) -> None:
        self._client = client
        self.topic = topic
        self.after = after
        self._retry = _Retry(reconnect)
        self._call: Any = None
        self._closed = False
        try:
            self._open()
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None

    def _open(self) -> None:
        """Subscribe after `self.after`; raises the call's `grpc.RpcError` if
        it ends before it goes live."""
        request = pb.SubscribeRequest(topic=self.topic, after=self.after)
        call = self._client._stub.Subscribe(request, metadata=self._client._metadata)
        after = _after(call.initial_metadata())
        if after is None:  # ended before it went live: its status says why
            try:
                next(call)  # raises that status
            finally:
                call.cancel()
            raise RemoteError(grpc.StatusCode.UNKNOWN, "the server did not go live")
        self._call = call
        self.after = after

    def __iter__(self) -> Subscription:
        return self

    def __next__(self) -> pb.HubEvent:
        while True:
            if self._closed:
                raise StopIteration
            try:
                event: pb.HubEvent = next(self._call)
            except StopIteration:  # a server that ended the stream: resume
                self._resume(None)
                continue
            except grpc.RpcError as error:
                if self._closed:
                    raise StopIteration from None
                self._resume(error)
                continue
            self._retry.reset()
            self.after = event.offset
            return event

    def _resume(self, error: grpc.RpcError | None) -> None:
        while (wait := self._retry.next_wait(error)) is not None:
            time.sleep(wait)
            try:
                self._open()
                return
            except grpc.RpcError as again:
                error = again
        raise (
            error_from_rpc(error)
            if error is not None
            else RemoteError(grpc.StatusCode.UNAVAILABLE, "the stream ended")
        ) from None

    def close(self) -> None:
        """Cancel the stream; iteration stops."""
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncHubClient:
    """The asyncio twin of `HubClient`."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        options = _options(max_message_mb)
        self._channel = (
            grpc.aio.secure_channel(target, credentials, options)
            if credentials
            else grpc.aio.insecure_channel(target, options)
        )
        self._stub = pb_grpc.HubServiceStub(self._channel)
        self._metadata = _metadata(token)

    async def publish(
        self, topic: str, msg: Msg | Mapping[str, Any], *, timeout: float | None = None
    ) -> str:
        """`HubClient.publish`, awaited."""
        request = pb.PublishRequest(topic=topic, msg=_msg(msg))
        try:
            reply = await self._stub.Publish(request, timeout=timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return reply.offset

    async def subscribe(
        self, topic: str, after: str | None = None, *, reconnect: float | None = 30.0
    ) -> AsyncSubscription:
        """`HubClient.subscribe`: returns once live; iterate with `async for`."""
        subscription = AsyncSubscription(self, topic, after or "", reconnect)
        try:
            await subscription._open()
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return subscription

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()

    async def __aenter__(self) -> AsyncHubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncSubscription:
    """`Subscription` for asyncio: `async for event in subscription`."""

    def __init__(
        self, client: AsyncHubClient, topic: str, after: str, reconnect: float | None
    ) -> None:
        self._client = client
        self.topic = topic
        self.after = after
        self._retry = _Retry(reconnect)
        self._call: Any = None
        self._closed = False

    async def _open(self) -> None:
        """`Subscription._open`, awaited (raises `grpc.aio.AioRpcError`)."""
        request = pb.SubscribeRequest(topic=self.topic, after=self.after)
        call = self._client._stub.Subscribe(request, metadata=self._client._metadata)
        after = _after(await call.initial_metadata())
        if after is None:  # ended before it went live: its status says why
            try:
                await call.read()  # raises that status
            finally:
                call.cancel()
            raise RemoteError(grpc.StatusCode.UNKNOWN, "the server did not go live")
        self._call = call
        self.after = after

    def __aiter__(self) -> AsyncSubscription:
        return self

    async def __anext__(self) -> pb.HubEvent:
        while not self._closed:
            try:
                event = await self._call.read()
            except grpc.aio.AioRpcError as error:
                if self._closed:
                    break
                await self._resume(error)
                continue
            if event is grpc.aio.EOF:  # a server that ended the stream: resume
                await self._resume(None)
                continue
            self._retry.reset()
            self.after = event.offset
            return event  # type: ignore[no-any-return]
        raise StopAsyncIteration

    async def _resume(self, error: grpc.aio.AioRpcError | None) -> None:
        while (wait := self._retry.next_wait(error)) is not None:
            await asyncio.sleep(wait)
            try:
                await self._open()
                return
            except grpc.aio.AioRpcError as again:
                error = again
        raise (
            error_from_rpc(error)
            if error is not None
            else RemoteError(grpc.StatusCode.UNAVAILABLE, "the stream ended")
        ) from None

    async def close(self) -> None:
        """Cancel the stream; iteration stops."""
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
