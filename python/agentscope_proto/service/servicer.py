"""The FormatterService servicer: translates proto requests to `format`, `parse`
and `StreamParser`, and their results back to proto responses.

Everything else (decoding, deadlines, the error path) lives in `_rpc.py`;
server assembly, auth and TLS in `app.py`. Unary work on big requests runs in
a worker thread so the event loop keeps answering health checks.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from .. import _json
from .._fetch import media_limits
from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .._generated.agentscope.formatter.v1 import formatter_service_pb2_grpc as pb_grpc
from .._generated.agentscope.message.v1.message_pb2 import Msg
from .._log import warning_log_level
from .._wire import WireMessages
from ..cache import FormatCache
from ..errors import FormatError, LimitExceededError, MessageFormatError, ParseError
from ..formatting import FormattedBody, body_to_json, format
from ..message._codec import block_from_dict
from ..options import format_settings_from_proto, parse_settings_from_proto
from ..parsing import StreamParser, parse
from ..providers import provider_for
from ..request import request_from_proto
from ..results import ParsedResponse
from ._rpc import (
    Budget,
    Context,
    Stopped,
    Wired,
    checked,
    decoded,
    encoded_format_response,
    logger,
    rpc_errors,
)
from .config import MB, ServerConfig

__all__ = ["SERVICE_NAME", "FormatterServicer", "provider_name"]

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["FormatterService"].full_name
T = TypeVar("T")
# A raw stream body is fed to the parser this many lines at a time, so that
# the responses of one slice are sent before the next slice makes more; a body
# of many tiny events would otherwise make all its responses at once, in
# memory quadratic in its size (cumulative mode).
_RAW_LINES = 64
# Requests and stream messages above this size are handled in a worker
# thread, so that a huge one does not stall the event loop; smaller ones run
# inline (a thread hop costs more than they do).
_INLINE_BYTES = 256 * 1024
_MESSAGES_FIELD = pb.FormatRequest.DESCRIPTOR.fields_by_name["messages"].number


def provider_name(value: int) -> str:
    """The registry name of a `Provider` enum value (`PROVIDER_OPENAI` -> `openai`)."""
    return provider_for(value).name


def _tools(request: pb.FormatRequest) -> Any:
    """The decoded `tools_json`; `format()` checks it (`tools`, `tools[i]...`),
    as it checks the Python API's and the CLI's."""
    if not request.tools_json:
        return None
    return _json.loads(request.tools_json, "tools_json")


def _over_block_limit(messages: Iterable[Msg], size: int, limit: int) -> bool:
    """Whether `messages` (`size` bytes on the wire) hold more than `limit` content blocks.

    Every block is an entry of a repeated field, at least two bytes on the
    wire (its tag and its length), so a request of `size` bytes holds at most
    `size // 2` blocks: one small enough cannot exceed the limit, and its
    blocks are not counted (walking them costs about 10 % of a Format call).
    """
    return size // 2 > limit and _count_blocks(messages, limit) > limit


def _count_blocks(messages: Iterable[Msg], limit: int) -> int:
    """The content blocks of `messages`, tool result blocks included (stops past `limit`)."""
    total = 0
    pending = [m.blocks.items for m in messages if m.WhichOneof("content") == "blocks"]
    while pending and total <= limit:
        items = pending.pop()
        total += len(items)
        for block in items:
            if block.WhichOneof("block") == "tool_result":
                result = block.tool_result
                if result.WhichOneof("output") == "blocks":
                    pending.append(result.blocks.items)
    return total


def _raw_slices(data: bytes, lines: int = _RAW_LINES) -> Iterator[bytes]:
    """`data` in slices of at most `lines` lines (the last may be unterminated)."""
    start = 0
    while start < len(data):
        end = start
        for _ in range(lines):
            end = data.find(b"\n", end) + 1
            if not end:
                end = len(data)
                break
        yield data[start:end]
        start = end


class FormatterServicer(pb_grpc.FormatterServiceServicer):
    """Translates FormatterService RPCs to the in-process API."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self._config = config or ServerConfig()
        # With several worker processes, each reply names its worker, so that
        # operators (and tests) can see the load spread.
        self._worker = (("x-worker-pid", str(os.getpid())),) if self._config.reuse_port else ()
        cache_mb = self._config.format_cache_mb
        self._cache = FormatCache(cache_mb * MB) if cache_mb else None

    def _inline(self, size: int, network: bool) -> bool:
        """Whether to run work on `size` bytes on the event loop instead of a thread.

        The hop to a worker thread costs more than formatting a small request
        (about 8 % of Format throughput); a request up to `_INLINE_BYTES`
        without downloads takes a few milliseconds at most, too short to stall
        health checks. Bigger requests, and every request when downloads are
        allowed (network waits), still go to a thread.
        """
        return not (network and self._config.allow_download) and size <= _INLINE_BYTES

    def _work(self, call: Callable[[], T]) -> T:
        """Run `call` under the configured media limits; dropped-block warnings
        log at DEBUG (the response carries them to the client)."""
        with media_limits(self._config.media_limits), warning_log_level(logging.DEBUG):
            try:
                return call()
            except RecursionError:
                # Only input nested past every depth check gets here; it is the
                # client's input, not a server fault.
                raise MessageFormatError("", "input nested too deeply") from None

    async def _offload(self, size: int, call: Callable[[], T], *, network: bool = False) -> T:
        """`_work(call)`, in a worker thread unless `size` bytes are small enough
        (and, if the work may download, downloads are off)."""
        if self._inline(size, network):
            return self._work(call)
        return await asyncio.to_thread(self._work, call)

    async def _unary(
        self,
        method: str,
        request: Any,
        context: Context,
        call: Callable[[Any, Budget, int], T],
        size: int | None = None,
    ) -> T:
        """Run `call(request, budget, size)` with the RPC's error handling;
        `size` is the request's encoded size (measured when not given)."""
        budget = Budget(context)
        async with rpc_errors(method, context, budget):
            if self._worker:
                await context.send_initial_metadata(self._worker)
            message: Message = decoded(request)
            budget.check()  # the deadline may have passed while queued
            # Measured once (it encodes the message): the thread decision and
            # the block limit both use it.
            if size is None:
                size = message.ByteSize()
            # With the end-of-call line (`rpc_errors`): a call started and not
            # ended is one still running, e.g. at a drain.
            logger.debug("%s started: %d bytes", method, size)
            if self._inline(size, network=True):
                return self._work(lambda: call(message, budget, size))
            budget.threaded = True
            return await asyncio.to_thread(self._work, lambda: call(message, budget, size))
        raise AssertionError("unreachable: rpc_errors aborts")  # pragma: no cover

    # Over gRPC the response may come back already encoded (bytes), which the
    # server's serializer passes through (`app._passing_bytes`): wider than the
    # generated base class's return type.
    async def Format(  # type: ignore[override]
        self, request: pb.FormatRequest | Wired, context: Context
    ) -> pb.FormatResponse | bytes:
        if not isinstance(request, Wired):
            return await self._unary("Format", request, context, self._format)
        # The request as it arrived (gRPC): with the cache on, each message's
        # bytes key its cached turn and the turn's JSON goes into the body as
        # it is. Slicing them costs less than encoding one message again. The
        # response goes back encoded (see `encoded_format_response`).
        data = request.data
        wire = WireMessages.of(data, _MESSAGES_FIELD) if self._cache is not None else None

        def call(message: pb.FormatRequest, budget: Budget, size: int) -> bytes:
            body, body_json = self._formatted(message, budget, size, wire)
            return encoded_format_response(body_json, body.warnings, body.token_count)

        return await self._unary("Format", request.message, context, call, len(data))

    async def Parse(self, request: pb.ParseRequest, context: Context) -> pb.ParseResponse:
        return await self._unary("Parse", request, context, self._parse)

    def _format(self, request: pb.FormatRequest, budget: Budget, size: int) -> pb.FormatResponse:
        body, body_json = self._formatted(request, budget, size)
        # The UTF-8 bytes go in as they are (protobuf checks them, as it checks
        # a str): decoding them to a str first would only be encoded back.
        response = pb.FormatResponse(body_json=body_json)  # type: ignore[arg-type]
        response.warnings.extend(body.warnings)
        if body.token_count is not None:
            response.token_count = body.token_count
        return response

    def _formatted(
        self,
        request: pb.FormatRequest,
        budget: Budget,
        size: int,
        wire: WireMessages | None = None,
    ) -> tuple[FormattedBody, bytes]:
        """The formatted body and its JSON."""
        limit = self._config.max_blocks
        if _over_block_limit(request.messages, size, limit):
            raise LimitExceededError(
                "max_blocks", f"the request holds more than {limit} content blocks"
            )
        body = format(
            provider_name(request.provider),
            checked(request.messages, budget),
            settings=format_settings_from_proto(request.options, multi_agent=request.multi_agent),
            tools=_tools(request),
            tool_choice=request.tool_choice or None,
            request=request_from_proto(request.request) if request.HasField("request") else None,
            media_root=self._config.media_root,
            allow_download=self._config.allow_download,
            cache=self._cache,
            _wire=wire,
        )
        body_json = body_to_json(body)
        budget.check()
        return body, body_json

    def _parse(self, request: pb.ParseRequest, budget: Budget, size: int) -> pb.ParseResponse:
        # An unset response_json is parse()'s empty text, refused as it refuses it.
        result = parse(
            provider_name(request.provider),
            request.response_json,
            settings=parse_settings_from_proto(request.options),
        )
        budget.check()
        return pb.ParseResponse(result=result.to_proto())

    async def ParseStream(
        self, request_iterator: AsyncIterator[pb.ParseStreamRequest], context: Context
    ) -> AsyncIterator[pb.ParseStreamResponse]:
        async with rpc_errors("ParseStream", context):
            async for response in self._parse_stream(context):
                yield response

    async def _next_request(self, context: Context) -> Any:
        """The next stream message, None at the end; `Stopped` if none comes in time."""
        idle = self._config.stream_idle_seconds
        try:
            request = await asyncio.wait_for(context.read(), idle)
        except asyncio.TimeoutError:
            raise Stopped(f"no stream message for {idle:g}s") from None
        return None if request is grpc.aio.EOF else request

    async def _parse_stream(self, context: Context) -> AsyncIterator[pb.ParseStreamResponse]:
        # Messages are read with context.read() (not the request iterator) so
        # that an idle client can be timed out.
        config = self._config
        parser: StreamParser | None = None
        deltas_only = False
        previous = pb.ParseResult()  # what the client has seen (deltas mode)
        index = 0
        sent = 0
        output_limit = config.max_stream_output_mb * MB
        while (received := await self._next_request(context)) is not None:
            if index >= config.max_stream_messages:
                raise LimitExceededError(
                    "max_stream_messages",
                    f"the stream sent more than {config.max_stream_messages} messages",
                )
            request: pb.ParseStreamRequest = decoded(received, f"requests[{index}]")
            if parser is None:
                parser = _stream_parser(request)
                deltas_only = _deltas_only(request.stream_mode)
            elif request.provider and provider_name(request.provider) != parser.provider:
                raise FormatError(f"requests[{index}].provider", "differs from the first message")
            async for result in self._feed(parser, request, index):
                if deltas_only:
                    current = _without_msg(result)
                    changes = _changes(current, previous)
                    previous = current
                    if changes is None:
                        continue
                    response = pb.ParseStreamResponse(result=changes)
                else:
                    response = pb.ParseStreamResponse(result=result.to_proto())
                sent += response.ByteSize()
                if sent > output_limit:
                    raise LimitExceededError(
                        "max_stream_output_mb",
                        f"the responses of this stream exceed {config.max_stream_output_mb} MB",
                    )
                yield response
            index += 1
        if parser is None:
            raise ParseError(
                "requests", "the stream was empty; the first message names the provider"
            )
        final = self._work(parser.finish)
        yield pb.ParseStreamResponse(result=final.to_proto(), done=True)

    async def _feed(
        self, parser: StreamParser, request: pb.ParseStreamRequest, index: int
    ) -> AsyncIterator[ParsedResponse]:
        """The results one stream message completes."""
        which = request.WhichOneof("input")
        if which == "chunk_json":
            chunk = request.chunk_json
            result = await self._offload(len(chunk), lambda: parser.feed(chunk))
            if result is not None:
                yield result
        elif which == "raw_body":
            for piece in _raw_slices(request.raw_body):
                for result in await self._offload(
                    len(piece), functools.partial(parser.feed_bytes, piece)
                ):
                    yield result
        else:
            raise ParseError(f"requests[{index}].input", "set chunk_json or raw_body")


def _deltas_only(mode: int) -> bool:
    if mode not in pb.StreamMode.values():
        raise ParseError("requests[0].stream_mode", f"unknown stream mode {mode}")
    return mode == pb.STREAM_MODE_DELTAS


_SCALARS = ("response_id", "finish_reason", "raw_finish_reason")


def _without_msg(result: ParsedResponse) -> pb.ParseResult:
    """`result.to_proto()` without the message so far: building that costs a
    deltas-mode stream more than parsing it, and the client does not get it."""
    proto = pb.ParseResult(
        response_id=result.response_id,
        finish_reason=result.finish_reason,
        raw_finish_reason=result.raw_finish_reason,
    )
    if result.usage is not None:
        proto.usage.CopyFrom(result.usage.to_proto())
    for delta in result.deltas:
        proto.deltas.add(index=delta.index, block=block_from_dict(delta.block, "delta"))
    return proto


def _changes(current: pb.ParseResult, previous: pb.ParseResult) -> pb.ParseResult | None:
    """What a deltas-mode response carries: `current`'s deltas and the fields
    that differ from `previous` (the result the last response was cut from);
    None when nothing changed."""
    changes = pb.ParseResult(deltas=current.deltas)
    if current.HasField("usage") and current.usage != previous.usage:
        changes.usage.CopyFrom(current.usage)
    for name in _SCALARS:
        value = getattr(current, name)
        if value != getattr(previous, name):
            setattr(changes, name, value)
    return changes if changes.ListFields() else None


def _stream_parser(first: pb.ParseStreamRequest) -> StreamParser:
    """The parser the first stream message asks for."""
    return StreamParser(
        provider_name(first.provider), settings=parse_settings_from_proto(first.options)
    )
