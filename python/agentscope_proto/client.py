"""Clients of the FormatterService, mirroring the in-process API.

`FormatterClient` (blocking) and `AsyncFormatterClient` (asyncio) take and
return the same types as `format`, `parse` and `StreamParser`, and raise the
same exception classes, rebuilt from the status details the server sends.
`_client_proto` builds their requests and reads the replies.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import grpc

from ._channel import AsyncChannelClient, ChannelClient
from ._client_proto import (
    MsgLike,
    StreamMode,
    body_from_proto,
    chunk_request,
    format_request,
    parse_request,
    parse_settings,
    result_from_proto,
    stream_head,
    stream_requests,
)
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ._generated.agentscope.formatter.v1 import formatter_service_pb2_grpc as pb_grpc
from .formatting import FormattedBody, provider_first
from .options import ParseSettings, parse_settings_to_proto
from .results import ParsedResponse
from .service.status import error_from_rpc

__all__ = ["AsyncFormatterClient", "FormatterClient", "format_request", "result_from_proto"]


class FormatterClient(ChannelClient):
    """A blocking client: `format`, `parse` and `parse_stream` over gRPC."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb)
        self._stub = pb_grpc.FormatterServiceStub(self._channel)

    def format(
        self,
        provider: str,
        msgs: Iterable[MsgLike],
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> FormattedBody:
        """`format()` on the server, same keyword options (or `settings=`)
        and `request=` parameters; `bytes` in the body come back as base64
        text.

        The old order `format(msgs, provider)` still works, with a
        `DeprecationWarning`.
        """
        self._check_open()
        provider, msgs = provider_first(provider, msgs, "FormatterClient.format")
        request = format_request(provider, msgs, **kwargs)
        try:
            reply = self._stub.Format(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
        return body_from_proto(reply)

    def parse(
        self,
        provider: str,
        response: Mapping[str, Any] | str | bytes,
        *,
        timeout: float | None = None,
        settings: ParseSettings | None = None,
        **options: Any,
    ) -> ParsedResponse:
        """`parse()` on the server (same keyword options, or `settings=`)."""
        self._check_open()
        request = parse_request(
            provider, response, parse_settings_to_proto(parse_settings(settings, options))
        )
        try:
            reply = self._stub.Parse(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
        return result_from_proto(reply.result)

    def parse_stream(
        self,
        provider: str,
        chunks: Iterable[Mapping[str, Any] | str | bytes],
        *,
        raw: bool = False,
        mode: StreamMode = "cumulative",
        timeout: float | None = None,
        settings: ParseSettings | None = None,
        **options: Any,
    ) -> Iterator[ParsedResponse]:
        """Stream events (or, with `raw=True`, raw body slices) to the server and
        yield its results; the last one is the whole final result. Keyword
        options (or `settings=`) are `StreamParser`'s.

        `mode="cumulative"` yields the whole result so far each time;
        `mode="deltas"` yields, before the last, results holding only what
        changed (`deltas`, and `usage`/`response_id`/finish reasons when they
        changed; `content` empty), so a long stream costs linear bytes.
        """
        self._check_open()
        head = stream_head(
            provider, parse_settings_to_proto(parse_settings(settings, options)), mode
        )
        requests = stream_requests(head, chunks, raw)
        try:
            for reply in self._stub.ParseStream(requests, timeout=timeout, metadata=self._metadata):
                yield result_from_proto(reply.result)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None


class AsyncFormatterClient(AsyncChannelClient):
    """The asyncio twin of `FormatterClient`."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb)
        self._stub: pb_grpc.FormatterServiceAsyncStub

    def _made(self, channel: grpc.aio.Channel) -> None:
        self._stub = pb_grpc.FormatterServiceStub(channel)

    async def format(
        self,
        provider: str,
        msgs: Iterable[MsgLike],
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> FormattedBody:
        """`format()` on the server (the old order `format(msgs, provider)` is
        deprecated, as on `FormatterClient`)."""
        self._check_open()
        provider, msgs = provider_first(provider, msgs, "AsyncFormatterClient.format")
        request = format_request(provider, msgs, **kwargs)
        try:
            reply = await self._stub.Format(request, timeout=timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return body_from_proto(reply)

    async def parse(
        self,
        provider: str,
        response: Mapping[str, Any] | str | bytes,
        *,
        timeout: float | None = None,
        settings: ParseSettings | None = None,
        **options: Any,
    ) -> ParsedResponse:
        """`parse()` on the server (same keyword options, or `settings=`)."""
        self._check_open()
        request = parse_request(
            provider, response, parse_settings_to_proto(parse_settings(settings, options))
        )
        try:
            reply = await self._stub.Parse(request, timeout=timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return result_from_proto(reply.result)

    async def parse_stream(
        self,
        provider: str,
        chunks: Iterable[Any] | AsyncIterable[Any],
        *,
        raw: bool = False,
        mode: StreamMode = "cumulative",
        timeout: float | None = None,
        settings: ParseSettings | None = None,
        **options: Any,
    ) -> AsyncIterator[ParsedResponse]:
        """Stream events to the server and yield its results (see
        `FormatterClient.parse_stream`, also for `mode`)."""
        self._check_open()
        head = stream_head(
            provider, parse_settings_to_proto(parse_settings(settings, options)), mode
        )

        async def requests() -> AsyncIterator[pb.ParseStreamRequest]:
            if not isinstance(chunks, AsyncIterable):
                for request in stream_requests(head, chunks, raw):
                    yield request
                return
            first = True
            async for chunk in chunks:
                request = chunk_request(chunk, raw)
                if first:
                    request.MergeFrom(head)
                    first = False
                yield request
            if first:
                yield head

        call = self._stub.ParseStream(requests(), timeout=timeout, metadata=self._metadata)
        try:
            async for reply in call:
                yield result_from_proto(reply.result)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
