"""The gRPC channel every client of this package calls over.

`FormatterClient`, `AgentClient`, `HubClient` and their asyncio twins open it
the same way (and `AsyncA2AClient` for an agent's gRPC interface): messages
up to `max_message_mb` both ways, TLS when given credentials, and the token
as bearer metadata on every call. Closing the client closes the channel.

A target is one gRPC target (`host:port`, `dns:///name:port`: a name with
several addresses is tried address by address), or several `host:port`s
(replicas of a served agent; a reply taken up on another resumes where it
stopped). Several IP addresses are one channel over them, which moves to
the next when the one it uses stops answering; over TLS it checks one name
on every replica's certificate, `tls_server_name` (gRPC's target name
override), as it would the name of a `dns:///` target. Several with host
names are a channel each (`_Failover`: each resolves its name again when it
reconnects, as replicas move, and checks its own name over TLS): calls go on
one until it fails to connect, then on the next.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
from collections.abc import Sequence
from typing import Any, TypeVar

import grpc

from .errors import RemoteError

__all__ = [
    "AsyncChannelClient",
    "ChannelClient",
    "aio_channel",
    "bearer_metadata",
    "channel_args",
    "channel_targets",
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


def channel_targets(target: Target) -> list[str]:
    """The gRPC targets of the channels to `target`: itself; several IP
    `host:port`s of one IP version as one (the `ipv4:` or `ipv6:` scheme's
    list); else each of several `host:port`s; `ValueError` naming one that is
    not a `host:port`."""
    if isinstance(target, str):
        return [target]
    targets = list(target)
    if not targets:
        raise ValueError("target: expected at least one host:port")
    versions = {_ip_version(one) for one in targets}
    if len(versions) == 1 and 0 not in versions:
        return [f"ipv{versions.pop()}:" + ",".join(targets)]
    return targets


def _ip_version(target: str) -> int:
    """4 or 6 for an IP `host:port`, 0 for a host name's."""
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(
            f"target: {target!r}: each of several targets is a host:port "
            "(a host name, an IPv4 address or a bracketed IPv6 one, and a port)"
        )
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).version
    except ValueError:
        return 0


def channel_args(
    target: Target,
    credentials: grpc.ChannelCredentials | None,
    max_message_mb: int,
    tls_server_name: str | None,
) -> tuple[list[str], list[tuple[str, int | str]]]:
    """The gRPC targets of the channels to `target` (`channel_targets`) and
    their options: the message limit, and the name TLS checks on the server's
    certificate; `ValueError` naming what is wrong (a target, or
    `tls_server_name` where it is missing or has no use)."""
    names = channel_targets(target)
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
    elif credentials is not None and not isinstance(target, str) and len(names) < len(target):
        # Unchecked, gRPC would check the list itself ("10.0.0.1:1,10.0.0.2:1"),
        # which no certificate names: every connection would fail.
        raise ValueError(
            "tls_server_name: several IP targets over TLS share one channel, which checks one "
            "name on every replica's certificate: give that name (or the replicas' host names, "
            "each checked on its own certificate)"
        )
    return names, options


def sync_channel(
    target: Target,
    credentials: grpc.ChannelCredentials | None,
    max_message_mb: int,
    tls_server_name: str | None = None,
) -> grpc.Channel:
    """A blocking channel to `target`: TLS with `credentials` (checking
    `tls_server_name` instead of the target's host, if given), else plaintext."""
    names, options = channel_args(target, credentials, max_message_mb, tls_server_name)
    if credentials is not None:
        made = [grpc.secure_channel(name, credentials, options) for name in names]
    else:
        made = [grpc.insecure_channel(name, options) for name in names]
    return made[0] if len(made) == 1 else _Failover(made)


def aio_channel(
    target: Target,
    credentials: grpc.ChannelCredentials | None,
    max_message_mb: int,
    tls_server_name: str | None = None,
) -> grpc.aio.Channel:
    """`sync_channel` for asyncio."""
    names, options = channel_args(target, credentials, max_message_mb, tls_server_name)
    if credentials is not None:
        made = [grpc.aio.secure_channel(name, credentials, options) for name in names]
    else:
        made = [grpc.aio.insecure_channel(name, options) for name in names]
    return made[0] if len(made) == 1 else _AioFailover(made)


# How gRPC words the status of a call no connection took (it was not sent).
_UNSENT = ("failed to connect to all addresses", "errors resolving", "DNS resolution failed")


def _unsent(error: Any) -> bool:
    """Whether a call's error (grpc's, or grpc.aio's) says no connection took it."""
    return error.code() is grpc.StatusCode.UNAVAILABLE and (error.details() or "").startswith(
        _UNSENT
    )


class _Replicas:
    """Which of several channels a call goes on: the one in use, until a
    call on it ends UNAVAILABLE (its replica is down, unreachable, stopping
    or cut off), then the next. Calls made on one before it failed do not
    move the others on again."""

    def __init__(self, channels: list[Any]) -> None:
        self.channels = channels
        self.at = 0
        # Tasks reading the status of asyncio streams that ended.
        self.reading: set[asyncio.Future[grpc.StatusCode]] = set()

    def failed(self, at: int, code: grpc.StatusCode | None) -> None:
        if code is grpc.StatusCode.UNAVAILABLE and at == self.at:
            self.at = (at + 1) % len(self.channels)


class _Method:
    """A multicallable of a `_Failover` channel: each call made on the
    channel in use (`_Replicas`), with the method made there once. A unary
    call no connection took goes on to the next channel, up to each once
    (gRPC's words say so: nothing was sent); every other call ends as it
    ends, and the next call goes on the next channel if it ended UNAVAILABLE."""

    def __init__(
        self, replicas: _Replicas, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.replicas = replicas
        self.kind = kind  # the channel's method that makes it: "unary_unary", ...
        self._args = args, kwargs
        self._made: dict[int, Any] = {}

    def on(self, at: int) -> Any:
        """The method on the channel `at`."""
        method = self._made.get(at)
        if method is None:
            args, kwargs = self._args
            channel = self.replicas.channels[at]
            method = self._made[at] = getattr(channel, self.kind)(*args, **kwargs)
        return method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        replicas, tries = self.replicas, len(self.replicas.channels)
        while True:
            at = replicas.at
            tries -= 1
            try:
                call = self.on(at)(*args, **kwargs)
            except grpc.RpcError as error:
                replicas.failed(at, error.code())
                if tries and self.kind == "unary_unary" and _unsent(error):
                    continue
                raise
            if isinstance(call, grpc.Future):  # a stream's call: it ends later
                call.add_done_callback(functools.partial(self._ended, at))
            return call

    def __getattr__(self, name: str) -> Any:
        # The rest of a multicallable (`with_call`, `future`): the one in use's.
        return getattr(self.on(self.replicas.at), name)

    def _ended(self, at: int, call: Any) -> None:
        self.replicas.failed(at, call.code())


class _AioMethod(_Method):
    """`_Method` on grpc.aio's channels, whose calls fail when awaited or
    read: a unary call is awaited here (`_retried`), a stream's status read
    as it ends."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.kind == "unary_unary":
            return self._retried(args, kwargs)
        at = self.replicas.at
        call = self.on(at)(*args, **kwargs)
        call.add_done_callback(functools.partial(self._ended, at))
        return call

    async def _retried(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        replicas, tries = self.replicas, len(self.replicas.channels)
        while True:
            at = replicas.at
            tries -= 1
            try:
                return await self.on(at)(*args, **kwargs)
            except grpc.aio.AioRpcError as error:
                replicas.failed(at, error.code())
                if not (tries and _unsent(error)):
                    raise

    def _ended(self, at: int, call: Any) -> None:
        if call.cancelled():
            return
        # The status of a call that ended is there: read at once, so that
        # the caller's next call already goes where it should; else read
        # in a task.
        reading = call.code()
        try:
            reading.send(None)
        except StopIteration as read:
            self.replicas.failed(at, read.value)
            return
        reading.close()
        task = asyncio.ensure_future(call.code())
        self.replicas.reading.add(task)
        task.add_done_callback(functools.partial(self._read, at))

    def _read(self, at: int, read: asyncio.Future[grpc.StatusCode]) -> None:
        self.replicas.reading.discard(read)
        if not read.cancelled() and read.exception() is None:
            self.replicas.failed(at, read.result())


class _Replicated:
    """The methods of a channel over several replicas' channels (see
    `_Replicas`), whose calls are `method`'s."""

    method: type[_Method] = _Method

    def __init__(self, channels: list[Any]) -> None:
        self._replicas = _Replicas(channels)

    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self.method(self._replicas, "unary_unary", args, kwargs)

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.method(self._replicas, "unary_stream", args, kwargs)

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self.method(self._replicas, "stream_unary", args, kwargs)

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.method(self._replicas, "stream_stream", args, kwargs)

    def _in_use(self) -> Any:
        return self._replicas.channels[self._replicas.at]


class _Failover(_Replicated, grpc.Channel):
    """A blocking channel over several replicas' channels."""

    def subscribe(self, callback: Any, try_to_connect: bool = False) -> None:
        self._in_use().subscribe(callback, try_to_connect)

    def unsubscribe(self, callback: Any) -> None:
        for channel in self._replicas.channels:
            channel.unsubscribe(callback)

    def close(self) -> None:
        for channel in self._replicas.channels:
            channel.close()

    def __enter__(self) -> _Failover:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _AioFailover(_Replicated, grpc.aio.Channel):
    """`_Failover` for asyncio."""

    method = _AioMethod

    async def __aenter__(self) -> _AioFailover:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self, grace: float | None = None) -> None:
        await asyncio.gather(*(channel.close(grace) for channel in self._replicas.channels))

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._in_use().get_state(try_to_connect)  # type: ignore[no-any-return]

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._in_use().wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._in_use().channel_ready()


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
