"""The gRPC channel every client of this package calls over.

`FormatterClient`, `AgentClient`, `HubClient` and their asyncio twins open it
the same way (and `AsyncA2AClient` for an agent's gRPC interface): messages
up to `max_message_mb` both ways, TLS when given credentials, and the token
as bearer metadata on every call. Closing the client closes the channel.
"""

from __future__ import annotations

from typing import TypeVar

import grpc

__all__ = [
    "AsyncChannelClient",
    "ChannelClient",
    "aio_channel",
    "bearer_metadata",
    "message_bytes",
    "sync_channel",
]

Metadata = tuple[tuple[str, str], ...]
_Client = TypeVar("_Client", bound="ChannelClient")
_AsyncClient = TypeVar("_AsyncClient", bound="AsyncChannelClient")


def message_bytes(max_message_mb: int) -> int:
    """The largest message a client sends or receives, in bytes."""
    return max_message_mb * 1024 * 1024


def _options(max_message_mb: int) -> list[tuple[str, int]]:
    limit = message_bytes(max_message_mb)
    return [("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)]


def sync_channel(
    target: str, credentials: grpc.ChannelCredentials | None, max_message_mb: int
) -> grpc.Channel:
    """A blocking channel to `target`: TLS with `credentials`, else plaintext."""
    options = _options(max_message_mb)
    if credentials is not None:
        return grpc.secure_channel(target, credentials, options)
    return grpc.insecure_channel(target, options)


def aio_channel(
    target: str, credentials: grpc.ChannelCredentials | None, max_message_mb: int
) -> grpc.aio.Channel:
    """`sync_channel` for asyncio."""
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
        target: str,
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
        target: str,
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
