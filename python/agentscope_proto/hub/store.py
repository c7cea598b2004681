"""What a hub store is: topics of messages in publish order, each with offsets.

(`HubConfig`, the hub a server runs, is the server's configuration's, in
`service/config.py`; it is named here too. `factory.open_hub_store` opens
the store a URL names.)

A store keeps each topic's messages as their protobuf bytes under offsets of
the form `<milliseconds>-<sequence>.<epoch>`: the position (Redis Streams'
entry id; the memory store makes the same kind), which increases with every
message, and the topic's epoch, 8 hex digits naming the run of messages the
offset belongs to (Redis: drawn when the topic's stream is created, so a
stream that Redis lost and that was created again has another; memory: the
topic's name hashed with the store's own random seed). Clients treat offsets
as opaque strings; the stores compare them to resume a subscriber and to
refuse, as `OffsetOutOfRangeError`, an offset from which they cannot resume
without a gap: one of another epoch is another topic's or of a run that is
gone. An offset without an epoch (`0-0`: the topic's start, or one given out
before epochs) is checked by its position alone.

A topic may also have consumer groups (`Group`): each message goes to one
member of a group, stays pending with it until the member acknowledges it
(`ack`), and is taken over by another member (`join`'s subscriptions do)
once it stayed unacknowledged past the group's `claim_idle_ms`: a member
that dies loses nothing. Both stores keep the same rules (Redis Streams'
consumer groups; the memory store the same in this process).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import HubError, HubUnavailableError, LimitExceededError, OffsetOutOfRangeError
from ..service.config import HubConfig, redacted_url

__all__ = [
    "CLAIM_IDLE_MS",
    "MAX_ACKS",
    "MAX_GROUPS",
    "MAX_UNACKED",
    "Entry",
    "Group",
    "HubConfig",
    "HubStore",
    "Key",
    "Published",
    "Subscription",
    "check_ack",
    "check_name",
    "check_topic",
    "offset_epoch",
    "parse_offset",
    "redacted_url",
]

# (offset, msg): the offset (with its epoch) as ASCII bytes and the message's protobuf bytes,
# as the servicer writes them into a `HubEvent` without decoding either.
Entry = tuple[bytes, bytes]
# An offset as the pair of numbers it is made of, in the order of publishing.
Key = tuple[int, int]
# What became of one message of `publish_many`: its offset, or why it was not stored.
Published = str | HubUnavailableError

_TOPIC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,255}")
# ASCII digits only: `\d` takes any script's, which Redis would refuse.
_OFFSET = re.compile(r"([0-9]{1,20})-([0-9]{1,20})(?:\.([0-9a-f]{8}))?")
_U64 = 1 << 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
# A group member's defaults and bounds (the schema's `ConsumerGroup`).
CLAIM_IDLE_MS = 30_000
_CLAIM_IDLE_RANGE = (100, 86_400_000)
MAX_UNACKED = 256
# Offsets one Ack may carry (the schema's), and groups one topic may have
# (each costs its store memory for as long as the topic lives).
MAX_ACKS = 1000
MAX_GROUPS = 1000


@dataclass(frozen=True)
class Group:
    """A consumer group member, as checked from a `ConsumerGroup`: its
    group's `name`, its own `member` name, whether a new group starts at
    the topic's oldest retained message (else at its end), how long a
    message stays with a member unacknowledged before another takes it
    over, and how many it holds unacknowledged at most."""

    name: str
    member: str
    earliest: bool = False
    claim_idle_ms: int = CLAIM_IDLE_MS
    max_unacked: int = MAX_UNACKED

    def __post_init__(self) -> None:
        check_name(self.name, "group.name")
        check_name(self.member, "group.member")
        low, high = _CLAIM_IDLE_RANGE
        if not low <= self.claim_idle_ms <= high:
            raise HubError(
                "group.claim_idle_ms",
                f"{self.claim_idle_ms} ms is outside {low} to {high} (0: {CLAIM_IDLE_MS})",
            )
        if not 1 <= self.max_unacked <= MAX_UNACKED:
            raise HubError(
                "group.max_unacked",
                f"{self.max_unacked} is outside 1 to {MAX_UNACKED} (0: {MAX_UNACKED})",
            )


class Subscription(abc.ABC):
    """A topic followed from an offset; `next()` hands out what follows it."""

    # The offset delivery starts after: the subscriber's `after`, or the
    # topic's last offset when it asked for messages from now on.
    after: str

    @abc.abstractmethod
    async def next(self) -> list[Entry]:
        """The next messages, in order (at least one: waits for them).

        Raises `OffsetOutOfRangeError` when the topic's retention trimmed
        messages this subscriber had not received yet.
        """

    def close(self) -> None:  # noqa: B027 - a subscription may hold nothing to release
        """Stop following the topic (the subscriber is gone): a `next()`
        after it raises `closed_subscription()` (on Redis, so does one
        waiting for the topic's messages)."""


class HubStore(abc.ABC):
    """Where a hub keeps its topics: in this process, or shared in Redis."""

    @abc.abstractmethod
    async def publish(self, topic: str, msg: bytes) -> str:
        """Append `msg` (a `Msg`'s bytes) to `topic`; its offset once stored."""

    @abc.abstractmethod
    async def publish_many(self, messages: Sequence[tuple[str, bytes]]) -> list[Published]:
        """Append each `(topic, msg)` in order, in as few round trips as the
        store allows; each one's offset, or the `HubUnavailableError` that
        kept it out. A message that fails is never overtaken: the messages
        after it on its topic fail too. Raises `HubUnavailableError` when
        the store cannot tell which were stored (any may be)."""

    @abc.abstractmethod
    async def subscribe(self, topic: str, after: str) -> Subscription:
        """Follow `topic` after the offset `after` ("": from now on), live
        once this returns; `OffsetOutOfRangeError` if `after` cannot be
        resumed from without a gap."""

    @abc.abstractmethod
    async def join(self, topic: str, group: Group) -> Subscription:
        """Receive `topic`'s messages as `group.member` of the group (made
        if new, at `group.earliest`'s end of the topic): first what this
        member had received and not acknowledged, then messages no member
        received yet or that stayed unacknowledged with another member past
        `group.claim_idle_ms`, never more than `group.max_unacked`
        unacknowledged at once. Live once this returns; `after` is ""."""

    @abc.abstractmethod
    async def ack(self, topic: str, group: str, member: str, offsets: Sequence[str]) -> int:
        """Acknowledge `offsets` (well formed, distinct) of `member` of
        `group` on `topic`, all or none: `HubError` naming `group` for a
        group the topic does not have, `offsets[i]` for the first offset not
        pending with this member. How many were acknowledged."""

    async def follow(self, topic: str, after: str, member: Group | None) -> Subscription:
        """`subscribe(topic, after)`, or with a `member`, `join(topic, member)`."""
        if member is None:
            return await self.subscribe(topic, after)
        return await self.join(topic, member)

    async def close(self) -> None:  # noqa: B027 - a store may hold nothing to release
        """Release the store's connections."""


def check_topic(topic: str, path: str = "topic") -> str:
    """`topic` if it follows the rules of `PublishRequest.topic`, else `HubError`."""
    if not topic:
        raise HubError(path, "required")
    if _TOPIC.fullmatch(topic) is None:
        raise HubError(
            path,
            "expected 1 to 256 ASCII letters, digits and '._-:/', starting with a letter or digit",
        )
    return topic


async def woken(event: asyncio.Event, timeout: float | None) -> None:
    """Once `event` is set, or `timeout` seconds passed (None: no limit)."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)


def check_name(name: str, path: str) -> str:
    """`name` if it may name a group or a member, else `HubError` naming `path`."""
    if not name:
        raise HubError(path, "required")
    if _NAME.fullmatch(name) is None:
        raise HubError(
            path,
            "expected 1 to 128 ASCII letters, digits and '._-:', starting with a letter or digit",
        )
    return name


def check_ack(offsets: Sequence[str]) -> list[str]:
    """The offsets of an Ack, checked (`HubError` naming `offsets[i]`), each once."""
    if not offsets:
        raise HubError("offsets", "required: at least one offset to acknowledge")
    if len(offsets) > MAX_ACKS:
        raise HubError("offsets", f"{len(offsets)} offsets; an Ack carries at most {MAX_ACKS}")
    for index, offset in enumerate(offsets):
        parse_offset(offset, f"offsets[{index}]")
    return list(dict.fromkeys(offsets))


def not_pending(index: int, group: str, member: str) -> HubError:
    """The error for an acknowledged offset the member does not hold."""
    return HubError(
        f"offsets[{index}]",
        f"not a message of group {group!r} pending with member {member!r}: never delivered "
        "to it, acknowledged already, or taken over by another member after it stayed "
        "unacknowledged past claim_idle_ms (nothing of this Ack was acknowledged)",
    )


def closed_subscription() -> HubUnavailableError:
    """What `Subscription.next()` raises once the subscription is closed."""
    return HubUnavailableError("the subscription was closed")


def unknown_group(group: str) -> HubError:
    return HubError("group", f"this topic has no group {group!r} (a member's Subscribe makes it)")


def too_many_groups() -> LimitExceededError:
    return LimitExceededError(
        "hub_max_groups", f"a topic has at most {MAX_GROUPS} consumer groups; use one of them"
    )


def parse_offset(offset: str, path: str = "after") -> Key:
    """The numbers of an offset, or `HubError` for a string that is none."""
    match = _OFFSET.fullmatch(offset)
    key = (int(match[1]), int(match[2])) if match else None
    if key is None or key[0] >= _U64 or key[1] >= _U64:
        shown = offset if len(offset) <= 64 else offset[:64] + "..."
        raise HubError(path, f"{shown!r} is not an offset this hub gave out")
    return key


def offset_epoch(offset: str) -> str:
    """The epoch of a well-formed offset ("" if it has none)."""
    return offset.partition(".")[2]


def format_offset(key: Key, epoch: str = "") -> str:
    return f"{key[0]}-{key[1]}.{epoch}" if epoch else f"{key[0]}-{key[1]}"


def lost(after: str, first: str) -> OffsetOutOfRangeError:
    """The error for an offset of a run of messages the topic no longer has."""
    now = f"it now starts at {first}" if first else "it holds no message now"
    return OffsetOutOfRangeError(
        "after",
        f"the topic's messages after {after} are gone: its store lost them (emptied, "
        f"restarted without persistence or failed over), or the offset is another topic's; {now}",
        "lost",
    )


def resume_check(
    after: Key, last: Key, first: Key | None, trimmed: bool, started: Key = (0, 0)
) -> None:
    """Refuse resuming a topic after `after` where that could skip a message.

    `last` is the topic's last offset, `first` its oldest retained one,
    `trimmed` whether it ever lost messages to retention, `started` the
    first offset the store could have given out (older ones are another
    store's). Offsets older than the oldest retained message are refused
    once the topic has been trimmed, even when by chance nothing after them
    was: the stores cannot tell the two apart.
    """
    if after > last or (after != (0, 0) and after < started):
        raise OffsetOutOfRangeError(
            "after", "the topic never gave out this offset (was its store replaced?)", "unknown"
        )
    if trimmed and (first is None or after < first):
        raise OffsetOutOfRangeError(
            "after", "messages after this offset were trimmed by the topic's retention", "expired"
        )
