"""Anthropic: requests as AgentScope's AnthropicChatFormatter/AnthropicMultiAgentFormatter +
AnthropicChatModel build them; responses as AnthropicChatModel parses them. Provider
fidelity's parse, and the blocks it keeps formatted back: `_anthropic_extras.py`."""

from __future__ import annotations

import base64
import copy
import posixpath
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from .._engine.body import without_first
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_ANTHROPIC
from ..errors import FormatError, ParseError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, copy_json
from ._context import FormatContext
from ._history import format_multi_agent, history_prompt, system_blocks, wrap_history
from ._media import sniff_image
from ._parse import (
    StreamedInputs,
    expect,
    raise_for_error_body,
    repair_tool_inputs,
    streamed_tool_use,
)
from ._provider import UNKNOWN_TO_AGENTSCOPE, nothing_to_send
from ._tools import validate_tool_choice
from ._turns import Handler, Turn, format_turns

__all__ = ["PROVIDER"]


# -- media ---------------------------------------------------------------------

# AgentScope's fixed extension map for local images; anything else is sniffed.
_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


def _format_image(block: dict[str, Any], ctx: FormatContext) -> dict[str, Any]:
    """An image block as Anthropic takes it: base64 as is, local files inlined, web URLs kept."""
    source = block["source"]
    if source["type"] == "base64":
        return dict(block)
    url = source["url"]
    path = url.removeprefix("file://")
    if ctx.exists(path) and ctx.is_file(path):
        data = ctx.read_file(path)
        media_type = _IMAGE_TYPES.get(posixpath.splitext(path)[1].lower()) or sniff_image(data)
        if media_type is not None:
            encoded = base64.b64encode(data).decode("ascii")
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": encoded},
            }
    if ctx.is_web_url(path):
        # Only the URL travels: AgentScope drops any extra keys of the block here.
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise FormatError(
        ctx.location, f'Invalid image URL: "{url}". It should be a local file or a web URL.'
    )


# -- chat formatter --------------------------------------------------------------


def _format_copy(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # `{**block}`: extra keys (signature, cache_control, anything) go to the API too.
    turn.parts.append(dict(block))


def _format_image_block(turn: Turn, index: int, block: dict[str, Any]) -> None:
    turn.parts.append(_format_image(block, turn.ctx))


def _format_tool_use(turn: Turn, index: int, block: dict[str, Any]) -> None:
    turn.parts.append(
        {
            "id": block.get("id"),
            "type": "tool_use",
            "name": block.get("name"),
            "input": block.get("input", {}),
        }
    )


def _format_tool_result(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Anthropic takes tool-result media natively, so this is not the shared
    # text-and-promotion handler: images are converted like message images,
    # every other item (audio and video too) goes verbatim.
    output = block.get("output")
    result: list[dict[str, Any]]
    if output is None:
        result = [{"type": "text", "text": ""}]
    elif isinstance(output, list):
        result = [
            _format_image(item, turn.ctx) if item.get("type") == "image" else item
            for item in output
        ]
    else:
        result = [{"type": "text", "text": str(output)}]
    # Goes out at once, before the message holding it.
    turn.out.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": block.get("id"), "content": result}],
        }
    )


_CHAT_BLOCKS: dict[str, Handler] = {
    "text": _format_copy,
    "thinking": _format_copy,
    "image": _format_image_block,
    "tool_use": _format_tool_use,
    "tool_result": _format_tool_result,
}


def _finish_chat(turn: Turn) -> None:
    # Claude takes a system prompt only first; a later system message (position
    # within this list, so within a tool sequence in multi-agent mode) becomes a user's.
    role = "user" if turn.msg.role == "system" and turn.position != 0 else turn.msg.role
    if turn.parts:
        turn.out.append({"role": role, "content": turn.parts})


def _format_chat(msgs: list[MsgView], ctx: FormatContext) -> list[dict[str, Any]]:
    """AnthropicChatFormatter._format: one API message per input message, tool results apart."""
    handlers = _CHAT_BLOCKS
    if ctx.settings.fidelity == "provider":
        from ._anthropic_extras import PROVIDER_BLOCKS  # (it builds on this module)

        handlers = PROVIDER_BLOCKS
    return format_turns(msgs, ctx, handlers, _finish_chat)


# -- multi-agent formatter -------------------------------------------------------


def _format_history(msgs: list[MsgView], ctx: FormatContext, first: bool) -> list[dict[str, Any]]:
    """AnthropicMultiAgentFormatter._format_agent_message: the group as one user message,
    `name: text` lines in `<history>` tags, images interleaved where they occur."""
    blocks: list[dict[str, Any]] = []
    lines: list[str] = []
    for msg in msgs:
        for index, block in enumerate(msg.get_content_blocks()):
            ctx.at(msg, index)
            if block["type"] == "text":
                lines.append(f"{msg.name}: {block['text']}")
            elif block["type"] == "image":
                if lines:
                    blocks.append({"text": "\n".join(lines), "type": "text"})
                    lines = []
                blocks.append(_format_image(block, ctx))
            # Every other kind is left out of the history without a warning.
    if lines:
        blocks.append({"text": "\n".join(lines), "type": "text"})
    if not blocks:
        return []
    # A leading/trailing image gets the tags as blocks of their own (AgentScope
    # tests the block's "text" value, so an image never takes them).
    wrap_history(blocks, history_prompt(ctx, first), ctx, part_type="text")
    return [{"role": "user", "content": blocks}]


def _format_multi_agent(msgs: list[MsgView], ctx: FormatContext) -> list[dict[str, Any]]:
    """AnthropicMultiAgentFormatter: a leading system message, then tool sequences
    formatted by the chat formatter and agent runs folded into history messages."""
    history_prompt(ctx)  # checked before any message is formatted
    return format_multi_agent(msgs, ctx, system_blocks, _format_chat, _format_history)


# -- request body ----------------------------------------------------------------

_TOOL_CHOICES = {"auto": "auto", "none": "none", "required": "any"}


def _format_tool(schema: Any, index: int) -> dict[str, Any]:
    """AnthropicChatModel._format_tools_json_schemas for one OpenAI-style schema."""
    if not isinstance(schema, Mapping) or "function" not in schema:
        raise FormatError(f"tools[{index}]", "expected an object with key 'function'")
    function = schema["function"]
    if not isinstance(function, Mapping) or "name" not in function:
        raise FormatError(f"tools[{index}].function", "expected an object with key 'name'")
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "input_schema": function.get("parameters", {}),
    }


def _format_tool_choice(choice: Any, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """ChatModelBase._validate_tool_choice, then AnthropicChatModel._format_tool_choice."""
    if choice == "any":
        # Deprecated alias; AgentScope's DeprecationWarning is not a logged warning.
        choice = "required"
    choice = validate_tool_choice(choice, tools)
    if choice in _TOOL_CHOICES:
        return {"type": _TOOL_CHOICES[choice]}
    return {"type": "tool", "name": choice}


# -- responses -------------------------------------------------------------------


def _present(raw: Any) -> bool:
    """AgentScope's `if <sdk object>:`: any JSON object (even `{}`) becomes a truthy model."""
    return raw is not None and (isinstance(raw, dict) or bool(raw))


def _tokens(usage: Mapping[str, Any], key: str, path: str, *, nullable: bool = False) -> Any:
    """A token count; `nullable` where AgentScope would carry a null along."""
    if key not in usage:
        raise ParseError(f"{path}.{key}", "missing")
    if usage[key] is None and nullable:
        return None
    return expect(usage[key], (int, float), f"{path}.{key}")


def _cache_tokens(usage: Mapping[str, Any], into: dict[str, Any], path: str) -> None:
    """Anthropic's cache counts, where reported (AgentScope keeps neither)."""
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        if usage.get(key) is not None:
            into[key] = _tokens(usage, key, path)


def _parse_usage(raw: Any, path: str) -> dict[str, Any] | None:
    if not _present(raw):
        return None
    usage = expect(raw, dict, path)
    result: dict[str, Any] = {
        "input_tokens": _tokens(usage, "input_tokens", path),
        "output_tokens": _tokens(usage, "output_tokens", path),
    }
    _cache_tokens(usage, result, path)
    return result


def _str_field(block: Mapping[str, Any], key: str, path: str) -> str:
    value: str = expect(block.get(key), str, f"{path}.{key}")
    return value


def _parse_thinking(block: dict[str, Any], path: str) -> dict[str, Any]:
    return {
        "type": "thinking",
        "thinking": _str_field(block, "thinking", path),
        "signature": _str_field(block, "signature", path),
    }


def _parse_text(block: dict[str, Any], path: str) -> dict[str, Any]:
    # Citations and other extras are dropped.
    return {"type": "text", "text": _str_field(block, "text", path)}


def _parse_tool_use(block: dict[str, Any], path: str) -> dict[str, Any]:
    if "input" not in block:
        raise ParseError(f"{path}.input", "missing")
    return {
        "type": "tool_use",
        "id": _str_field(block, "id", path),
        "name": _str_field(block, "name", path),
        "input": block["input"],
    }


# Other kinds (redacted_thinking, server_tool_use, web_search_tool_result, ...)
# are skipped, as AgentScope does.
_RESPONSE_BLOCKS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "thinking": _parse_thinking,
    "text": _parse_text,
    "tool_use": _parse_tool_use,
}


def _response_id(value: Any, path: str) -> str:
    # A missing or empty id makes AgentScope invent one: ours stays "".
    if not value:
        return ""
    text: str = expect(value, str, path)
    return text


class _Stream:
    """AnthropicChatModel._parse_anthropic_stream_completion_response, one event at a time."""

    def __init__(self, options: ParseSettings) -> None:
        self._options = options
        self._events = 0
        self._id: str | None = None
        # AgentScope hands the same usage object to every snapshot and updates it
        # in place on message_delta, so the last snapshot's usage keeps changing.
        self._usage: dict[str, Any] | None = None
        self._text = ""
        self._thinking = ""
        self._signature = ""
        self._calls: dict[int, dict[str, str]] = {}
        self._last_inputs = StreamedInputs()
        self._metadata: dict[str, Any] | None = None
        self._stop_reason = ""
        # The last snapshot as yielded (content, id, metadata), and the usage object it shares.
        self._last: tuple[list[dict[str, Any]], str, dict[str, Any] | None] | None = None
        self._last_usage: dict[str, Any] | None = None

    # Each handler returns whether the event changed the content (AgentScope's
    # content_changed/thinking_changed); only then is a snapshot due.

    def _message_start(self, event: dict[str, Any], path: str) -> bool:
        message = expect(event.get("message"), dict, f"{path}.message")
        if self._id is None:
            found = message.get("id")
            self._id = None if found is None else expect(found, str, f"{path}.message.id")
        raw = message.get("usage")
        if _present(raw):
            where = f"{path}.message.usage"
            usage = expect(raw, dict, where)
            # A new object: snapshots already yielded keep the previous one.
            self._usage = {
                "input_tokens": _tokens(usage, "input_tokens", where),
                # Read with a default of 0 by AgentScope.
                "output_tokens": (
                    _tokens(usage, "output_tokens", where, nullable=True)
                    if "output_tokens" in usage
                    else 0
                ),
            }
            _cache_tokens(usage, self._usage, where)
        return False

    def _content_block_start(self, event: dict[str, Any], path: str) -> bool:
        block = expect(event.get("content_block"), dict, f"{path}.content_block")
        if block.get("type") != "tool_use":
            # Text or thinking in a start event is ignored; only deltas count.
            return False
        index: int = expect(event.get("index"), int, f"{path}.index")
        self._calls[index] = {
            "id": _str_field(block, "id", f"{path}.content_block"),
            "name": _str_field(block, "name", f"{path}.content_block"),
            "input": "",
        }
        return True

    def _content_block_delta(self, event: dict[str, Any], path: str) -> bool:
        if "index" not in event:
            raise ParseError(f"{path}.index", "missing")
        delta = expect(event.get("delta"), dict, f"{path}.delta")
        kind = delta.get("type")
        handler = self._DELTAS.get(kind) if isinstance(kind, str) else None
        return handler(self, event["index"], delta, f"{path}.delta") if handler else False

    def _text_delta(self, index: Any, delta: dict[str, Any], path: str) -> bool:
        self._text += _str_field(delta, "text", path)
        return True

    def _thinking_delta(self, index: Any, delta: dict[str, Any], path: str) -> bool:
        self._thinking += _str_field(delta, "thinking", path)
        return True

    def _signature_delta(self, index: Any, delta: dict[str, Any], path: str) -> bool:
        # Replaces (not extends) the signature, and yields nothing by itself.
        self._signature = _str_field(delta, "signature", path)
        return False

    def _input_json_delta(self, index: Any, delta: dict[str, Any], path: str) -> bool:
        call = self._calls.get(index) if isinstance(index, int) else None
        if call is None:
            # Arguments for a block that never started as tool_use are dropped.
            return False
        if "partial_json" not in delta:
            raise ParseError(f"{path}.partial_json", "missing")
        piece = delta["partial_json"]
        call["input"] += expect(piece, str, f"{path}.partial_json") if piece else ""
        return True

    def _message_delta(self, event: dict[str, Any], path: str) -> bool:
        delta = event.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self._stop_reason = delta["stop_reason"]
        raw = event.get("usage")
        if self._usage is None or not _present(raw):
            return False
        usage = expect(raw, dict, f"{path}.usage")
        # Anthropic-compatible APIs (DashScope) report input tokens only here; a
        # smaller count never replaces the one from message_start.
        found = usage.get("input_tokens") or 0
        found = expect(found, (int, float), f"{path}.usage.input_tokens")
        if found > self._usage["input_tokens"]:
            self._usage["input_tokens"] = found
        self._usage["output_tokens"] = _tokens(
            usage, "output_tokens", f"{path}.usage", nullable=True
        )
        _cache_tokens(usage, self._usage, f"{path}.usage")
        return False

    _EVENTS: ClassVar[dict[str, Callable[[_Stream, dict[str, Any], str], bool]]] = {
        "message_start": _message_start,
        "content_block_start": _content_block_start,
        "content_block_delta": _content_block_delta,
        "message_delta": _message_delta,
    }
    _DELTAS: ClassVar[dict[str, Callable[[_Stream, Any, dict[str, Any], str], bool]]] = {
        "text_delta": _text_delta,
        "thinking_delta": _thinking_delta,
        "signature_delta": _signature_delta,
        "input_json_delta": _input_json_delta,
    }

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        path = f"chunk[{self._events}]"
        self._events += 1
        raise_for_error_body("anthropic", event)
        kind = event.get("type")
        # Other events (ping, content_block_stop, message_stop) change nothing.
        handler = self._EVENTS.get(kind) if isinstance(kind, str) else None
        if handler is None or not handler(self, event, path):
            return None
        # Nothing is yielded before message_start brought a usage.
        if self._usage is None:
            return None
        content = self._content()
        if not content:
            return None
        self._last = (copy_json(content), self._id or "", copy_json(self._metadata))
        self._last_usage = self._usage
        return ParsedResponse(
            content=content,
            usage=dict(self._usage),
            response_id=self._id or "",
            raw_finish_reason=self._stop_reason,
            structured_output=copy_json(self._metadata),
        )

    def _content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        if self._thinking:
            content.append(
                {"type": "thinking", "thinking": self._thinking, "signature": self._signature}
            )
        if self._text:
            content.append({"type": "text", "text": self._text})
        parse = self._options.stream_tool_parsing
        for call in self._calls.values():
            block = streamed_tool_use(
                call["id"], call["name"], call["input"], self._last_inputs, parse
            )
            if self._options.structured_output:
                self._metadata = block["input"]
            # The snapshot gets a copy: the parsed input is the next event's baseline.
            block["input"] = copy_json(block["input"])
            content.append(block)
        return content

    def finish(self) -> ParsedResponse:
        if self._last is None:
            # AgentScope yields nothing at all here.
            return ParsedResponse(
                content=[],
                usage=None if self._usage is None else dict(self._usage),
                response_id=self._id or "",
                raw_finish_reason=self._stop_reason,
            )
        last_content, last_id, last_metadata = self._last
        if not self._options.stream_tool_parsing and self._calls:
            # The extra final snapshot: the last content with every tool input
            # repaired from its raw text, and the usage as it is now.
            content = copy.deepcopy(last_content)
            repaired = repair_tool_inputs(content)
            metadata = copy.deepcopy(repaired) if self._options.structured_output else None
            return ParsedResponse(
                content=content,
                usage=None if self._usage is None else dict(self._usage),
                response_id=last_id,
                raw_finish_reason=self._stop_reason,
                structured_output=metadata,
            )
        # The last snapshot, with the usage updates it received after being yielded.
        return ParsedResponse(
            content=copy.deepcopy(last_content),
            usage=None if self._last_usage is None else dict(self._last_usage),
            response_id=last_id,
            raw_finish_reason=self._stop_reason,
            structured_output=copy.deepcopy(last_metadata),
        )


def response_result(
    response: dict[str, Any],
    content: list[dict[str, Any]],
    structured: Any,
    metadata: dict[str, Any] | None = None,
) -> ParsedResponse:
    """A complete response's result: its blocks, with AgentScope's usage, id
    and stop reason."""
    stop_reason = response.get("stop_reason")
    return ParsedResponse(
        content=content,
        usage=_parse_usage(response.get("usage"), "usage"),
        response_id=_response_id(response.get("id"), "id"),
        raw_finish_reason=stop_reason if isinstance(stop_reason, str) else "",
        structured_output=structured,
        metadata=metadata,
    )


# Where the Messages API takes each request parameter: `max_tokens` (which it
# requires) and `stop_sequences`. It has no `seed`, and its sampling
# parameters are deprecated: the SDK's request type no longer has
# `temperature` or `top_p`, and models since Opus 4.7 refuse them (an older
# model that still takes one gets it through `extra_body`).
REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_tokens",
    temperature=None,
    top_p=None,
    stop="stop_sequences",
    seed=None,
    stream="stream",
)


class _Anthropic:
    name = "anthropic"
    enum = PROVIDER_ANTHROPIC
    options = frozenset({"conversation_history_prompt"})
    formatted_blocks = frozenset({"text", "thinking", "tool_use", "tool_result", "image"})
    # Audio and video are warned about and skipped (though tool results carry them).
    dropped_blocks = frozenset({"audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE
    framing = "sse"
    request_fields = REQUEST_FIELDS
    # Document blocks: a PDF (base64 or URL), plain text.
    document_types = frozenset({"application/pdf", "text/plain"})

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[dict[str, Any]]:
        """AnthropicChatFormatter / AnthropicMultiAgentFormatter output."""
        return _format_multi_agent(msgs, ctx) if multi_agent else _format_chat(msgs, ctx)

    def build_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> dict[str, Any]:
        """AnthropicChatModel's kwargs: tools, tool_choice, system, messages."""
        body: dict[str, Any] = {}
        if tools:
            body["tools"] = [_format_tool(tool, index) for index, tool in enumerate(tools)]
        if tool_choice:
            body["tool_choice"] = _format_tool_choice(tool_choice, tools)
        if not messages:
            # AgentScope fails reading messages[0] (IndexError).
            raise FormatError("messages", nothing_to_send(self.name))
        if messages[0]["role"] == "system":
            # Anthropic takes the system prompt apart from the messages.
            body["system"] = messages[0]["content"]
            messages = without_first(messages)
        body["messages"] = messages
        return body

    def parse(self, response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
        """AnthropicChatModel._parse_anthropic_completion_response."""
        raise_for_error_body(self.name, response)
        if options.fidelity == "provider":
            from ._anthropic_extras import parse_kept

            return parse_kept(response, options)
        content: list[dict[str, Any]] = []
        metadata = None
        blocks = response.get("content")
        if blocks:
            for index, block in enumerate(expect(blocks, list, "content")):
                # AgentScope skips anything that is not a typed block.
                kind = block.get("type") if isinstance(block, dict) else None
                parser = _RESPONSE_BLOCKS.get(kind) if isinstance(kind, str) else None
                if parser is None:
                    continue
                content.append(parser(block, f"content[{index}]"))
                if block["type"] == "tool_use" and options.structured_output:
                    metadata = copy.deepcopy(content[-1]["input"])
        return response_result(response, content, metadata)

    def stream(self, options: ParseSettings) -> _Stream:
        """A fresh state for one event stream."""
        if options.fidelity == "provider":
            from ._anthropic_extras import KeptStream

            return KeptStream(options)
        return _Stream(options)


PROVIDER = _Anthropic()
