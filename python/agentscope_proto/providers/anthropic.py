"""Anthropic Messages.

`AnthropicParity` is AgentScope 1.0.21's: requests as its
AnthropicChatFormatter/AnthropicMultiAgentFormatter + AnthropicChatModel build
them, responses as AnthropicChatModel parses them. `Anthropic` is provider
fidelity, the parity variant with what differs overridden.

Provider fidelity, parse (`parse()` and `StreamParser`): every block of a
response is kept, in the API's order (AgentScope keeps text, thinking and
tool_use, and a stream glues all its text into one block):

- text keeps its `citations` (streamed: `citations_delta`), the provider's
  objects verbatim;
- thinking keeps its signature even when the thinking is empty;
  `redacted_thinking` becomes a thinking block with `redacted_data`;
- `server_tool_use` and `mcp_tool_use` become `server_tool_use` blocks, every
  `*_tool_result` (web search/fetch, code execution, bash, text editor, tool
  search, MCP, advisor...) a `server_tool_result` block, each with the API's
  block verbatim in `raw` (streamed: the start block with its input filled in);
- other kinds the schema does not model (`compaction`, `fallback`, ...) stay
  verbatim (opaque blocks).

The response's `container` (`id`, `expires_at`: where code execution runs; the
next request names it to reuse its files) goes into the parsed message's
metadata as `{"container": {...}}` (`result.metadata`, `result.msg.metadata_json`),
and a refusal's `stop_details` (`category`, `explanation`,
`recommended_model`) as `{"stop_details": {...}}`, complete or streamed (in
`message_delta`): AgentScope makes no use of those keys (its message metadata
is the structured output, which stays in `structured_output` as before);
neither goes back but the container (no request field takes stop details).
A streamed message that starts with content (`message_start` holding blocks:
a call made by code execution, resumed) keeps those blocks as if each had
started. A client tool call's `caller` goes back only when it is Claude's
(`direct`, code execution); another API's (the Responses API's `program`)
is dropped with a warning. Client tool calls keep
their `caller` (programmatic tool calling) both ways.

Provider fidelity, format: what the parse kept goes back as Claude expects it.
Server-tool blocks from Anthropic go back as their raw blocks, in place, in
the assistant message; those from another provider, and grounding records,
are dropped with a `FormatWarning`. A PDF or plain text (`data`) is a
`document` block, in a message or a tool result. The body pass then sends
redacted thinking (a thinking block with `redacted_data`) as
`redacted_thinking`, signatures unchanged, text `citations` as the API
returned them (less the keys its request types do not define, such as a
response's `file_id`; another provider's citations are dropped), and turns
unsigned thinking (another provider's) into text; the container of the
latest response is named for the next request to run in (`carry_over`).
"""

from __future__ import annotations

import base64
import copy
import json
import posixpath
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

from .._core import ANTHROPIC
from .._engine.body import without_first
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import (
    PROVIDER_ANTHROPIC,
    FormatWarning,
)
from ..errors import FormatError, ParseError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, copy_json
from ._adapt import Json, Notes, empty, note_text, prune, without_text_marks
from ._between import CallIds
from ._context import FormatContext
from ._documents import document
from ._history import format_multi_agent, history_prompt, system_blocks, wrap_history
from ._media import sniff_image
from ._parse import (
    StreamedInputs,
    expect,
    raise_for_error_body,
    repair_tool_inputs,
    streamed_tool_use,
)
from ._provider import (
    UNKNOWN_TO_AGENTSCOPE,
    Provider,
    ProviderFidelity,
    Variant,
    nothing_to_send,
)
from ._tools import validate_tool_choice
from ._turns import Handler, Turn, TurnTable, format_turns

__all__ = ["PROVIDER", "Anthropic", "AnthropicParity"]

Block = dict[str, Any]


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


_CHAT = TurnTable(_CHAT_BLOCKS, _finish_chat)


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


def _response_result(
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
_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_tokens",
    temperature=None,
    top_p=None,
    stop="stop_sequences",
    seed=None,
    stream="stream",
)


# -- prompt caching (`prompt_cache="auto"`) ------------------------------------------

# The documented limit of cache breakpoints in one request.
_MAX_BREAKPOINTS = 4
# Block kinds that take `cache_control` (thinking does not).
_CACHEABLE = frozenset({"text", "image", "document", "tool_use", "tool_result", "search_result"})
_EPHEMERAL = {"type": "ephemeral"}


def _markers(value: Any) -> int:
    """How many cache markers a part of the body holds."""
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(_markers(item) for item in value.values())
    if isinstance(value, list):
        return sum(_markers(item) for item in value)
    return 0


def _marked(content: Any) -> list[Any] | None:
    """`content` (a string or a block list) with a breakpoint on its last
    block that takes one (not thinking, not empty text); None where none
    does or that block has one already."""
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": _EPHEMERAL}] if content else None
    if not isinstance(content, list):
        return None
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in _CACHEABLE and (kind != "text" or block.get("text")):
            if "cache_control" in block:
                return None
            return [*content[:index], {**block, "cache_control": _EPHEMERAL}, *content[index + 1 :]]
    return None


def _last_turn(body: Block) -> list[Any] | None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    marked = _marked(messages[-1].get("content"))
    return None if marked is None else [*messages[:-1], {**messages[-1], "content": marked}]


def _last_tool(body: Block) -> list[Any] | None:
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools or not isinstance(tools[-1], dict):
        return None
    if "cache_control" in tools[-1]:
        return None
    return [*tools[:-1], {**tools[-1], "cache_control": _EPHEMERAL}]


# Where Claude's docs put breakpoints, by the body key they change, in the
# order they are placed while there is room: the last turn caches the whole
# prefix; the system prompt and tools stay cached when the messages change.
_BREAKPOINTS: tuple[tuple[str, Callable[[Block], list[Any] | None]], ...] = (
    ("messages", _last_turn),
    ("system", lambda body: _marked(body.get("system"))),
    ("tools", _last_tool),
)


def cache_breakpoints(body: Block, warnings: list[Any]) -> Block:
    """The body with Claude's recommended breakpoints beside the messages'
    own, as a new body (the caller's blocks are never changed); a warning
    for each that finds no room under the limit."""
    body = dict(body)
    room = _MAX_BREAKPOINTS - _markers(body)
    for key, place in _BREAKPOINTS:
        marked = place(body)
        if marked is None:
            continue
        if room <= 0:
            text = f"no cache breakpoint placed: Claude takes at most {_MAX_BREAKPOINTS}"
            warnings.append(FormatWarning(path=key, block_type="cache_control", message=text))
            continue
        body[key] = marked
        room -= 1
    return body


class AnthropicParity(Variant):
    """AgentScope 1.0.21's AnthropicChatFormatter / AnthropicMultiAgentFormatter
    and AnthropicChatModel."""

    turns = _CHAT

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        """AnthropicChatFormatter / AnthropicMultiAgentFormatter output."""
        if multi_agent:
            # A leading system message, then tool sequences formatted by the
            # chat formatter and agent runs folded into history messages.
            history_prompt(ctx)  # checked before any message is formatted
            return format_multi_agent(msgs, ctx, system_blocks, self.format_chat, _format_history)
        return self.format_chat(msgs, ctx)

    def format_chat(self, msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
        """AnthropicChatFormatter._format: one API message per input message,
        tool results apart."""
        return format_turns(msgs, ctx, self.turns)

    def build_body(
        self,
        messages: list[Block],
        tools: list[Block] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> Block:
        """AnthropicChatModel's kwargs: tools, tool_choice, system, messages."""
        body: Block = {}
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

    def with_breakpoints(self, body: Block, ctx: FormatContext) -> Block:
        return cache_breakpoints(body, ctx.warnings)

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        """AnthropicChatModel._parse_anthropic_completion_response."""
        raise_for_error_body(self.name, response)
        content: list[Block] = []
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
        return _response_result(response, content, metadata)

    def stream(self, options: ParseSettings) -> _Stream:
        """A fresh state for one event stream."""
        return _Stream(options)


# -- provider fidelity: parse --------------------------------------------------------

# Anthropic's block types of a tool it runs itself; their results are `*_tool_result`.
_SERVER_USES = frozenset({"server_tool_use", "mcp_tool_use"})
# Block kinds a verbatim block must not take: the codec would read it as ours.
_OURS = frozenset(
    {"image", "audio", "video", "tool_result", "server_tool_result", "grounding", "opaque"}
)
# Anthropic block kinds with no block of ours that go back as they came (beta
# `compaction` and `fallback`; `container_upload`).
_VERBATIM_BACK = frozenset({"compaction", "fallback", "container_upload"})


# What a message carries beside its content, kept in its metadata: where code
# execution ran, and why the model refused (`stop_details`: category,
# explanation, a model to try instead).
_MESSAGE_METADATA = ("container", "stop_details")


def _message_metadata(
    message: Any, path: str, metadata: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """`metadata` updated with the message's (or a `message_delta`'s) `container`
    and `stop_details`; None when there are none."""
    if not isinstance(message, dict):
        return metadata
    for key in _MESSAGE_METADATA:
        value = message.get(key)
        if value is not None:
            prefix = f"{path}." if path else ""
            metadata = {**(metadata or {}), key: copy_json(expect(value, dict, prefix + key))}
    return metadata


def _kept_text(block: Block, path: str) -> Block:
    out: Block = {"type": "text", "text": _str_field(block, "text", path)}
    citations = block.get("citations")
    if citations:
        where = f"{path}.citations"
        for number, citation in enumerate(expect(citations, list, where)):
            expect(citation, dict, f"{where}[{number}]")
        out["citations"] = copy_json(citations)
    return out


def _redacted(block: Block, path: str) -> Block:
    return {"type": "thinking", "thinking": "", "redacted_data": _str_field(block, "data", path)}


def _kept_tool_use(block: Block, path: str) -> Block:
    if "input" not in block:
        raise ParseError(f"{path}.input", "missing")
    call = {
        "type": "tool_use",
        "id": _str_field(block, "id", path),
        "name": _str_field(block, "name", path),
        "input": copy_json(block["input"]),
    }
    return _with_caller(call, block)


def _with_caller(call: Block, block: Block) -> Block:
    # Who made the call (programmatic tool calling: code execution); it goes back with it.
    if isinstance(block.get("caller"), dict):
        call["caller"] = copy_json(block["caller"])
    return call


def _server_use(block: Block, path: str) -> Block:
    tool_input = block.get("input", {})
    return {
        "type": "server_tool_use",
        "id": _str_field(block, "id", path),
        "name": _str_field(block, "name", path),
        "input": copy_json(expect(tool_input, dict, f"{path}.input")),
        "provider_type": block["type"],
        "raw": copy_json(block),
    }


def _server_result(block: Block, path: str) -> Block:
    output = block.get("content")
    # MCP reports failure in `is_error`; the other tools in an `*_error` content.
    failed = isinstance(output, dict) and str(output.get("type", "")).endswith("_error")
    return {
        "type": "server_tool_result",
        "tool_use_id": _str_field(block, "tool_use_id", path),
        "provider_type": block["type"],
        "output": copy_json(output),
        "is_error": block.get("is_error") is True or failed,
        "raw": copy_json(block),
    }


# As AgentScope's complete parse, thinking keeps its signature even when empty.
_KEPT_BLOCKS: dict[str, Callable[[Block, str], Block]] = {
    "text": _kept_text,
    "thinking": _parse_thinking,
    "redacted_thinking": _redacted,
    "tool_use": _kept_tool_use,
    **dict.fromkeys(_SERVER_USES, _server_use),
}


def _kept_block(block: Block, kind: str, path: str) -> Block | None:
    """One response block in provider fidelity, None for a kind it must skip."""
    parse = _KEPT_BLOCKS.get(kind)
    if parse is not None:
        return parse(block, path)
    if kind.endswith("_tool_result"):
        return _server_result(block, path)
    return None if kind in _OURS else copy_json(block)


def _kept_content(blocks: Any, structured_output: bool) -> tuple[list[Block], Any]:
    """A complete response's `content` in provider fidelity, and the structured
    output (the last tool call's input, as AgentScope takes it)."""
    content: list[Block] = []
    metadata = None
    if not blocks:
        return content, metadata
    for index, block in enumerate(expect(blocks, list, "content")):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            continue
        kept = _kept_block(block, kind, f"content[{index}]")
        if kept is None:
            continue
        content.append(kept)
        if kind == "tool_use" and structured_output:
            metadata = copy_json(kept["input"])
    return content, metadata


def _parse_kept(response: Block, options: ParseSettings) -> ParsedResponse:
    """A complete response in provider fidelity (AgentScope's usage, id and stop reason)."""
    content, structured = _kept_content(response.get("content"), options.structured_output)
    return _response_result(response, content, structured, _message_metadata(response, ""))


# -- provider fidelity: the stream --------------------------------------------------


class _Entry:
    """One streamed block: its start block grown by the deltas."""

    __slots__ = ("arguments", "block", "kept")

    def __init__(self, block: Block) -> None:
        self.block = block
        # The streamed input JSON of a tool call (None: not a tool call).
        kind = block.get("type")
        self.arguments: str | None = "" if kind == "tool_use" or kind in _SERVER_USES else None
        # The block as kept, until the next delta changes it.
        self.kept: Block | None = None


_IMPLICIT = {
    "text_delta": {"type": "text", "text": ""},
    "citations_delta": {"type": "text", "text": ""},
    "thinking_delta": {"type": "thinking", "thinking": "", "signature": ""},
    "signature_delta": {"type": "thinking", "thinking": "", "signature": ""},
}


class _StreamBlocks:
    """A stream's content blocks by index, each kept apart (provider fidelity)."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        # Where the current message's indices start: a stream holding several
        # messages (a message_start after content) keeps each one's blocks.
        self._offset = 0
        self.metadata: dict[str, Any] | None = None

    def begin(self) -> None:
        """A `message_start`: the blocks that follow come after those seen."""
        self._offset = max(self._entries) + 1 if self._entries else 0

    def message(self, message: Any, path: str) -> None:
        """Take a `message_start` message or `message_delta` delta (its container
        and stop details)."""
        self.metadata = _message_metadata(message, path, self.metadata)

    def start(self, event: Block, path: str) -> bool:
        """A `content_block_start`; whether it changed the content."""
        block = copy_json(expect(event.get("content_block"), dict, f"{path}.content_block"))
        index: int = self._offset + expect(event.get("index"), int, f"{path}.index")
        kind = block.get("type")
        where = f"{path}.content_block"
        if kind == "tool_use":
            _str_field(block, "id", where)
            _str_field(block, "name", where)
        elif kind == "thinking":
            block.setdefault("signature", "")
        if kind in ("text", "thinking"):
            block.setdefault(kind, "")
            _str_field(block, kind, where)
        # A start at an index already seen starts that block afresh.
        self._entries[index] = _Entry(block)
        self._entries = dict(sorted(self._entries.items()))
        if kind in ("text", "thinking"):
            # Only deltas count, as in AgentScope, unless it starts with content.
            return bool(block.get(kind))
        return isinstance(kind, str)

    def delta(self, event: Block, path: str) -> bool:
        """A `content_block_delta`; whether it changed the content."""
        delta = expect(event.get("delta"), dict, f"{path}.delta")
        kind = delta.get("type")
        index = event.get("index")
        index = self._offset + index if isinstance(index, int) else None
        entry = None if index is None else self._entries.get(index)
        if entry is None and isinstance(kind, str) and kind in _IMPLICIT:
            # A delta without a start (lenient servers): a block of its kind.
            index = self._offset + expect(event.get("index"), int, f"{path}.index")
            entry = self._entries[index] = _Entry(copy_json(_IMPLICIT[kind]))
            self._entries = dict(sorted(self._entries.items()))
        if entry is None:
            return False
        applied = self._apply(entry.block, entry, kind, delta, f"{path}.delta")
        if applied:
            entry.kept = None
        return applied

    @staticmethod
    def _apply(block: Block, entry: _Entry, kind: Any, delta: Block, path: str) -> bool:
        if kind == "text_delta" and block.get("type") == "text":
            block["text"] += _str_field(delta, "text", path)
        elif kind == "citations_delta" and block.get("type") == "text":
            citation = expect(delta.get("citation"), dict, f"{path}.citation")
            block["citations"] = [*(block.get("citations") or []), citation]
        elif kind == "thinking_delta" and block.get("type") == "thinking":
            block["thinking"] += _str_field(delta, "thinking", path)
        elif kind == "signature_delta" and block.get("type") == "thinking":
            # Replaces the signature, as AgentScope does.
            block["signature"] = _str_field(delta, "signature", path)
        elif kind == "input_json_delta" and entry.arguments is not None:
            if "partial_json" not in delta:
                raise ParseError(f"{path}.partial_json", "missing")
            piece = delta["partial_json"]
            entry.arguments += expect(piece, str, f"{path}.partial_json") if piece else ""
        elif kind == "compaction_delta" and block.get("type") == "compaction":
            piece = delta.get("content")
            block["content"] = str(block.get("content") or "") + (
                expect(piece, str, f"{path}.content") if piece else ""
            )
        else:
            return False
        return True

    def content(self, last_inputs: StreamedInputs, parse: bool) -> tuple[list[Block], Any]:
        """The blocks so far (fresh copies), and the last tool call's input."""
        content: list[Block] = []
        last_input = None
        for index, entry in self._entries.items():
            block = entry.block
            if block.get("type") == "tool_use":
                call = streamed_tool_use(
                    block["id"], block["name"], entry.arguments, last_inputs, parse
                )
                last_input = call["input"]
                call["input"] = copy_json(call["input"])
                content.append(_with_caller(call, block))
                continue
            if entry.kept is None:
                kind = block.get("type")
                if entry.arguments:
                    block = {**block, "input": _complete_input(entry.arguments, block)}
                path = f"content[{index}]"
                entry.kept = _kept_block(block, kind, path) if isinstance(kind, str) else None
            if entry.kept is not None:
                content.append(copy_json(entry.kept))
        return content, last_input


_Handler = Callable[[_Stream, Block, str], bool]


class _KeptStream(_Stream):
    """AgentScope's stream state (usage, id, stop reason, snapshot points), its
    content every block apart, as `_StreamBlocks` keeps them."""

    def __init__(self, options: ParseSettings) -> None:
        super().__init__(options)
        self._blocks = _StreamBlocks()

    def _kept_message_start(self, event: Block, path: str) -> bool:
        changed = self._message_start(event, path)
        self._blocks.begin()
        message = event["message"]
        self._blocks.message(message, f"{path}.message")
        # A message may start with content already (a call made by code
        # execution, resumed): its blocks, as if each had started.
        where = f"{path}.message.content"
        blocks = expect(message.get("content") or [], list, where)
        for index, block in enumerate(blocks):
            start = {"index": index, "content_block": expect(block, dict, f"{where}[{index}]")}
            changed = self._kept_block_start(start, f"{where}[{index}]") or changed
        return changed

    def _kept_block_start(self, event: Block, path: str) -> bool:
        changed = self._blocks.start(event, path)
        if event["content_block"].get("type") == "tool_use":
            # Known to the base state too: its final snapshot repairs tool inputs.
            self._content_block_start(event, path)
        return changed

    def _kept_block_delta(self, event: Block, path: str) -> bool:
        if "index" not in event:
            raise ParseError(f"{path}.index", "missing")
        return self._blocks.delta(event, path)

    def _kept_message_delta(self, event: Block, path: str) -> bool:
        self._blocks.message(event.get("delta"), f"{path}.delta")
        return self._message_delta(event, path)

    _EVENTS: ClassVar[dict[str, _Handler]] = {
        "message_start": cast(_Handler, _kept_message_start),
        "content_block_start": cast(_Handler, _kept_block_start),
        "content_block_delta": cast(_Handler, _kept_block_delta),
        "message_delta": cast(_Handler, _kept_message_delta),
    }

    def _content(self) -> list[Block]:
        parse = self._options.stream_tool_parsing
        content, last_input = self._blocks.content(self._last_inputs, parse)
        if self._options.structured_output and last_input is not None:
            self._metadata = last_input
        return content

    def feed(self, event: Block) -> ParsedResponse | None:
        result = super().feed(event)
        if result is not None:
            result.metadata = copy_json(self._blocks.metadata)
        return result

    def finish(self) -> ParsedResponse:
        result = super().finish()
        result.metadata = copy_json(self._blocks.metadata)
        return result


def _complete_input(arguments: str, block: Block) -> Any:
    """A server tool's streamed input once it is complete JSON; the start
    block's input until then (a partial input is never repaired)."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return block.get("input", {})
    return parsed if isinstance(parsed, dict) else block.get("input", {})


# -- provider fidelity: formatting back ---------------------------------------------


def _from_anthropic(block: Block) -> bool:
    """Whether a server-tool block came from Anthropic (its raw block is one)."""
    raw, kind = block.get("raw"), block.get("provider_type")
    if not isinstance(raw, dict) or not isinstance(kind, str) or raw.get("type") != kind:
        return False
    return (
        kind in _SERVER_USES
        if block["type"] == "server_tool_use"
        else kind.endswith("_tool_result")
    )


def _format_server(turn: Turn, index: int, block: Block) -> None:
    if _from_anthropic(block):
        # Back in place, as the API returned it: the next turn continues from it.
        turn.parts.append(copy_json(block["raw"]))
        return
    kind = block.get("provider_type") or block["type"]
    turn.ctx.warn(
        turn.msg,
        index,
        block["type"],
        f"dropped a {kind} block: Claude cannot take another provider's",
    )


def _format_tool_use_with_caller(turn: Turn, index: int, block: Block) -> None:
    _format_tool_use(turn, index, block)
    caller = block.get("caller")
    kind = caller.get("type") if isinstance(caller, dict) else None
    if kind == "direct" or (isinstance(kind, str) and kind.startswith("code_execution")):
        _with_caller(turn.parts[-1], block)
    elif caller is not None:
        # Another API's (the Responses API's `program`): Claude's code execution made no such call.
        turn.ctx.warn(
            turn.msg, index, "tool_use", f"dropped the call's caller {kind!r}: Claude's are its own"
        )


def _format_grounding(turn: Turn, index: int, block: Block) -> None:
    turn.ctx.warn(turn.msg, index, "grounding", "dropped a grounding record: Claude takes none")


def _format_verbatim(turn: Turn, index: int, block: Block) -> None:
    turn.parts.append(copy_json(block))


def _document(block: Block, ctx: FormatContext) -> Block:
    # Claude's document sources: a PDF as base64 or a URL, plain text as text.
    pdf = block["source"].get("media_type") == "application/pdf"
    found = document(block, ctx, keep_url=pdf)
    source: Block
    if found.url is not None:
        source = {"type": "url", "url": found.url}
    elif pdf:
        source = {"type": "base64", "media_type": found.media_type, "data": found.data}
    else:
        source = {"type": "text", "media_type": "text/plain", "data": found.text(ctx)}
    part: Block = {"type": "document", "source": source}
    if found.name:
        part["title"] = found.name
    return part


def _format_document(turn: Turn, index: int, block: Block) -> None:
    turn.parts.append(_document(block, turn.ctx))


def _format_result_documents(turn: Turn, index: int, block: Block) -> None:
    """A tool result whose output holds documents: Claude takes them there."""
    output = block.get("output")
    if isinstance(output, list) and any(item.get("type") == "data" for item in output):
        output = [
            _document(item, turn.ctx) if item.get("type") == "data" else item for item in output
        ]
        block = {**block, "output": output}
    _format_tool_result(turn, index, block)


# The chat formatter's block handlers in provider fidelity.
_NATIVE_BLOCKS: dict[str, Handler] = {
    **_CHAT_BLOCKS,
    "data": _format_document,
    "tool_result": _format_result_documents,
    "tool_use": _format_tool_use_with_caller,
    "server_tool_use": _format_server,
    "server_tool_result": _format_server,
    "grounding": _format_grounding,
    **dict.fromkeys(_VERBATIM_BACK, _format_verbatim),
}


# -- provider fidelity: the body pass -----------------------------------------------

_ANTHROPIC_BLOCKS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "cache_control", "title", "context", "citations"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control", "caller"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
}
# The keys each citation type takes in a request (`TextCitationParam`).
_CITATIONS = {
    "char_location": frozenset(
        {"type", "cited_text", "document_index", "document_title"}
        | {"start_char_index", "end_char_index"}
    ),
    "page_location": frozenset(
        {"type", "cited_text", "document_index", "document_title"}
        | {"start_page_number", "end_page_number"}
    ),
    "content_block_location": frozenset(
        {"type", "cited_text", "document_index", "document_title"}
        | {"start_block_index", "end_block_index"}
    ),
    "web_search_result_location": frozenset(
        {"type", "cited_text", "encrypted_index", "title", "url"}
    ),
    "search_result_location": frozenset(
        {"type", "cited_text", "search_result_index", "source", "title"}
        | {"start_block_index", "end_block_index"}
    ),
}
_TOOL_RESULT_KINDS = frozenset({"text", "image", "document", "search_result"})
_ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _image_media_type(source: Any) -> str | None:
    """The media type of an image source: given (base64), or an SVG URL's."""
    if not isinstance(source, dict):
        return None
    if source.get("media_type") is not None:
        return str(source["media_type"])
    url = str(source.get("url") or "").lower()
    if url.startswith("data:image/svg+xml") or url.split("?")[0].split("#")[0].endswith(".svg"):
        return "image/svg+xml"
    return None


def _anthropic_block(block: Json, at: str, note: Notes, in_tool_result: bool) -> Json | None:
    kind = str(block.get("type"))
    if in_tool_result and kind not in _TOOL_RESULT_KINDS:
        note(at, kind, "replaced by a text note: a tool result takes text, images and documents")
        return {"type": "text", "text": note_text(kind, "a tool result")}
    if kind == "thinking" and block.get("redacted_data"):
        # Reasoning Claude encrypted: back as it came, whatever else the block holds.
        return {"type": "redacted_thinking", "data": block["redacted_data"]}
    if empty(block):
        note(at, kind, f"dropped an empty {kind} block")
        return None
    if kind == "text":
        block = without_text_marks(block)
    if kind == "text" and isinstance(block.get("citations"), list):
        block = _cited(block, at, note)
    if kind == "thinking" and not block.get("signature"):
        # Thinking from another provider: Claude refuses it without a signature.
        note(at, kind, "unsigned thinking turned into text")
        return {"type": "text", "text": block.get("thinking", "")}
    if kind == "image":
        media = _image_media_type(block.get("source"))
        if media is not None and media not in _ANTHROPIC_IMAGE_TYPES:
            note(at, kind, f"replaced by a text note: Claude takes no {media} images")
            return {"type": "text", "text": note_text(str(media), "Claude")}
    if kind == "tool_result" and isinstance(block.get("content"), list):
        inner = [
            _anthropic_block(item, f"{at}.content[{number}]", note, True)
            if isinstance(item, dict)
            else item
            for number, item in enumerate(block["content"])
        ]
        block = {**block, "content": [item for item in inner if item is not None]}
    allowed = _ANTHROPIC_BLOCKS.get(kind)
    return block if allowed is None else prune(block, allowed, at, kind, note)


def _cited(block: Json, at: str, note: Notes) -> Json:
    """A text block's citations as Claude takes them: its own kinds, less the
    keys a request does not define; another provider's (OpenAI `url_citation`...)
    dropped. No citations left: no `citations` key."""
    kept = []
    for number, item in enumerate(block["citations"]):
        where = f"{at}.citations[{number}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(item, dict) or kind not in _CITATIONS:
            note(where, "citation", f"dropped a {kind} citation: Claude takes no such kind")
            continue
        kept.append(prune(item, _CITATIONS[kind], where, "citation", note))
    if kept:
        return {**block, "citations": kept}
    return {key: value for key, value in block.items() if key != "citations"}


def _anthropic_answers(messages: list[Any], index: int) -> set[Any]:
    """The tool use ids the user turns right after `messages[index]` answer
    (consecutive user turns: they are merged into one below)."""
    ids: set[Any] = set()
    for later in messages[index + 1 :]:
        if not isinstance(later, dict) or later.get("role") != "user":
            break
        content = later.get("content")
        if isinstance(content, list):
            ids.update(b.get("tool_use_id") for b in content if isinstance(b, dict))
    return ids


def _anthropic_content(messages: list[Any], index: int, note: Notes, start: int) -> list[Any]:
    message = messages[index]
    answered = _anthropic_answers(messages, index) if message.get("role") == "assistant" else None
    blocks = []
    for number, block in enumerate(message["content"]):
        at = f"messages[{start + index}].content[{number}]"
        if not isinstance(block, dict):
            blocks.append(block)
            continue
        unanswered = answered is not None and block.get("id") not in answered
        if block.get("type") == "tool_use" and unanswered:
            note(at, "tool_use", "dropped a tool use no tool result in the next turn answers")
            continue
        adapted = _anthropic_block(block, at, note, False)
        if adapted is not None:
            blocks.append(adapted)
    return blocks


def _pass_messages(messages: list[Any], note: Notes, start: int = 0) -> list[Any]:
    """The pass over a message list, the body's `messages[start]` on (its
    paths): each block as a request takes it, tool uses answered in the next
    turn, parallel results in one user turn; the turns kept. A message's
    pass reads the user turns right after it and the turn kept before it,
    so the list may be passed in runs cut before an assistant turn the
    pass keeps (`Anthropic.cuts_before`)."""
    turns: list[Json] = []
    for index, message in enumerate(messages):
        path = f"messages[{start + index}]"
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message = {**message, "content": _anthropic_content(messages, index, note, start)}
            if not message["content"]:
                note(path, str(message.get("role")), "dropped a message left empty")
                continue
        if turns and _results_only(turns[-1]) and _results_only(message):
            # Parallel tool results answer one assistant turn: one user turn.
            note(path, "tool_result", "merged into the previous user turn")
            turns[-1] = {**turns[-1], "content": turns[-1]["content"] + message["content"]}
            continue
        turns.append(message)
    return turns


def _results_only(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _carry_container(body: Json, metadata: list[Any]) -> None:
    """The container the latest response ran code in (`{"container": {"id": ...}}`
    in its message's metadata, as the provider-fidelity parse keeps it), for
    the next request to run in the same one: Anthropic's `container`. Whether
    it has expired is the API's to say: the body is a function of the
    messages, not of the clock."""
    if "container" in body:
        return
    for item in reversed(metadata):
        container = item.get("container") if isinstance(item, dict) else None
        if isinstance(container, dict) and isinstance(container.get("id"), str):
            body["container"] = container["id"]
            return


class Anthropic(ProviderFidelity, AnthropicParity):
    """The Messages API in provider fidelity (see the module's docstring)."""

    turns = TurnTable(_NATIVE_BLOCKS, _finish_chat)
    conversation = "messages"
    # The API refuses others ("tool_use.id: String should match pattern").
    call_ids = CallIds("Claude takes ids matching ^[a-zA-Z0-9_-]+$", pattern=r"[a-zA-Z0-9_-]+")
    # Prompt caching: `cache_control` (with its `ttl`) on blocks, kept.
    cache_markers = True

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        raise_for_error_body(self.name, response)
        return _parse_kept(response, options)

    def stream(self, options: ParseSettings) -> _KeptStream:
        return _KeptStream(options)

    segmented = True

    def adapt(self, body: Block, note: Notes) -> None:
        messages = body.get("messages")
        if isinstance(messages, list):
            body["messages"] = _pass_messages(messages, note)

    def cuts_before(self, message: Block) -> bool:
        # An assistant turn with text: the pass keeps it, the user turns before
        # it answer no call after it, and none after it merges into one before.
        if message.get("role") != "assistant":
            return False
        content = message.get("content")
        return any(
            isinstance(block, dict) and block.get("type") == "text" and block.get("text")
            for block in (content if isinstance(content, list) else ())
        )

    def pass_messages(self, messages: list[Block], note: Notes, start: int = 0) -> list[Block]:
        return _pass_messages(messages, note, start)

    def carry_over(self, body: Block, metadata: list[Any]) -> None:
        _carry_container(body, metadata)


PROVIDER = Provider(
    enum=PROVIDER_ANTHROPIC,
    options=frozenset({"conversation_history_prompt"}),
    formatted_blocks=frozenset({"text", "thinking", "tool_use", "tool_result", "image"}),
    # Audio and video are warned about and skipped (though tool results carry them).
    dropped_blocks=frozenset({"audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # Document blocks: a PDF (base64 or URL), plain text.
    document_types=frozenset({"application/pdf", "text/plain"}),
    agentscope=AnthropicParity,
    provider=Anthropic,
    compiled=ANTHROPIC,
)
