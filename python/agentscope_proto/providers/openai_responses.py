"""OpenAI Responses: requests as AgentScope's OpenAIResponseChatFormatter/
OpenAIResponseMultiAgentFormatter + OpenAIResponseModel build them; responses as
OpenAIResponseModel parses them.

Provider fidelity: parsing keeps every output item (`_responses_items.py`),
and the chat formatter gives them back as input items
(`_fidelity/responses_turns.py`). The response id stays `response_id`; no
Msg-level metadata is added (AgentScope keeps none for this API either).
`response_schema` is AgentScope's `structured_model`: a strict `json_schema`
text format, tools left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import (
    PROVIDER_OPENAI_RESPONSES,
    FormatWarning,
)
from ..errors import FormatError, ParseError, ToolChoiceError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, copy_json
from ._context import FormatContext
from ._fidelity.responses_turns import PROVIDER_HANDLERS, finish_provider_turn
from ._history import format_multi_agent, history_prompt, history_text
from ._parse import expect, loads_with_repair, raise_for_error_body, repair_tool_inputs
from ._provider import UNKNOWN_TO_AGENTSCOPE
from ._responses_items import ProviderStream, ResponseEnd, function_call, parse_provider
from ._responses_items import call_id as _call_id
from ._responses_items import finish_reason as _finish_reason
from ._responses_items import usage as _usage
from ._tools import TOOL_CHOICE_MODES, arguments_json, tool_names, validate_tool_choice
from ._turns import Handler, Turn, format_turns, tool_result_to_text
from .openai import audio_part, history_media, image_block_url, image_url

__all__ = ["PROVIDER"]

# -- media ----------------------------------------------------------------


def _image_part(block: dict[str, Any], ctx: FormatContext) -> dict[str, Any]:
    """AgentScope's `_format_openai_response_image_block`."""
    return {"type": "input_image", "image_url": image_block_url(block, ctx)}


# -- chat formatter -------------------------------------------------------


def _chat_text(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Assistant text is model output in the Responses API; extra keys do not leak.
    kind = "output_text" if turn.msg.role == "assistant" else "input_text"
    turn.parts.append({"type": kind, "text": block.get("text")})


def _chat_image(turn: Turn, index: int, block: dict[str, Any]) -> None:
    turn.parts.append(_image_part(block, turn.ctx))


def _chat_audio(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # AgentScope drops assistant audio (a model's spoken output) without checking it.
    if turn.msg.role != "assistant":
        turn.parts.append(audio_part(block, turn.ctx))


def _chat_tool_use(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # function_call / function_call_output items follow the message item.
    arguments = arguments_json(block.get("input", {}))
    turn.trailing.append(
        {
            "type": "function_call",
            "call_id": block.get("id"),
            "name": block.get("name"),
            "arguments": arguments,
        }
    )


def _chat_tool_result(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Not the shared handler: the output trails the message item, and the
    # promoted images go out at once as input items (not as a message to format).
    output, media = tool_result_to_text(block["output"], turn.ctx)
    turn.trailing.append(
        {"type": "function_call_output", "call_id": block.get("id"), "output": output}
    )
    promoted: list[dict[str, Any]] = []
    if turn.ctx.settings.promote_tool_result_images:
        for where, media_block in media:
            if media_block["type"] == "image":
                promoted.append({"type": "input_text", "text": f"\n- The image from '{where}': "})
                promoted.append({"type": "input_image", "image_url": image_url(where, turn.ctx)})
    if promoted:
        # Emitted at once, so it precedes this message's own item and its
        # function_call_output (AgentScope appends it inside the block loop).
        intro = (
            "<system-info>The following are the image contents from the tool result "
            f"of '{block['name']}':"
        )
        turn.out.append(
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": intro},
                    *promoted,
                    {"type": "input_text", "text": "</system-info>"},
                ],
            }
        )


_CHAT_BLOCKS: dict[str, Handler] = {
    "text": _chat_text,
    "image": _chat_image,
    "audio": _chat_audio,
    "tool_use": _chat_tool_use,
    "tool_result": _chat_tool_result,
}


def _finish_chat(turn: Turn) -> None:
    if turn.parts:
        turn.out.append({"role": turn.msg.role, "content": turn.parts})
    turn.out.extend(turn.trailing)


# Provider fidelity: what a parsed response kept goes back, in block order.
_PROVIDER_BLOCKS: dict[str, Handler] = {**_CHAT_BLOCKS, **PROVIDER_HANDLERS}


def _format_chat(msgs: list[MsgView], ctx: FormatContext) -> list[dict[str, Any]]:
    """OpenAIResponseChatFormatter._format (in provider fidelity, every block
    kind a Responses turn can give back, see `_fidelity/responses_turns.py`)."""
    if ctx.settings.fidelity == "provider":
        return format_turns(msgs, ctx, _PROVIDER_BLOCKS, finish_provider_turn)
    return format_turns(msgs, ctx, _CHAT_BLOCKS, _finish_chat)


# -- multi-agent formatter ------------------------------------------------


def _format_agent_group(
    msgs: list[MsgView], ctx: FormatContext, first: bool
) -> list[dict[str, Any]]:
    """OpenAIResponseMultiAgentFormatter._format_agent_message: all history text in
    one part, then every image, then every audio."""
    lines, media = history_media(msgs, ctx, _image_part)
    text = history_text(lines, history_prompt(ctx, first))
    content = ([{"type": "input_text", "text": text}] if text else []) + media
    return [{"role": "user", "content": content}] if content else []


def _system_message(msg: MsgView) -> dict[str, Any]:
    texts = msg.get_content_blocks("text")
    return {"role": "system", "content": [{"type": "input_text", "text": b["text"]} for b in texts]}


def _format_multi_agent(msgs: list[MsgView], ctx: FormatContext) -> list[dict[str, Any]]:
    """TruncatedFormatterBase._format with the multi-agent formatter's parts."""
    history_prompt(ctx)  # checked before any message is formatted
    return format_multi_agent(msgs, ctx, _system_message, _format_chat, _format_agent_group)


# -- tools ----------------------------------------------------------------


def _flatten_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """OpenAIResponseModel._format_tools: a Chat-Completions schema loses its
    `function` wrapper; an already-flat one is kept."""
    function = tool.get("function")
    if isinstance(function, dict):
        return {"type": "function", **function}
    return {"type": "function", **tool}


def _check_tool_choice(choice: Any, tools: list[dict[str, Any]] | None) -> None:
    """OpenAIResponseModel._validate_tool_choice: the base check, or a list of
    tool names (no "any" alias here: it is an unknown tool name)."""
    if not isinstance(choice, list):
        validate_tool_choice(choice, tools)
        return
    if not all(isinstance(name, str) for name in choice):
        raise ToolChoiceError("tool_choice", "every tool name must be a string")
    if not tools:
        raise FormatError("tool_choice", "tools must be provided when tool_choice is a list")
    names = tool_names(tools)
    for name in choice:
        if name not in names:
            raise FormatError(
                "tool_choice",
                f"Invalid tool name '{name}' in tool_choice list. "
                f"Available functions: {', '.join(sorted(map(str, names)))}",
            )


def _tool_choice(choice: str | list[str]) -> str | dict[str, Any]:
    """OpenAIResponseModel._format_tool_choice."""
    if isinstance(choice, list):
        tools = [{"type": "function", "name": name} for name in choice]
        return {"type": "allowed_tools", "mode": "auto", "tools": tools}
    if choice in TOOL_CHOICE_MODES:
        return choice
    return {"type": "function", "name": choice}


def _structured_body(
    body: dict[str, Any],
    schema: dict[str, Any],
    tools: list[dict[str, Any]] | None,
    tool_choice: str | None,
    ctx: FormatContext,
) -> dict[str, Any]:
    """OpenAIResponseModel with a `structured_model`: the schema as a strict
    `json_schema` text format; tools and tool choice are left out (and not
    validated), with AgentScope's warning."""
    if tools or tool_choice:
        ctx.warnings.append(
            FormatWarning(
                path="tools",
                block_type="tool",
                message="response_schema is given: tools and tool_choice are ignored; "
                "the model only generates the structured output",
            )
        )
    name = ctx.settings.response_schema_name or "response"
    body["text"] = {
        "format": {"type": "json_schema", "name": name, "schema": copy_json(schema), "strict": True}
    }
    return body


# -- parsing --------------------------------------------------------------


@dataclass(slots=True)
class _Output:
    """What a complete response's output items add up to."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: bool = False
    metadata: dict[str, Any] | None = None


def _out_reasoning(acc: _Output, item: dict[str, Any], path: str) -> None:
    summaries = expect(item.get("summary", []), list, f"{path}.summary")
    for index, summary in enumerate(summaries):
        where = f"{path}.summary[{index}]"
        text = expect(summary, dict, where).get("text", "")
        if text:
            acc.content.append({"type": "thinking", "thinking": expect(text, str, where)})


def _out_message(acc: _Output, item: dict[str, Any], path: str) -> None:
    parts = expect(item.get("content", []), list, f"{path}.content")
    for index, part in enumerate(parts):
        where = f"{path}.content[{index}]"
        if expect(part, dict, where).get("type") != "output_text":
            continue
        text = expect(part.get("text"), str, f"{where}.text")
        acc.content.append({"type": "text", "text": text})
        if acc.structured:
            # Every text part overwrites it: the last one wins.
            acc.metadata = loads_with_repair(text)


def _out_function_call(acc: _Output, item: dict[str, Any], path: str) -> None:
    acc.content.extend(function_call(item, path))


_OUTPUT_ITEMS: dict[str, Callable[[_Output, dict[str, Any], str], None]] = {
    "reasoning": _out_reasoning,
    "message": _out_message,
    "function_call": _out_function_call,
}


def _parse_response(response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
    """OpenAIResponseModel._parse_response: output items in order; other item and
    part types (web search, refusal, encrypted reasoning) are ignored."""
    raise_for_error_body(PROVIDER.name, response)
    acc = _Output(structured=options.structured_output)
    for index, item in enumerate(expect(response.get("output"), list, "output")):
        path = f"output[{index}]"
        kind = expect(expect(item, dict, path).get("type"), (str, type(None)), f"{path}.type")
        handler = _OUTPUT_ITEMS.get(kind)
        if handler is not None:
            handler(acc, item, path)
    response_id = expect(response.get("id"), (str, type(None)), "id")
    return ParsedResponse(
        content=acc.content,
        usage=_usage(response.get("usage"), "usage"),
        response_id=response_id or "",
        raw_finish_reason=_finish_reason(response),
        structured_output=acc.metadata,
    )


@dataclass(slots=True)
class _Call:
    id: str
    name: str
    arguments: str = ""


class _StreamState(ResponseEnd):
    """OpenAIResponseModel._parse_stream_response: one snapshot per event once
    there is any content, ordered thinking, text, tool calls."""

    def __init__(self, options: ParseSettings) -> None:
        super().__init__(options)
        self._thinking = ""
        self._text = ""
        # Keyed by stream item id (what argument deltas name), in arrival order.
        self._calls: dict[Any, _Call] = {}
        # Keyed by call id, as AgentScope does: calls sharing one id share it.
        self._last_inputs: dict[str, dict[str, Any]] = {}
        self._metadata: dict[str, Any] | None = None
        self._last: list[dict[str, Any]] | None = None

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        kind, path = self._begin(event)
        handler = _EVENTS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event, path)
        content = self._content()
        if self._structured and self._text:
            self._metadata = loads_with_repair(self._text)
        if not content:
            return None
        self._last = content
        return self._result(content)

    def finish(self) -> ParsedResponse:
        if self._last is None:
            return self._result([])
        content = copy_json(self._last)
        if not self._tool_parsing and self._calls:
            # The extra final snapshot: inputs parsed only now (the structured
            # output stays what the text gave).
            repair_tool_inputs(content)
        return self._result(content)

    def _result(self, content: list[dict[str, Any]]) -> ParsedResponse:
        return ParsedResponse(
            content=copy_json(content),
            usage=dict(self._usage) if self._usage is not None else None,
            response_id=self._id or "",
            raw_finish_reason=self._finish,
            structured_output=copy_json(self._metadata),
        )

    def _content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        if self._thinking:
            content.append({"type": "thinking", "thinking": self._thinking})
        if self._text:
            content.append({"type": "text", "text": self._text})
        for call in self._calls.values():
            content.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": self._input(call),
                    "raw_input": call.arguments,
                }
            )
        return content

    def _input(self, call: _Call) -> dict[str, Any]:
        if not self._tool_parsing:
            return {}
        # Repaired on every event and never allowed to shrink (by its JSON
        # length), even when the complete arguments parse to something shorter.
        repaired = loads_with_repair(call.arguments or "{}")
        last = self._last_inputs.get(call.id, {})
        if len(json.dumps(last)) > len(json.dumps(repaired)):
            repaired = last
        self._last_inputs[call.id] = repaired
        return repaired

    def _on_thinking(self, event: dict[str, Any], path: str) -> None:
        self._thinking += expect(event.get("delta"), str, f"{path}.delta")

    def _on_text(self, event: dict[str, Any], path: str) -> None:
        self._text += expect(event.get("delta"), str, f"{path}.delta")

    def _on_item_added(self, event: dict[str, Any], path: str) -> None:
        item = expect(event.get("item"), dict, f"{path}.item")
        if item.get("type") != "function_call":
            return
        name = expect(item.get("name", ""), str, f"{path}.item.name")
        # Re-adding an item id replaces the call but keeps its place.
        item_id = expect(item.get("id"), (str, type(None)), f"{path}.item.id")
        self._calls[item_id] = _Call(_call_id(item, f"{path}.item"), name)

    def _on_arguments(self, event: dict[str, Any], path: str) -> None:
        if "item_id" not in event:
            raise ParseError(f"{path}.item_id", "missing")
        call = self._calls.get(expect(event["item_id"], (str, type(None)), f"{path}.item_id"))
        if call is not None:
            call.arguments += expect(event.get("delta"), str, f"{path}.delta")


_EVENTS: dict[str, Callable[[_StreamState, dict[str, Any], str], None]] = {
    "response.reasoning_summary_text.delta": _StreamState._on_thinking,
    "response.output_text.delta": _StreamState._on_text,
    "response.output_item.added": _StreamState._on_item_added,
    "response.function_call_arguments.delta": _StreamState._on_arguments,
    "response.completed": _StreamState._on_completed,
    "response.incomplete": _StreamState._on_ended,
    "response.failed": _StreamState._on_ended,
}


# -- the provider ---------------------------------------------------------


# Where the Responses API takes each request parameter; it has no `stop` and
# no `seed`.
REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_output_tokens",
    temperature="temperature",
    top_p="top_p",
    stop=None,
    seed=None,
    stream="stream",
)


class _OpenAIResponses:
    name = "openai_responses"
    enum = PROVIDER_OPENAI_RESPONSES
    options = frozenset(
        {
            "promote_tool_result_images",
            "conversation_history_prompt",
            "response_schema",
            "response_schema_name",
        }
    )
    formatted_blocks = frozenset({"text", "tool_use", "tool_result", "image", "audio"})
    # The chat formatter warns and skips these; multi-agent history skips them
    # silently. In provider fidelity the chat formatter gives back thinking
    # and server-tool blocks of this API (`_fidelity/responses_turns.py`).
    dropped_blocks = frozenset({"thinking", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE
    framing = "sse"
    request_fields = REQUEST_FIELDS
    # `input_file` parts: a PDF as data or by URL.
    document_types = frozenset({"application/pdf"})

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[dict[str, Any]]:
        if multi_agent:
            return _format_multi_agent(msgs, ctx)
        return _format_chat(msgs, ctx)

    def build_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"input": messages}
        if ctx.settings.response_schema is not None:
            return _structured_body(body, ctx.settings.response_schema, tools, tool_choice, ctx)
        if tools:
            body["tools"] = [_flatten_tool(tool) for tool in tools]
        # Falsy choices ("", []) are not sent, and not validated either.
        if tool_choice:
            _check_tool_choice(tool_choice, tools)
            body["tool_choice"] = _tool_choice(tool_choice)
        return body

    def parse(self, response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
        if options.fidelity == "provider":
            return parse_provider(response, options)
        return _parse_response(response, options)

    def stream(self, options: ParseSettings) -> _StreamState | ProviderStream:
        if options.fidelity == "provider":
            return ProviderStream(options)
        return _StreamState(options)


PROVIDER = _OpenAIResponses()
