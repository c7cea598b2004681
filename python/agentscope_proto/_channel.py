"""The gRPC channel every client of this package calls over.

`FormatterClient`, `AgentClient`, `HubClient` and their asyncio twins open it
the same way (and `AsyncA2AClient` for an agent's gRPC interface): messages
up to `max_message_mb` both ways, TLS when given credentials, and the token
as bearer metadata on every call. Closing the client closes the channel.

A target is one gRPC target (`host:port`, `dns:///name:port`: a name with
several addresses is tried address by address), or several `host:port`s
with IP addresses: one channel over them, which moves to the next when the
one it uses stops answering (replicas of a served agent; a reply taken up
there resumes where it stopped).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import TypeVar

import grpc

__all__ = [
    "AsyncChannelClient",
    "ChannelClient",
    "aio_channel",
    "bearer_metadata",
    "channel_target",
    "message_bytes",
    "sync_channel",
]

Metadata = tuple[tuple[str, str], ...]
_Client = TypeVar("_Client", bound="ChannelClient")
_AsyncClient = TypeVar("_AsyncClient", bound="AsyncChannelClient")


def message_bytes(max_message_mb: int) -> int:
    """The largest message a client sends or receives, in bytes."""
    return max_message_mb * 1024 * 1024


Target = str | Sequence[str]


def channel_target(target: Target) -> str:
    """The gRPC target of one target or of several IP `host:port`s (the
    `ipv4:` or `ipv6:` scheme's list); `ValueError` naming one that is not."""
    if isinstance(target, str):
        return target
    targets = list(target)
    if not targets:
        raise ValueError("target: expected at least one host:port")
    versions = {_ip_version(one) for one in targets}
    if len(versions) > 1:
        raise ValueError("target: several targets must all be IPv4 or all IPv6 addresses")
    return f"ipv{versions.pop()}:" + ",".join(targets)


def _ip_version(target: str) -> int:
    host, _, port = target.rpartition(":")
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        address = None
    if address is None or not port.isdigit():
        raise ValueError(
            f"target: {target!r}: several targets are IP host:port pairs; for host names, "
            "give one DNS name with several addresses (dns:///name:port)"
        ) from None
    return address.version


def _options(max_message_mb: int) -> list[tuple[str, int]]:
    limit = message_bytes(max_message_mb)
    return [("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)]


def sync_channel(
    target: Target, credentials: grpc.ChannelCredentials | None, max_message_mb: int
) -> grpc.Channel:
    """A blocking channel to `target`: TLS with `credentials`, else plaintext."""
    target = channel_target(target)
    options = _options(max_message_mb)
    if credentials is not None:
        return grpc.secure_channel(target, credentials, options)
    return grpc.insecure_channel(target, options)


def aio_channel(
    target: Target, credentials: grpc.ChannelCredentials | None, max_message_mb: int
) -> grpc.aio.Channel:
    """`sync_channel` for asyncio."""
    target = channel_target(target)
    options = _options(max_message_mb)
    if credentials is not None:
        return grpc.aio.secure_channel(target, credentials, options)
    return grpc.aio.insecure_channel(target, options)


def bearer_metadata(token: str | None) -> Metadata:
    """The metadata that carries `token` on each call (none without one)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


class ChannelClient:
    """A blocking client's channel and call metadata; a context manager that
    closes the channel."""

    def __init__(
        self,
        target: Target,
        credentials: grpc.ChannelCredentials | None,
        token: str | None,
        max_message_mb: int,
    ) -> None:
        self._channel = sync_channel(target, credentials, max_message_mb)
        self._metadata = bearer_metadata(token)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncChannelClient:
    """`ChannelClient` for asyncio: `async with` closes the channel."""

    def __init__(
        self,
        target: Target,
        credentials: grpc.ChannelCredentials | None,
        token: str | None,
        max_message_mb: int,
    ) -> None:
        self._channel = aio_channel(target, credentials, max_message_mb)
        self._metadata = bearer_metadata(token)

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()

    async def __aenter__(self: _AsyncClient) -> _AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
