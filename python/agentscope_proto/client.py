"""Clients of the FormatterService, mirroring the in-process API.

`FormatterClient` (blocking) and `AsyncFormatterClient` (asyncio) take and
return the same types as `format`, `parse` and `StreamParser`, and raise the
same exception classes, rebuilt from the status details the server sends.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import grpc
from google.rpc import status_pb2
from grpc_status import rpc_status

from . import _json
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ._generated.agentscope.formatter.v1 import formatter_service_pb2_grpc as pb_grpc
from ._generated.agentscope.message.v1.message_pb2 import Msg
from .errors import FormatError, ParseError
from .formatting import FormattedBody, message_from_input
from .message._codec import blocks_to_list
from .options import FormatSettings, ParseSettings
from .providers import provider_enum
from .results import ContentDelta, ParsedResponse
from .service.status import error_from_status

__all__ = ["AsyncFormatterClient", "FormatterClient", "format_request", "result_from_proto"]

_COUNTERS: dict[str, pb.TokenCounter.ValueType] = {
    "char": pb.TOKEN_COUNTER_CHAR,
    "tiktoken": pb.TOKEN_COUNTER_TIKTOKEN,
}


_provider = provider_enum


MsgLike = Msg | Mapping[str, Any]


def _provider_first(
    provider: str, msgs: Iterable[MsgLike], call: str
) -> tuple[str, Iterable[MsgLike]]:
    """`(provider, msgs)`, accepting the old `(msgs, provider)` order with a warning.

    The old order is recognised by its types: a provider name is a `str`,
    messages never are.
    """
    if not isinstance(provider, str) and isinstance(msgs, str):
        warnings.warn(
            f"{call}(msgs, provider) is deprecated; use {call}(provider, msgs)",
            DeprecationWarning,
            stacklevel=3,
        )
        return msgs, provider
    return provider, msgs


def format_request(
    provider: str,
    msgs: Iterable[MsgLike],
    *,
    multi_agent: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | None = None,
    settings: FormatSettings | None = None,
    **options: Any,
) -> pb.FormatRequest:
    """The `FormatRequest` for the same arguments as `format()`.

    The options are checked as `format()` checks them (`FormatSettings`), so
    a bad one fails here, before any call, with the same error.
    """
    provider, msgs = _provider_first(provider, msgs, "format_request")
    if settings is None:
        settings = FormatSettings.from_kwargs(multi_agent, options)
    elif options or multi_agent:
        raise FormatError("settings", "give either settings= or the keyword options, not both")
    request = pb.FormatRequest(
        provider=_provider(provider),
        multi_agent=settings.multi_agent,
        options=_format_options(settings),
    )
    for index, msg in enumerate(msgs):
        # Dicts are read as `format()` reads them (errors name `messages[i]`).
        request.messages.append(msg if isinstance(msg, Msg) else message_from_input(msg, index))
    if tools is not None:
        request.tools_json = _json.dumps([dict(t) for t in tools], "tools")
    if tool_choice:
        request.tool_choice = tool_choice
    return request


def _format_options(settings: FormatSettings) -> pb.FormatOptions:
    """`settings` as the `FormatOptions` message (the inverse of
    `options.format_settings_from_proto`, `multi_agent` aside)."""
    options = pb.FormatOptions(
        promote_tool_result_images=settings.promote_tool_result_images,
        promote_tool_result_audios=settings.promote_tool_result_audios,
        promote_tool_result_videos=settings.promote_tool_result_videos,
        model=settings.model or "",
    )
    if settings.conversation_history_prompt is not None:
        options.conversation_history_prompt = settings.conversation_history_prompt
    if settings.max_tokens is not None:
        options.max_tokens = settings.max_tokens
    if settings.token_counter is not None:
        options.token_counter = _COUNTERS[settings.token_counter]
    if settings.agent_name is not None:
        options.agent_name = settings.agent_name
        options.multi_agent_style = pb.MULTI_AGENT_STYLE_NAMED_TURNS
    return options


def _parse_options(settings: ParseSettings) -> pb.ParseOptions:
    """`settings` as the `ParseOptions` message (the inverse of
    `options.parse_settings_from_proto`)."""
    options = pb.ParseOptions(
        split_think_tags=settings.split_think_tags,
        structured_output=settings.structured_output,
        audio_format=settings.audio_format or "",
    )
    if not settings.stream_tool_parsing:
        options.stream_tool_parsing = False
    return options


def _body(response: pb.FormatResponse) -> FormattedBody:
    warnings = list(response.warnings)
    count = response.token_count if response.HasField("token_count") else None
    return FormattedBody(_json.loads(response.body_json, "body_json"), warnings, count)


def result_from_proto(result: pb.ParseResult) -> ParsedResponse:
    """A `ParsedResponse` from its proto form."""
    usage: dict[str, int | float] | None = None
    if result.HasField("usage"):
        usage = {
            field.name: value
            for field, value in result.usage.ListFields()  # only the fields that are set
        }
        if "time_seconds" in usage:
            usage["time"] = usage.pop("time_seconds")
    structured = (
        _json.loads(result.structured_output_json, "structured_output_json")
        if result.HasField("structured_output_json")
        else None
    )
    deltas = [ContentDelta(d.index, blocks_to_list([d.block])[0]) for d in result.deltas]
    return ParsedResponse(
        content=blocks_to_list(result.msg.blocks.items),
        usage=usage,
        response_id=result.response_id,
        raw_finish_reason=result.raw_finish_reason,
        structured_output=structured,
        deltas=deltas,
        msg_id=result.msg.id,
        timestamp=result.msg.timestamp,
    )


def _status(error: grpc.RpcError) -> status_pb2.Status | None:
    metadata: Any = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    for key, value in metadata or ():
        if key == rpc_status.GRPC_DETAILS_METADATA_KEY:
            return status_pb2.Status.FromString(value)
    return None


def _raise(error: grpc.RpcError) -> Exception:
    return error_from_status(error.code(), error.details() or "", _status(error))


def _parse_request(
    provider: str, response: Mapping[str, Any] | str | bytes, options: pb.ParseOptions
) -> pb.ParseRequest:
    return pb.ParseRequest(
        provider=_provider(provider), response_json=_payload(response), options=options
    )


def _payload(value: Any, path: str = "response") -> str:
    """Provider JSON given as a dict, text or UTF-8 bytes, as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(path, f"invalid UTF-8 at byte {exc.start}") from None
    return _json.dumps(value, path)


StreamMode = Literal["cumulative", "deltas"]
_STREAM_MODES: dict[str, pb.StreamMode.ValueType] = {
    "cumulative": pb.STREAM_MODE_CUMULATIVE,
    "deltas": pb.STREAM_MODE_DELTAS,
}


def _stream_head(
    provider: str, options: pb.ParseOptions, mode: StreamMode
) -> pb.ParseStreamRequest:
    """What the first message of a ParseStream carries besides its input."""
    if mode not in _STREAM_MODES:
        raise ParseError("mode", f"expected 'cumulative' or 'deltas', got {mode!r}")
    return pb.ParseStreamRequest(
        provider=_provider(provider), options=options, stream_mode=_STREAM_MODES[mode]
    )


def _chunk_request(chunk: Any, raw: bool) -> pb.ParseStreamRequest:
    if raw:
        # Raw body slices stay bytes: a slice may split a UTF-8 sequence.
        data = bytes(chunk) if isinstance(chunk, bytes | bytearray) else _payload(chunk).encode()
        return pb.ParseStreamRequest(raw_body=data)
    return pb.ParseStreamRequest(chunk_json=_payload(chunk, "chunk"))


def _stream_requests(
    head: pb.ParseStreamRequest, chunks: Iterable[Any], raw: bool
) -> Iterator[pb.ParseStreamRequest]:
    first = True
    for chunk in chunks:
        request = _chunk_request(chunk, raw)
        if first:
            request.MergeFrom(head)
            first = False
        yield request
    if first:
        # An empty stream still names its provider, so the server can answer.
        yield head


def _parse_settings(settings: ParseSettings | None, options: Mapping[str, Any]) -> ParseSettings:
    """The `ParseSettings` of a call: `settings=`, or built from the keywords."""
    if settings is None:
        return ParseSettings(**options)
    if options:
        raise ParseError("settings", "give either settings= or the keyword options, not both")
    return settings


class FormatterClient:
    """A blocking client: `format`, `parse` and `parse_stream` over gRPC."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        limit = max_message_mb * 1024 * 1024
        options = [
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
        ]
        self._channel = (
            grpc.secure_channel(target, credentials, options)
            if credentials
            else grpc.insecure_channel(target, options)
        )
        self._stub = pb_grpc.FormatterServiceStub(self._channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def format(
        self,
        provider: str,
        msgs: Iterable[MsgLike],
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> FormattedBody:
        """`format()` on the server, same keyword options (or `settings=`);
        `bytes` in the body come back as base64 text.

        The old order `format(msgs, provider)` still works, with a
        `DeprecationWarning`.
        """
        provider, msgs = _provider_first(provider, msgs, "FormatterClient.format")
        request = format_request(provider, msgs, **kwargs)
        try:
            return _body(self._stub.Format(request, timeout=timeout, metadata=self._metadata))
        except grpc.RpcError as error:
            raise _raise(error) from None

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
        request = _parse_request(
            provider, response, _parse_options(_parse_settings(settings, options))
        )
        try:
            reply = self._stub.Parse(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise _raise(error) from None
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
        head = _stream_head(provider, _parse_options(_parse_settings(settings, options)), mode)
        requests = _stream_requests(head, chunks, raw)
        try:
            for reply in self._stub.ParseStream(requests, timeout=timeout, metadata=self._metadata):
                yield result_from_proto(reply.result)
        except grpc.RpcError as error:
            raise _raise(error) from None

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> FormatterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncFormatterClient:
    """The asyncio twin of `FormatterClient`."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        limit = max_message_mb * 1024 * 1024
        options = [
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
        ]
        self._channel = (
            grpc.aio.secure_channel(target, credentials, options)
            if credentials
            else grpc.aio.insecure_channel(target, options)
        )
        self._stub = pb_grpc.FormatterServiceStub(self._channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()

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
        provider, msgs = _provider_first(provider, msgs, "AsyncFormatterClient.format")
        request = format_request(provider, msgs, **kwargs)
        try:
            reply = await self._stub.Format(request, timeout=timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise _raise(error) from None
        return _body(reply)

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
        request = _parse_request(
            provider, response, _parse_options(_parse_settings(settings, options))
        )
        try:
            reply = await self._stub.Parse(request, timeout=timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise _raise(error) from None
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
        **parse_options: Any,
    ) -> AsyncIterator[ParsedResponse]:
        """Stream events to the server and yield its results (see
        `FormatterClient.parse_stream`, also for `mode`)."""
        head = _stream_head(
            provider, _parse_options(_parse_settings(settings, parse_options)), mode
        )

        async def requests() -> AsyncIterator[pb.ParseStreamRequest]:
            if not isinstance(chunks, AsyncIterable):
                for request in _stream_requests(head, chunks, raw):
                    yield request
                return
            first = True
            async for chunk in chunks:
                request = _chunk_request(chunk, raw)
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
            raise _raise(error) from None

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()

    async def __aenter__(self) -> AsyncFormatterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
