"""The hub's topics straight from Redis, for Python code that has the hub's
Redis credentials: no server and no gRPC hop (the `redis` extra).

`DirectHub` reads and writes the very streams a hub server on the same
Redis serves, through the server's own store (`RedisHubStore`) and its
request checks: the same stream per topic, entry format, offsets and
epochs, retention and consumer groups. A server's subscribers receive what
a `DirectHub` publishes, and a `DirectHub` subscriber what the server's
clients publish; offsets and group members pass from one to the other.
Give it the retention the servers use (`--hub-retention`,
`--hub-retention-seconds`): each publish trims its topic by the
publisher's settings.

    hub = await DirectHub.connect("redis://127.0.0.1:6379/0")
    offset = await hub.publish("team/tasks", msg)
    async with await hub.subscribe("team/tasks", after=offset) as events:
        async for event in events:   # HubEvent, as AsyncHubClient gives
            ...
    await hub.close()

Publishes that wait together go together: while one store call is on its
way, the publishes made meanwhile queue, then go in one call (one script
call per topic), and each caller gets its own message's offset or error.
Closing a subscription ends its iteration (also one waiting for messages
in another task); closing the hub closes its subscriptions first, and
refuses what is asked of it after, as a closed `AsyncHubClient` does
(`RemoteError(CANCELLED)`).
Callers without Redis credentials, and other languages, use the HubService
(`AsyncHubClient`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._channel import closed_client
from .._generated.agentscope.agent.v1 import hub_service_pb2 as pb
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..dialects import from_dict
from ..errors import HubError, HubUnavailableError
from .redis_streams import RedisHubStore
from .servicer import acknowledge, checked_msg, checked_subscription, event_bytes
from .store import HubConfig, Published, Subscription

__all__ = ["DirectHub", "DirectSubscription"]

# Store calls of publishes on their way at once: with one, every publish
# made while it is out goes in the next call (the least work per message).
_WINDOW = 1
# Messages one store call carries at most (as a PublishStream request).
_CALL_MESSAGES = 1000

_Queued = tuple[str, bytes, "asyncio.Future[str]"]


def _bytes(msg: Msg | Mapping[str, Any]) -> bytes:
    return (msg if isinstance(msg, Msg) else from_dict(msg)).SerializeToString()


def _settle(future: asyncio.Future[str], outcome: Published) -> None:
    if future.done():  # its caller gave up waiting
        return
    if isinstance(outcome, str):
        future.set_result(outcome)
    else:
        future.set_exception(outcome)


class DirectHub:
    """Publish to, subscribe to and take part in consumer groups of the
    hub's topics on Redis, in this process (see the module doc)."""

    def __init__(self, store: RedisHubStore, config: HubConfig) -> None:
        self._store = store
        self._max_msg = config.max_msg_kb * 1024
        self._queue: deque[_Queued] = deque()
        self._out = 0
        self._senders: set[asyncio.Task[None]] = set()
        # Its subscriptions not closed yet (`close` closes them first).
        self._subscriptions: weakref.WeakSet[DirectSubscription] = weakref.WeakSet()
        self._closed = False

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        retention: int = HubConfig.retention,
        retention_seconds: int = HubConfig.retention_seconds,
        max_msg_kb: int = HubConfig.max_msg_kb,
    ) -> DirectHub:
        """A hub on the Redis (or Redis Cluster node) `url` names, trimming
        topics as servers with these settings do; `HubUnavailableError` if
        it does not answer."""
        config = HubConfig(
            url=url, retention=retention, retention_seconds=retention_seconds, max_msg_kb=max_msg_kb
        )
        return cls(await RedisHubStore.connect(config), config)

    async def publish(self, topic: str, msg: Msg | Mapping[str, Any]) -> str:
        """Store `msg` (a `Msg`, or a dict in any dialect `from_dict` reads)
        in `topic`; its offset. Errors as `AsyncHubClient.publish`."""
        self._check_open()
        data = checked_msg(topic, _bytes(msg), self._max_msg)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queue.append((topic, data, future))
        self._schedule()
        return await future

    async def publish_many(self, topic: str, msgs: Iterable[Msg | Mapping[str, Any]]) -> list[str]:
        """Store `msgs` in `topic`, in order; their offsets (the first error raised)."""
        return list(await asyncio.gather(*(self.publish(topic, msg) for msg in msgs)))

    def _schedule(self) -> None:
        """Have what is queued sent by a task of its own, unless one is on
        its way or due. The task starts after the callbacks ready now: the
        publishers that one answer woke all queue their next message first,
        and the task sends them together."""
        if self._out < _WINDOW:
            self._out += 1
            task = asyncio.ensure_future(self._send())
            self._senders.add(task)
            task.add_done_callback(self._senders.discard)

    async def _send(self) -> None:
        """Store what is queued (a call's worth, never none: a sender is
        scheduled for a queued message), then schedule the rest."""
        count = min(len(self._queue), _CALL_MESSAGES)
        batch = [self._queue.popleft() for _ in range(count)]
        try:
            outcomes = await self._store.publish_many([(topic, data) for topic, data, _ in batch])
        except HubUnavailableError as exc:
            outcomes = [exc] * len(batch)
        finally:
            self._out -= 1
        for (_, _, future), outcome in zip(batch, outcomes, strict=True):
            _settle(future, outcome)
        if self._queue:  # what queued while this call was out
            self._schedule()

    async def subscribe(
        self, topic: str, after: str | None = None, *, group: pb.ConsumerGroup | None = None
    ) -> DirectSubscription:
        """Follow `topic` after the offset `after` (None: from now on), or
        receive as a member of `group`; live once it returns. Errors as
        the HubService's `Subscribe` (`OffsetOutOfRangeError`, `HubError`)."""
        self._check_open()
        member = checked_subscription(topic, after or "", group)
        followed = await self._store.follow(topic, after or "", member)
        subscription = DirectSubscription(self, topic, followed, group)
        self._subscriptions.add(subscription)
        return subscription

    async def ack(self, topic: str, group: str, member: str, offsets: Sequence[str]) -> int:
        """Acknowledge messages a member of `group` received: as `HubService.Ack`."""
        self._check_open()
        return await acknowledge(self._store, topic, group, member, offsets)

    async def close(self) -> None:
        """Close its subscriptions, then release the Redis connections
        (publishes on their way fail); anything asked after is refused."""
        self._closed = True
        for subscription in list(self._subscriptions):
            subscription.close()
        await self._store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise closed_client()  # as AsyncHubClient's, which it stands in for


class DirectSubscription:
    """A topic's events (`HubEvent`, as a gRPC subscriber receives them),
    in order: `async for event in subscription`. `after` is the offset of
    the last one handed out (a plain subscription's place to resume from)."""

    def __init__(
        self,
        hub: DirectHub,
        topic: str,
        subscription: Subscription,
        group: pb.ConsumerGroup | None,
    ) -> None:
        self._hub = hub
        self._topic = topic
        self._subscription = subscription
        self._group = group
        self.after = subscription.after
        self._events: deque[pb.HubEvent] = deque()
        self._closed = False

    def __aiter__(self) -> DirectSubscription:
        return self

    async def __anext__(self) -> pb.HubEvent:
        if not self._events:
            if self._closed:
                raise StopAsyncIteration
            try:
                entries = await self._subscription.next()
            except HubUnavailableError:
                if self._closed:  # closed while it waited
                    raise StopAsyncIteration from None
                raise
            if self._closed:
                raise StopAsyncIteration
            self._events.extend(
                pb.HubEvent.FromString(event_bytes(offset, msg)) for offset, msg in entries
            )
        event = self._events.popleft()
        if self._group is None:
            self.after = event.offset
        return event

    async def ack(self, *offsets: str) -> int:
        """A group member's acknowledgement of messages it received here."""
        if self._group is None:
            raise HubError("group", "only a consumer group member acknowledges messages")
        return await self._hub.ack(self._topic, self._group.name, self._group.member, offsets)

    def close(self) -> None:
        """Stop following the topic: the iteration ends, also one waiting
        for messages (on a group, what it was handed and had not taken
        stays pending with its member)."""
        if self._closed:
            return
        self._closed = True
        self._events.clear()
        self._subscription.close()
        self._hub._subscriptions.discard(self)

    async def __aenter__(self) -> DirectSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
