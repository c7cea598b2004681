"""Translation between the clients' Python arguments and the proto messages.

What `FormatterClient` and `AsyncFormatterClient` send and how they read the
replies, with no gRPC in it: requests built from the same arguments (and
checked by the same `FormatSettings`/`ParseSettings`) as `format()`,
`parse()` and `StreamParser`, and replies turned back into their types.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

from . import _json
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ._generated.agentscope.message.v1.message_pb2 import Msg
from .errors import FormatError, ParseError
from .formatting import FormattedBody, message_from_input, provider_first
from .message._codec import blocks_to_list
from .options import FormatSettings, ParseSettings, format_settings_to_proto
from .providers import provider_enum
from .request import RequestParams, request_to_proto
from .results import ContentDelta, ParsedResponse

__all__ = ["StreamMode", "format_request", "result_from_proto"]

_provider = provider_enum


MsgLike = Msg | Mapping[str, Any]


def format_request(
    provider: str,
    msgs: Iterable[MsgLike],
    *,
    multi_agent: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | None = None,
    settings: FormatSettings | None = None,
    request: RequestParams | Mapping[str, Any] | None = None,
    **options: Any,
) -> pb.FormatRequest:
    """The `FormatRequest` for the same arguments as `format()`.

    The options and request parameters are checked as `format()` checks them
    (`FormatSettings`, `RequestParams`), so a bad one fails here, before any
    call, with the same error; where the provider takes each parameter is the
    server's to say.
    """
    provider, msgs = provider_first(provider, msgs, "format_request")
    if settings is None:
        settings = FormatSettings.from_kwargs(multi_agent, options)
    elif options or multi_agent:
        raise FormatError("settings", "give either settings= or the keyword options, not both")
    message = pb.FormatRequest(
        provider=_provider(provider),
        multi_agent=settings.multi_agent,
        options=format_settings_to_proto(settings),
    )
    for index, msg in enumerate(msgs):
        # Dicts are read as `format()` reads them (errors name `messages[i]`).
        message.messages.append(msg if isinstance(msg, Msg) else message_from_input(msg, index))
    if tools is not None:
        message.tools_json = _json.dumps([dict(t) for t in tools], "tools")
    if tool_choice:
        message.tool_choice = tool_choice
    params = RequestParams.of(request)
    if params is not None:
        message.request.CopyFrom(request_to_proto(params))
    return message


def body_from_proto(response: pb.FormatResponse) -> FormattedBody:
    """The `FormattedBody` a `FormatResponse` carries."""
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
        metadata=(
            _json.loads(result.msg.metadata_json, "msg.metadata_json")
            if result.msg.HasField("metadata_json")
            else None
        ),
    )


def parse_request(
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


def stream_head(provider: str, options: pb.ParseOptions, mode: StreamMode) -> pb.ParseStreamRequest:
    """What the first message of a ParseStream carries besides its input."""
    if mode not in _STREAM_MODES:
        raise ParseError("mode", f"expected 'cumulative' or 'deltas', got {mode!r}")
    return pb.ParseStreamRequest(
        provider=_provider(provider), options=options, stream_mode=_STREAM_MODES[mode]
    )


def chunk_request(chunk: Any, raw: bool) -> pb.ParseStreamRequest:
    if raw:
        # Raw body slices stay bytes: a slice may split a UTF-8 sequence.
        data = bytes(chunk) if isinstance(chunk, bytes | bytearray) else _payload(chunk).encode()
        return pb.ParseStreamRequest(raw_body=data)
    return pb.ParseStreamRequest(chunk_json=_payload(chunk, "chunk"))


def stream_requests(
    head: pb.ParseStreamRequest, chunks: Iterable[Any], raw: bool
) -> Iterator[pb.ParseStreamRequest]:
    first = True
    for chunk in chunks:
        request = chunk_request(chunk, raw)
        if first:
            request.MergeFrom(head)
            first = False
        yield request
    if first:
        # An empty stream still names its provider, so the server can answer.
        yield head


def parse_settings(settings: ParseSettings | None, options: Mapping[str, Any]) -> ParseSettings:
    """The `ParseSettings` of a call: `settings=`, or built from the keywords."""
    if settings is None:
        return ParseSettings(**options)
    if options:
        raise ParseError("settings", "give either settings= or the keyword options, not both")
    return settings
