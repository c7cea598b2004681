"""`parse()` and `StreamParser`: provider responses and streams to messages.

Content, usage and id equal what AgentScope 1.0.21's model classes produce for
the same response; a stream yields AgentScope's cumulative snapshots at the
same points. Where AgentScope invents an id (a timestamp plus random digits),
`response_id` stays empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _core, _json
from ._generated.agentscope.message.v1.message_pb2 import ContentBlock
from ._think import ThinkSplitter, split_think_blocks
from .errors import ParseError
from .message import new_id, new_timestamp
from .message._codec import block_from_dict, unwrap
from .options import ParseSettings
from .providers import get_provider
from .providers._between import response_model
from .providers._provider import StreamState
from .results import ContentDelta, FinishReason, ParsedResponse, TokenUsage, copy_json

__all__ = [
    "ContentDelta",
    "FinishReason",
    "ParseSettings",
    "ParsedResponse",
    "StreamParser",
    "TokenUsage",
    "parse",
]


_DEFAULT_SETTINGS = ParseSettings()


def _response_json(response: Any, path: str = "response") -> dict[str, Any]:
    if isinstance(response, (str, bytes, bytearray)):
        try:
            response = _json.loads(bytes(response) if isinstance(response, bytearray) else response)
        except ValueError as exc:
            raise ParseError(path, str(exc).split(": ", 1)[-1]) from None
        if type(response) is dict:
            # Read here, so nobody else holds it: no copy needed.
            return response
    if not isinstance(response, Mapping):
        raise ParseError(path, f"expected a JSON object, got {type(response).__name__}")
    return dict(response)


def parse(
    provider: str,
    response: Mapping[str, Any] | str | bytes,
    *,
    split_think_tags: bool = False,
    structured_output: bool = False,
    audio_format: str | None = None,
    fidelity: str | None = None,
    settings: ParseSettings | None = None,
) -> ParsedResponse:
    """Parse one complete provider response (a dict, JSON text or bytes).

    `structured_output=True` when the request asked for structured output (it
    fills `ParsedResponse.structured_output`); `audio_format` is the audio format
    the request asked for (OpenAI), which types audio output. `settings`
    gives all of them at once (the gRPC servicer's form), instead of the
    keywords. `fidelity="agentscope"` is AgentScope 1.0.21's result (the
    default where AgentScope 1.0.21 has the provider: `default_fidelity`);
    `"provider"` also keeps what AgentScope drops: citations, server-side
    tool items and their results, encrypted or redacted reasoning,
    grounding, each text part in its own block.

    Raises:
        ProviderError: the response is the provider's error body.
        ParseError: the response is not valid JSON or has the wrong shape.
    """
    impl = get_provider(provider)
    defaults = (split_think_tags, structured_output, audio_format, fidelity)
    if settings is None and defaults == (False, False, None, None):
        # Settings are frozen: the default one is shared (its construction and
        # check were a tenth of a small response's parse).
        settings = _DEFAULT_SETTINGS
    elif settings is None:
        settings = ParseSettings(
            split_think_tags=split_think_tags,
            structured_output=structured_output,
            audio_format=audio_format,
            fidelity=fidelity,
        )
    variant = impl.variant(settings.fidelity, ParseError)
    body = _response_json(response)
    model = response_model(body) if variant.signs_model else None
    result = variant.signed(variant.parse(body, settings), model)
    result.msg_id = new_id()
    result.timestamp = new_timestamp()
    if settings.split_think_tags:
        result.content = split_think_blocks(result.content)
    return result


def _delta(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[ContentDelta]:
    made = _core.deltas(before, after, ContentDelta)  # the same, in C: every stream event
    if made is not None:
        return made
    deltas = []
    for index, block in enumerate(after):
        old = before[index] if index < len(before) else None
        if old == block:
            continue
        if old is None or old.get("type") != block.get("type"):
            deltas.append(ContentDelta(index, block))
            continue
        kind = block["type"]
        if kind in ("text", "thinking") and block[kind].startswith(old[kind]):
            deltas.append(ContentDelta(index, {**block, kind: block[kind][len(old[kind]) :]}))
        elif kind == "tool_use" and (block.get("raw_input") or "").startswith(
            old.get("raw_input") or ""
        ):
            # raw_input may be absent or None (DashScope names a call before
            # its arguments arrive): treat both as "".
            grown = dict(block)
            if block.get("raw_input") is not None:
                grown["raw_input"] = block["raw_input"][len(old.get("raw_input") or "") :]
            deltas.append(ContentDelta(index, grown))
        else:
            deltas.append(ContentDelta(index, block))
    return deltas


class StreamParser:
    """Parse a streamed provider response into cumulative snapshots.

    Feed it one event at a time (`feed`) or raw slices of the HTTP body
    (`feed_bytes`, SSE or NDJSON split anywhere); `finish` gives the final
    result. Every snapshot also lists what changed since the previous one.
    `fidelity` is as in `parse()`.
    """

    def __init__(
        self,
        provider: str,
        *,
        split_think_tags: bool = False,
        stream_tool_parsing: bool = True,
        structured_output: bool = False,
        audio_format: str | None = None,
        fidelity: str | None = None,
        settings: ParseSettings | None = None,
    ) -> None:
        if settings is None:
            settings = ParseSettings(
                split_think_tags=split_think_tags,
                stream_tool_parsing=stream_tool_parsing,
                structured_output=structured_output,
                audio_format=audio_format,
                fidelity=fidelity,
            )
        self._impl = get_provider(provider)
        self._variant = self._impl.variant(settings.fidelity, ParseError)
        self._state: StreamState = self._variant.stream(settings)
        self._framer = _Framer(self._impl.framing)
        self._last: list[dict[str, Any]] = []
        self._last_result: ParsedResponse | None = None
        self._think = ThinkSplitter() if settings.split_think_tags else None
        self._msg_id = new_id()
        self._timestamp = new_timestamp()
        self._events = 0
        # The model the stream names (its first event that does), where the
        # variant records it.
        self._model: str | None = None
        self._model_wanted = self._variant.signs_model

    @property
    def provider(self) -> str:
        """The provider this parser reads."""
        return self._impl.name

    def _finalise(self, result: ParsedResponse) -> ParsedResponse:
        result = self._variant.signed(result, self._model)
        if self._think is not None:
            result.content = self._think.split(result.content)
        result.msg_id = self._msg_id
        result.timestamp = self._timestamp
        result.deltas = _delta(self._last, result.content)
        self._last = copy_json(result.content)
        self._last_result = result
        return result

    def feed(self, chunk: Mapping[str, Any] | str | bytes) -> ParsedResponse | None:
        """Take one stream event's JSON; return the new snapshot if it changed anything."""
        event = _response_json(chunk, f"chunk[{self._events}]")
        self._events += 1
        if self._model_wanted and self._model is None:
            self._model = response_model(event)
        result = self._state.feed(event)
        return None if result is None else self._finalise(result)

    def feed_bytes(self, data: bytes) -> list[ParsedResponse]:
        """Take the next slice of the raw HTTP body; return the snapshots it completed."""
        results = []
        for event in self._framer.push(data):
            result = self.feed(event)
            if result is not None:
                results.append(result)
        return results

    def finish(self) -> ParsedResponse:
        """The final result, after the stream ended."""
        for event in self._framer.flush():
            self.feed(event)
        return self._finalise(self._state.finish())


class _Framer:
    """Splits a raw streamed HTTP body into event payloads (SSE or NDJSON)."""

    def __init__(self, framing: str) -> None:
        self._framing = framing
        self._buffer = b""
        self._data: list[bytes] = []

    def push(self, data: bytes) -> list[bytes]:
        self._buffer += data
        lines = self._buffer.split(b"\n")
        self._buffer = lines.pop()
        return [event for line in lines if (event := self._line(line.rstrip(b"\r"))) is not None]

    def flush(self) -> list[bytes]:
        events = []
        if self._buffer:
            line, self._buffer = self._buffer, b""
            event = self._line(line.rstrip(b"\r"))
            if event is not None:
                events.append(event)
        if self._framing == "sse" and self._data:
            events.append(b"\n".join(self._data))
            self._data = []
        return [e for e in events if e.strip() and e.strip() != b"[DONE]"]

    def _line(self, line: bytes) -> bytes | None:
        if self._framing == "ndjson":
            return line if line.strip() else None
        if not line:
            # A blank line ends an SSE event.
            if not self._data:
                return None
            payload = b"\n".join(self._data)
            self._data = []
            return None if payload.strip() == b"[DONE]" else payload
        if line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)
        # `event:`, `id:`, `retry:` and comments carry nothing the parsers need:
        # every provider repeats the event type inside the JSON.
        return None


def __getattr__(name: str) -> Any:
    # The earlier names (`ParseResult`, `BlockDelta`), deprecated.
    from . import results

    return getattr(results, name)


def content_blocks(result: ParsedResponse) -> list[ContentBlock]:
    """The result's content as `ContentBlock` messages."""
    return [block_from_dict(b, f"content[{i}]") for i, b in enumerate(result.content)]


def typed_blocks(result: ParsedResponse) -> list[Any]:
    """The result's content as typed block messages."""
    return [unwrap(b) for b in content_blocks(result)]
