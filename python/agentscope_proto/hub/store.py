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
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence

from ..errors import HubError, HubUnavailableError, OffsetOutOfRangeError
from ..service.config import HubConfig, redacted_url

__all__ = [
    "Entry",
    "HubConfig",
    "HubStore",
    "Key",
    "Published",
    "Subscription",
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
        """Stop following the topic (the subscriber is gone)."""


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
