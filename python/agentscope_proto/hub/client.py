"""Clients of the HubService: `HubClient` (blocking) and `AsyncHubClient` (asyncio).

`subscribe()` returns once the subscription is live (the server sent its
headers), so whatever is published after it returns reaches the iterator.
The iterator receives the topic in batches (`SubscribeBatches`: one stream
message for all the events ready at once) and hands them out one by one. It
resumes by itself: when the stream breaks with UNAVAILABLE (a server
restarting or shutting down, a lost connection), it subscribes again after
the last offset it handed out, for up to `reconnect` seconds, so the caller
sees every message once, in order.

`AsyncHubClient.publish` sends over one `PublishStream` the client keeps
open: the publishes of every task wait together while a request is on its
way, then go as one request (one store round trip on the server), and each
caller gets its own message's offset or error. `publish_many` sends a list
that way. `HubClient.publish` is a unary `Publish`; its `publish_many` one
`PublishStream` for the list. Against a server without the stream RPCs
(UNIMPLEMENTED) both fall back to `Publish` and `Subscribe`.

`subscribe(topic, group=ConsumerGroup(name=..., member=...))` takes part
in a consumer group instead: each message goes to one member of the group;
a member acknowledges each message it is done with (`subscription.ack(
event.offset)`, or the clients' `ack`), and one it leaves unacknowledged
past the group's `claim_idle_ms` goes to another member. Such a
subscription resumes under its member name, and first receives again what
it held unacknowledged.

Errors are the package's exceptions, rebuilt from the status details
(`OffsetOutOfRangeError`, `HubError`, `LimitExceededError`, ...).
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import grpc
from google.rpc import status_pb2

from .._channel import (
    AsyncChannelClient,
    ChannelClient,
    Metadata,
    closed_client,
    message_bytes,
    task_cancelling,
)
from .._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from .._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc
from .._generated.agentscope.message.v1.message_pb2 import Msg
from .._wire import varint_bytes
from ..dialects import from_dict
from ..errors import HubError, LimitExceededError, RemoteError
from ..service.status import error_from_rpc, error_from_status
from .servicer import AFTER_HEADER, MAX_PUBLISHES, SERVICE_NAME

__all__ = ["AsyncHubClient", "AsyncSubscription", "ConsumerGroup", "HubClient", "Subscription"]

# The schema's message: a subscription's group, its member name and options.
ConsumerGroup = pb.ConsumerGroup

# Waits between reconnection attempts: doubling from the first to the last.
_BACKOFF = (0.05, 1.0)
# Requests of a PublishStream on their way at once. Up to that many
# publishers at a time each get a request of their own (the least wait);
# beyond, publishes wait for an answer and then go together in one request
# (the least work per message). Measured with bench/bench_hub.py: 4, 8 and
# 16 alike within the machine's noise, 1 and 2 slower with few publishers.
_WINDOW = 8
# Bytes of messages one PublishStream request carries at most (a larger
# message goes alone), whatever a server's message limit (1 MB or more).
_REQUEST_BYTES = 1024 * 1024
_PUBLISH_STREAM = f"/{SERVICE_NAME}/PublishStream"
_CODES = {code.value[0]: code for code in grpc.StatusCode}


def _msg(msg: Msg | Mapping[str, Any]) -> Msg:
    return msg if isinstance(msg, Msg) else from_dict(msg)


def _after(metadata: Any) -> str | None:
    for key, value in metadata or ():
        if key == AFTER_HEADER:
            return str(value)
    return None


def _unimplemented(error: grpc.RpcError) -> bool:
    """Whether the server has no such RPC (one that predates it)."""
    return error.code() is grpc.StatusCode.UNIMPLEMENTED


def _publish_bytes(topic: str, msg: Msg) -> bytes:
    """A `PublishRequest` as it sits in a `PublishStreamRequest.publishes`
    entry (tag and length included): written once, when published, so that a
    caller may change its `Msg` while the request waits."""
    data = msg.SerializeToString()
    name = topic.encode()
    inner = b"".join(
        (b"\x0a", varint_bytes(len(name)), name, b"\x12", varint_bytes(len(data)), data)
    )
    return b"".join((b"\x0a", varint_bytes(len(inner)), inner))


def _outcome(result: pb.PublishResult) -> str | Exception:
    """A message's offset, or the exception its `PublishError` stands for."""
    if result.offset:  # never empty when set
        return result.offset
    error = result.error
    status = status_pb2.Status.FromString(error.SerializeToString())
    code = _CODES.get(error.code, grpc.StatusCode.UNKNOWN)
    return error_from_status(code, error.message, status)


def _chunks(entries: list[bytes]) -> Iterator[list[bytes]]:
    """`entries` (from `_publish_bytes`) split into requests: at most
    MAX_PUBLISHES messages and about _REQUEST_BYTES each."""
    chunk: list[bytes] = []
    size = 0
    for entry in entries:
        if chunk and (len(chunk) == MAX_PUBLISHES or size + len(entry) > _REQUEST_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(entry)
        size += len(entry)
    if chunk:
        yield chunk


def _offsets(outcomes: Sequence[str | BaseException]) -> list[str]:
    """The offsets of `publish_many`, or its first failure raised, with a
    note (Python 3.11+ shows it) saying which message and how many were stored."""
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, BaseException):
            stored = sum(isinstance(o, str) for o in outcomes)
            if hasattr(outcome, "add_note"):
                outcome.add_note(
                    f"msgs[{index}] was not published; {stored} of the {len(outcomes)} were"
                )
            raise outcome
    return outcomes  # type: ignore[return-value]


def _resumable(error: grpc.RpcError) -> bool:
    """Whether a subscription that ended with `error` resumes from its last
    offset: the server went away, or it ended the subscriber for falling too
    far behind (it reads from its offset again, at its own pace)."""
    if error.code() is grpc.StatusCode.UNAVAILABLE:
        return True
    if error.code() is not grpc.StatusCode.RESOURCE_EXHAUSTED:
        return False
    exc = error_from_rpc(error)
    return isinstance(exc, LimitExceededError) and exc.path == "hub_subscriber_buffer_mb"


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
        if error is not None and not _resumable(error):
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


def _too_large(entry: bytes, limit: int) -> Exception | None:
    """The error gRPC would raise sending `entry` in a request, if it would."""
    if len(entry) + 16 <= limit:
        return None
    return RemoteError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"the message is {len(entry)} bytes; this client sends at most {limit} (max_message_mb)",
    )


def _late(timeout: float | None) -> RemoteError:
    return RemoteError(
        grpc.StatusCode.DEADLINE_EXCEEDED,
        f"no answer within {timeout:g} s; what was sent may be stored",
    )


def _unwrapped(entry: bytes) -> bytes:
    """The `PublishRequest` bytes of a `_publish_bytes` entry."""
    position = 1
    while entry[position] & 0x80:
        position += 1
    return entry[position + 1 :]


class _Gate:
    """Holds a blocking stream's requests back until the stream is admitted
    (gRPC's own thread takes them from `hold` as soon as the call starts)."""

    def __init__(self) -> None:
        self._opened = threading.Event()
        self._send = False

    def open(self, send: bool) -> None:
        if not self._opened.is_set():
            self._send = send
            self._opened.set()

    def hold(self, requests: list[bytes]) -> Iterator[bytes]:
        self._opened.wait()
        if self._send:
            yield from requests


class HubClient(ChannelClient):
    """A blocking client: `publish`, `publish_many`, and `subscribe` as an
    iterator that resumes."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb)
        self._stub = pb_grpc.HubServiceStub(self._channel)
        # Requests written by `_publish_bytes`, not by protobuf.
        self._publish_stream: Any = self._channel.stream_stream(
            _PUBLISH_STREAM, response_deserializer=pb.PublishStreamResponse.FromString
        )
        self._max_send = message_bytes(max_message_mb)
        # Its subscriptions: `close` ends them first (their iterations stop).
        self._subscriptions: weakref.WeakSet[Subscription] = weakref.WeakSet()

    def close(self) -> None:
        """Close its subscriptions (their iterations end) and the channel."""
        for subscription in list(self._subscriptions):
            subscription.close()
        super().close()

    def publish(
        self, topic: str, msg: Msg | Mapping[str, Any], *, timeout: float | None = None
    ) -> str:
        """Store `msg` (a `Msg`, or a dict in any dialect `from_dict` reads)
        in `topic`; its offset. Not retried: a retry after a lost answer
        would store the message twice."""
        self._check_open()
        request = pb.PublishRequest(topic=topic, msg=_msg(msg))
        try:
            reply = self._stub.Publish(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
        return reply.offset

    def publish_many(
        self,
        topic: str,
        msgs: Iterable[Msg | Mapping[str, Any]],
        *,
        timeout: float | None = None,
    ) -> list[str]:
        """Store `msgs` in `topic`, in order, over one `PublishStream`; their
        offsets. Not atomic: every message is sent, and if one is not stored
        its error is raised once all were answered (the others may be stored).
        Not retried, as `publish`."""
        self._check_open()
        return _offsets(list(self._publish_each(topic, msgs, timeout=timeout)))

    def _publish_each(
        self,
        topic: str,
        msgs: Iterable[Msg | Mapping[str, Any]],
        *,
        timeout: float | None = None,
    ) -> Iterator[str | Exception]:
        """`publish_many`, yielding each message's offset, or the exception
        that says why it was not stored, in order, as the answers come."""
        entries = [_publish_bytes(topic, _msg(msg)) for msg in msgs]
        refused = [_too_large(entry, self._max_send) for entry in entries]
        sendable = [entry for entry, error in zip(entries, refused, strict=True) if error is None]
        outcomes = self._stream_outcomes(sendable, timeout)
        for error in refused:
            yield error if error is not None else next(outcomes)

    def _stream_outcomes(
        self, entries: list[bytes], timeout: float | None
    ) -> Iterator[str | Exception]:
        if not entries:
            return
        requests = [b"".join(chunk) for chunk in _chunks(entries)]
        admitted = _Gate()
        call = self._publish_stream(
            admitted.hold(requests), timeout=timeout, metadata=self._metadata
        )
        answered = 0
        try:
            # As AsyncHubClient: nothing is sent before the stream is admitted.
            call.initial_metadata()
            admitted.open(not call.done())
            for response in call:
                for result in response.results:
                    answered += 1
                    yield _outcome(result)
        except grpc.RpcError as error:
            if answered == 0 and _unimplemented(error):  # an older server: one Publish each
                for entry in entries:
                    yield self._publish_unary(_unwrapped(entry), timeout)
                return
            failure: Exception = error_from_rpc(error)
        else:  # pragma: no cover - a server that broke the protocol
            failure = RemoteError(grpc.StatusCode.INTERNAL, "the server left messages unanswered")
        finally:
            admitted.open(False)
            call.cancel()
        for _ in range(answered, len(entries)):
            yield failure

    def _publish_unary(self, request: bytes, timeout: float | None) -> str | Exception:
        try:
            reply = self._stub.Publish(
                pb.PublishRequest.FromString(request), timeout=timeout, metadata=self._metadata
            )
        except grpc.RpcError as error:
            return error_from_rpc(error)
        return reply.offset

    def subscribe(
        self,
        topic: str,
        after: str | None = None,
        *,
        reconnect: float | None = 30.0,
        group: pb.ConsumerGroup | None = None,
    ) -> Subscription:
        """Follow `topic` after the offset `after` (None: from now on); returns
        once live. `reconnect`: seconds to keep resuming a broken stream (None:
        for ever, 0: never). `group`: receive as that member of a consumer
        group (no `after`: the group keeps its place)."""
        self._check_open()
        subscription = Subscription(self, topic, after or "", reconnect, group)
        self._subscriptions.add(subscription)
        return subscription

    def ack(self, topic: str, group: str, member: str, offsets: Sequence[str]) -> int:
        """Acknowledge the messages at `offsets` that `member` of `group`
        received: all of them, or none and `HubError` naming the first that
        is not its to acknowledge (see `HubService.Ack`). How many."""
        self._check_open()
        request = pb.AckRequest(topic=topic, group=group, member=member, offsets=offsets)
        try:
            return int(self._stub.Ack(request, metadata=self._metadata).acknowledged)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None


class _Following:
    """What `Subscription` and `AsyncSubscription` keep, and the steps they
    share that wait for nothing."""

    def __init__(
        self, topic: str, after: str, reconnect: float | None, group: pb.ConsumerGroup | None
    ) -> None:
        self.topic = topic
        self.group = group
        self.after = after
        self._retry = _Retry(reconnect)
        self._call: Any = None
        self._closed = False
        # Events received and not handed out yet; whether the server has
        # SubscribeBatches (an older one has only Subscribe).
        self._events: deque[pb.HubEvent] = deque()
        self._batches = True

    def _subscribe(self, stub: Any, metadata: Metadata) -> Any:
        """The call that subscribes after `self.after`."""
        if self._batches:
            request = pb.SubscribeBatchesRequest(
                topic=self.topic, after=self.after, group=self.group
            )
            return stub.SubscribeBatches(request, metadata=metadata)
        return stub.Subscribe(
            pb.SubscribeRequest(topic=self.topic, after=self.after, group=self.group),
            metadata=metadata,
        )

    def _hand_out(self) -> pb.HubEvent:
        event = self._events.popleft()
        if self.group is None:  # a member resumes by its name, not by offset
            self.after = event.offset
        return event

    def _ack_request(self, offsets: Sequence[str]) -> pb.AckRequest:
        if self.group is None:
            raise HubError("group", "only a consumer group member acknowledges messages")
        return pb.AckRequest(
            topic=self.topic, group=self.group.name, member=self.group.member, offsets=offsets
        )

    def _keep(self, received: Any) -> None:
        """What the stream sent: a batch of events, or (`Subscribe`) one."""
        self._retry.reset()
        if self._batches:
            self._events.extend(received.events)
        else:
            self._events.append(received)


def _gave_up(error: grpc.RpcError | None) -> Exception:
    """Why a subscription stopped resuming: its last error, or the stream's end."""
    if error is not None:
        return error_from_rpc(error)
    return RemoteError(grpc.StatusCode.UNAVAILABLE, "the stream ended")


class Subscription(_Following):
    """The events of a topic, in order; iterate it. `after` is the offset of
    the last one handed out (or where the subscription started), the one to
    resume from."""

    def __init__(
        self,
        client: HubClient,
        topic: str,
        after: str,
        reconnect: float | None,
        group: pb.ConsumerGroup | None = None,
    ) -> None:
        super().__init__(topic, after, reconnect, group)
        self._client = client
        try:
            self._open()
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None

    def _open(self) -> None:
        """Subscribe after `self.after`; raises the call's `grpc.RpcError` if
        it ends before it goes live."""
        call = self._subscribe(self._client._stub, self._client._metadata)
        after = _after(call.initial_metadata())
        if after is None:  # ended before it went live: its status says why
            try:
                next(call)  # raises that status
            except grpc.RpcError as error:
                if not (self._batches and _unimplemented(error)):
                    raise
                self._batches = False
                self._open()
                return
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
            if self._events:
                return self._hand_out()
            try:
                received = next(self._call)
            except StopIteration:  # a server that ended the stream: resume
                self._resume(None)
                continue
            except grpc.RpcError as error:
                if self._closed:
                    raise StopIteration from None
                self._resume(error)
                continue
            self._keep(received)

    def _resume(self, error: grpc.RpcError | None) -> None:
        while (wait := self._retry.next_wait(error)) is not None:
            time.sleep(wait)
            if self._closed:  # meanwhile: its iteration stops
                return
            try:
                self._open()
                return
            except grpc.RpcError as again:
                error = again
        raise _gave_up(error) from None

    def ack(self, *offsets: str) -> int:
        """A group member's `HubClient.ack` of messages it received here."""
        request = self._ack_request(offsets)
        try:
            reply = self._client._stub.Ack(request, metadata=self._client._metadata)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
        return int(reply.acknowledged)

    def close(self) -> None:
        """Cancel the stream; iteration stops."""
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Publisher:
    """`AsyncHubClient`'s PublishStream, opened on the first publish and
    again after it broke. Publishes queue up while `_WINDOW` requests are on
    their way; the sender then takes all that wait (up to a request's
    limits) into one request; each answer settles its request's callers, in
    order. When the stream breaks, every publish not answered yet fails with
    its error (those sent may be stored: not retried, as `Publish` is not)."""

    def __init__(self, client: AsyncHubClient) -> None:
        self._client = client
        self._queue: deque[tuple[bytes, asyncio.Future[str]]] = deque()
        self._sent: deque[list[tuple[bytes, asyncio.Future[str]]]] = deque()
        self._wake = asyncio.Event()
        self._call: Any = None
        self._sender: asyncio.Task[None] | None = None
        self._receiver: asyncio.Task[None] | None = None
        # The server has no PublishStream: every publish is a unary Publish
        # (those the stream held go by `_fallbacks`).
        self.unary = False
        self._fallbacks: set[asyncio.Task[None]] = set()
        self._closing = False

    def submit(self, entry: bytes) -> asyncio.Future[str]:
        """`entry` (from `_publish_bytes`) queued; its offset, once stored."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queue.append((entry, future))
        if self._call is None:
            self._call = self._client._publish_stream(metadata=self._client._metadata)
            self._sender = asyncio.ensure_future(self._send(self._call))
            self._receiver = asyncio.ensure_future(self._receive(self._call))
        self._wake.set()
        return future

    async def _send(self, call: Any) -> None:
        # Nothing is sent before the server admitted the stream (its headers):
        # refused, or unknown to an older server, it held no message.
        await call.initial_metadata()
        if call.done():
            return
        queue, sent = self._queue, self._sent
        while True:
            if not queue or len(sent) >= _WINDOW:
                self._wake.clear()
                await self._wake.wait()
                continue
            batch: list[tuple[bytes, asyncio.Future[str]]] = []
            size = 0
            while queue and len(batch) < MAX_PUBLISHES:
                entry, future = queue[0]
                if batch and size + len(entry) > _REQUEST_BYTES:
                    break
                queue.popleft()
                if not future.done():  # else its caller gave up before it was sent
                    batch.append((entry, future))
                    size += len(entry)
            if batch:
                sent.append(batch)
                try:
                    await call.write(b"".join(entry for entry, _ in batch))
                except Exception:  # the stream broke: the receiver says how
                    return

    async def _receive(self, call: Any) -> None:
        error: grpc.aio.AioRpcError | None = None
        answered = False
        try:
            async for response in call:
                answered = True
                batch = self._sent.popleft()
                if len(response.results) != len(batch):  # not a hub server's answer
                    self._sent.appendleft(batch)
                    call.cancel()
                    break
                for (_, future), result in zip(batch, response.results, strict=True):
                    if not future.done():
                        outcome = _outcome(result)
                        if isinstance(outcome, Exception):
                            future.set_exception(outcome)
                        else:
                            future.set_result(outcome)
                self._wake.set()
        except grpc.aio.AioRpcError as exc:
            error = exc
        finally:
            self._end(error, answered)

    def _end(self, error: grpc.aio.AioRpcError | None, answered: bool) -> None:
        """The stream is over: its publishes not answered fail (or, on a
        server without the RPC, go as unary calls)."""
        if self._sender is not None:
            self._sender.cancel()
        pending = [item for batch in self._sent for item in batch] + list(self._queue)
        self._sent.clear()
        self._queue.clear()
        self._call = self._sender = self._receiver = None
        if error is not None and not answered and _unimplemented(error):
            self.unary = True
            self.one_by_one(pending)
            return
        for _, future in pending:
            if not future.done():
                future.set_exception(self._failure(error))

    def one_by_one(self, pending: list[tuple[bytes, asyncio.Future[str]]]) -> None:
        """`pending` as unary `Publish`es, one after another, in order (sent
        at once, they could be stored in any order)."""
        task = asyncio.ensure_future(self._client._publish_unary_all(pending))
        self._fallbacks.add(task)
        task.add_done_callback(self._fallbacks.discard)

    def _failure(self, error: grpc.aio.AioRpcError | None) -> Exception:
        if error is not None:
            return error_from_rpc(error)
        if self._closing:
            return closed_client()
        return RemoteError(grpc.StatusCode.UNAVAILABLE, "the publish stream ended")

    async def close(self) -> None:
        """End the stream; publishes not answered fail."""
        self._closing = True
        receiver, call = self._receiver, self._call
        if call is not None:
            call.cancel()
        if receiver is not None:
            await asyncio.gather(receiver, return_exceptions=True)


class AsyncHubClient(AsyncChannelClient):
    """The asyncio twin of `HubClient`, whose publishes share one
    `PublishStream` (see the module's docstring)."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb)
        self._stub: pb_grpc.HubServiceAsyncStub
        self._publish_stream: Any = None
        self._max_send = message_bytes(max_message_mb)
        self._publisher = _Publisher(self)
        # Its subscriptions: `close` ends them first (a read of a call the
        # channel's close cancelled would raise CancelledError in its reader).
        self._subscriptions: weakref.WeakSet[AsyncSubscription] = weakref.WeakSet()

    def _made(self, channel: grpc.aio.Channel) -> None:
        self._stub = pb_grpc.HubServiceStub(channel)
        self._publish_stream = channel.stream_stream(
            _PUBLISH_STREAM, response_deserializer=pb.PublishStreamResponse.FromString
        )

    async def publish(
        self, topic: str, msg: Msg | Mapping[str, Any], *, timeout: float | None = None
    ) -> str:
        """`HubClient.publish`, awaited, over the client's PublishStream: one
        message's offset, or its error. A `timeout` that passes raises
        `RemoteError(DEADLINE_EXCEEDED)`; the message may still be stored."""
        self._check_open()
        future = self._submit(_publish_bytes(topic, _msg(msg)), timeout)
        if timeout is None:
            return await future
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise _late(timeout) from None

    async def publish_many(
        self,
        topic: str,
        msgs: Iterable[Msg | Mapping[str, Any]],
        *,
        timeout: float | None = None,
    ) -> list[str]:
        """`HubClient.publish_many`, awaited (over the client's PublishStream)."""
        self._check_open()
        entries = [_publish_bytes(topic, _msg(msg)) for msg in msgs]
        gathered = asyncio.gather(*self._submit_all(entries, timeout), return_exceptions=True)
        try:
            outcomes = await asyncio.wait_for(gathered, timeout)
        except asyncio.TimeoutError:
            raise _late(timeout) from None
        return _offsets(outcomes)

    def _submit_all(self, entries: list[bytes], timeout: float | None) -> list[asyncio.Future[str]]:
        """`_submit` of each entry, stored in their order: on the stream, or,
        on a server without it, one `Publish` after another."""
        if not self._publisher.unary:
            return [self._submit(entry, timeout) for entry in entries]
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[str]] = []
        pending = []
        for entry in entries:
            future: asyncio.Future[str] = loop.create_future()
            refused = _too_large(entry, self._max_send)
            if refused is not None:
                future.set_exception(refused)
            else:
                pending.append((entry, future))
            futures.append(future)
        self._publisher.one_by_one(pending)
        return futures

    def _submit(self, entry: bytes, timeout: float | None) -> asyncio.Future[str]:
        """`entry` on its way: on the PublishStream, or as a unary `Publish`
        (a server without the stream), or refused (too large to send)."""
        refused = _too_large(entry, self._max_send)
        if refused is not None:
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            future.set_exception(refused)
            return future
        if self._publisher.unary:
            return asyncio.ensure_future(self._publish_unary(entry, timeout))
        return self._publisher.submit(entry)

    async def _publish_unary(self, entry: bytes, timeout: float | None = None) -> str:
        request = pb.PublishRequest.FromString(_unwrapped(entry))
        try:
            reply = await self._stub.Publish(request, timeout=timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return reply.offset

    async def _publish_unary_all(self, pending: list[tuple[bytes, asyncio.Future[str]]]) -> None:
        """Publishes a stream could not send, one `Publish` each, in order."""
        for entry, future in pending:
            try:
                offset = await self._publish_unary(entry)
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
                continue
            if not future.done():
                future.set_result(offset)

    async def subscribe(
        self,
        topic: str,
        after: str | None = None,
        *,
        reconnect: float | None = 30.0,
        group: pb.ConsumerGroup | None = None,
    ) -> AsyncSubscription:
        """`HubClient.subscribe`: returns once live; iterate with `async for`."""
        self._check_open()
        subscription = AsyncSubscription(self, topic, after or "", reconnect, group)
        try:
            await subscription._open()
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        self._subscriptions.add(subscription)
        return subscription

    async def ack(self, topic: str, group: str, member: str, offsets: Sequence[str]) -> int:
        """`HubClient.ack`, awaited."""
        self._check_open()
        request = pb.AckRequest(topic=topic, group=group, member=member, offsets=offsets)
        return await self._ack(request)

    async def _ack(self, request: pb.AckRequest) -> int:
        try:
            reply = await self._stub.Ack(request, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return int(reply.acknowledged)

    async def close(self) -> None:
        """Close its subscriptions (their iterations end), end the
        PublishStream (publishes not answered fail) and close the channel."""
        for subscription in list(self._subscriptions):
            await subscription.close()
        await self._publisher.close()
        await super().close()


class AsyncSubscription(_Following):
    """`Subscription` for asyncio: `async for event in subscription`."""

    def __init__(
        self,
        client: AsyncHubClient,
        topic: str,
        after: str,
        reconnect: float | None,
        group: pb.ConsumerGroup | None = None,
    ) -> None:
        super().__init__(topic, after, reconnect, group)
        self._client = client

    async def _open(self) -> None:
        """`Subscription._open`, awaited (raises `grpc.aio.AioRpcError`)."""
        call = self._subscribe(self._client._stub, self._client._metadata)
        after = _after(await call.initial_metadata())
        if after is None:  # ended before it went live: its status says why
            try:
                await call.read()  # raises that status
            except grpc.aio.AioRpcError as error:
                if not (self._batches and _unimplemented(error)):
                    raise
                self._batches = False
                await self._open()
                return
            finally:
                call.cancel()
            raise RemoteError(grpc.StatusCode.UNKNOWN, "the server did not go live")
        self._call = call
        self.after = after

    def __aiter__(self) -> AsyncSubscription:
        return self

    async def __anext__(self) -> pb.HubEvent:
        while not self._closed:
            if self._events:
                return self._hand_out()
            try:
                received = await self._call.read()
            except grpc.aio.AioRpcError as error:
                if self._closed:
                    break
                await self._resume(error)
                continue
            except asyncio.CancelledError:
                # grpc's answer to a read of a call `close()` cancelled (from
                # another task); a cancellation of this task goes on.
                if self._closed and not task_cancelling():
                    break
                raise
            if received is grpc.aio.EOF:  # a server that ended the stream: resume
                await self._resume(None)
                continue
            self._keep(received)
        raise StopAsyncIteration

    async def _resume(self, error: grpc.aio.AioRpcError | None) -> None:
        while (wait := self._retry.next_wait(error)) is not None:
            await asyncio.sleep(wait)
            if self._closed:  # meanwhile: its iteration stops
                return
            try:
                await self._open()
                return
            except grpc.aio.AioRpcError as again:
                error = again
        raise _gave_up(error) from None

    async def ack(self, *offsets: str) -> int:
        """A group member's `AsyncHubClient.ack` of messages it received here."""
        return await self._client._ack(self._ack_request(offsets))

    async def close(self) -> None:
        """Cancel the stream; iteration stops."""
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
