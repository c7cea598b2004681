"""The gRPC channel every client of this package calls over.

`FormatterClient`, `AgentClient`, `HubClient` and their asyncio twins open it
the same way (and `AsyncA2AClient` for an agent's gRPC interface): messages
up to `max_message_mb` both ways, TLS when given credentials, and the token
as bearer metadata on every call. Closing the client closes the channel.

A target is one gRPC target (`host:port`, `dns:///name:port`: a name with
several addresses is tried address by address), or several `host:port`s
with IP addresses: one channel over them, which moves to the next when the
one it uses stops answering (replicas of a served agent; a reply taken up
there resumes where it stopped). Over TLS such a channel checks one name on
every replica's certificate, `tls_server_name` (gRPC's target name
override), as it would the name of a `dns:///` target.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence
from typing import TypeVar

import grpc

from .errors import RemoteError

__all__ = [
    "AsyncChannelClient",
    "ChannelClient",
    "aio_channel",
    "bearer_metadata",
    "channel_args",
    "channel_target",
    "closed_client",
    "message_bytes",
    "sync_channel",
    "task_cancelling",
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


def channel_args(
    target: Target,
    credentials: grpc.ChannelCredentials | None,
    max_message_mb: int,
    tls_server_name: str | None,
) -> tuple[str, list[tuple[str, int | str]]]:
    """The gRPC target and options of a channel to `target`: its message
    limit, and the name its TLS checks on the server's certificate;
    `ValueError` naming what is wrong (the target, or `tls_server_name`
    where it is missing or has no use)."""
    name = channel_target(target)
    limit = message_bytes(max_message_mb)
    options: list[tuple[str, int | str]] = [
        ("grpc.max_receive_message_length", limit),
        ("grpc.max_send_message_length", limit),
    ]
    if tls_server_name is not None:
        if not tls_server_name or credentials is None:
            raise ValueError(
                "tls_server_name: the name to check on the server's certificate, with credentials"
            )
        options.append(("grpc.ssl_target_name_override", tls_server_name))
    elif credentials is not None and not isinstance(target, str) and len(target) > 1:
        # Unchecked, gRPC would check the list itself ("10.0.0.1:1,10.0.0.2:1"),
        # which no certificate names: every connection would fail.
        raise ValueError(
            "tls_server_name: several targets over TLS share one channel, which checks one "
            "name on every replica's certificate: give that name (or one DNS name with "
            "several addresses as the target)"
        )
    return name, options


def sync_channel(
    target: Target,
    credentials: grpc.ChannelCredentials | None,
    max_message_mb: int,
    tls_server_name: str | None = None,
) -> grpc.Channel:
    """A blocking channel to `target`: TLS with `credentials` (checking
    `tls_server_name` instead of the target's host, if given), else plaintext."""
    name, options = channel_args(target, credentials, max_message_mb, tls_server_name)
    if credentials is not None:
        return grpc.secure_channel(name, credentials, options)
    return grpc.insecure_channel(name, options)


def aio_channel(
    target: Target,
    credentials: grpc.ChannelCredentials | None,
    max_message_mb: int,
    tls_server_name: str | None = None,
) -> grpc.aio.Channel:
    """`sync_channel` for asyncio."""
    name, options = channel_args(target, credentials, max_message_mb, tls_server_name)
    if credentials is not None:
        return grpc.aio.secure_channel(name, credentials, options)
    return grpc.aio.insecure_channel(name, options)


def bearer_metadata(token: str | None) -> Metadata:
    """The metadata that carries `token` on each call (none without one)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def closed_client() -> RemoteError:
    """What a client's calls end with once it was closed (also those it
    cut off: closing the channel cancels its calls)."""
    return RemoteError(grpc.StatusCode.CANCELLED, "the client was closed")


def task_cancelling() -> bool:
    """Whether the running task is being cancelled (Python 3.11+ can tell):
    else a `CancelledError` out of a call is grpc's, for a call the closed
    channel cancelled."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling()) if cancelling is not None else False


class ChannelClient:
    """A blocking client's channel and call metadata; a context manager that
    closes the channel."""

    def __init__(
        self,
        target: Target,
        credentials: grpc.ChannelCredentials | None,
        token: str | None,
        max_message_mb: int,
        tls_server_name: str | None = None,
    ) -> None:
        self._channel = sync_channel(target, credentials, max_message_mb, tls_server_name)
        self._metadata = bearer_metadata(token)
        self._closed = False

    def close(self) -> None:
        """Close the channel: calls after it raise `closed_client()`."""
        self._closed = True
        self._channel.close()

    def _check_open(self) -> None:
        if self._closed:
            raise closed_client()

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncChannelClient:
    """`ChannelClient` for asyncio: `async with` closes the channel.

    An asyncio gRPC channel belongs to the event loop it is made in, so the
    channel is made at the client's first call, in that call's loop (a
    client made at import time, before `asyncio.run`, works in it), and a
    call from another loop is a `RuntimeError` saying so. Subclasses make
    their stubs in `_made`."""

    def __init__(
        self,
        target: Target,
        credentials: grpc.ChannelCredentials | None,
        token: str | None,
        max_message_mb: int,
        tls_server_name: str | None = None,
    ) -> None:
        # Checked now; made at the first call.
        channel_args(target, credentials, max_message_mb, tls_server_name)
        self._args = (target, credentials, max_message_mb, tls_server_name)
        self._aio: grpc.aio.Channel | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._metadata = bearer_metadata(token)
        self._closed = False

    def _made(self, channel: grpc.aio.Channel) -> None:
        """Make what calls over `channel` (stubs), once it is made."""

    @property
    def _channel(self) -> grpc.aio.Channel:
        """The channel, made in the running loop the first time."""
        loop = asyncio.get_running_loop()
        if self._aio is None:
            self._aio, self._loop = aio_channel(*self._args), loop
            self._made(self._aio)
        elif loop is not self._loop:
            raise RuntimeError(
                f"{type(self).__name__} was first used in another event loop, to which its "
                "channel belongs: make a client for each loop (each asyncio.run)"
            )
        return self._aio

    async def close(self) -> None:
        """Close the channel: calls after it raise `closed_client()`."""
        self._closed = True
        channel, self._aio = self._aio, None
        if channel is not None and asyncio.get_running_loop() is self._loop:
            await channel.close()  # (another loop's channel cannot be; it goes with its loop)

    def _check_open(self) -> None:
        """`closed_client()` once closed; else the channel, made in this
        loop if it is not yet (a `RuntimeError` from another loop)."""
        if self._closed:
            raise closed_client()
        self._channel  # noqa: B018 - made, and its loop checked

    def _closed_under(self) -> bool:
        """Whether a `CancelledError` out of a call is `close()`'s, not the
        running task's cancellation."""
        return self._closed and not task_cancelling()

    async def __aenter__(self: _AsyncClient) -> _AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
