"""OpenAI Responses.

`ResponsesParity` is AgentScope 1.0.21's: requests as its
OpenAIResponseChatFormatter/OpenAIResponseMultiAgentFormatter +
OpenAIResponseModel build them, responses as OpenAIResponseModel parses them.
`Responses` is provider fidelity, the parity variant with what differs
overridden. `response_schema` is AgentScope's `structured_model`: a strict
`json_schema` text format, tools left out.

Provider fidelity, parse (a complete response, and a stream, which rebuilds
the output items from `response.output_item.added/done` and the deltas
between them and turns them into blocks with the same functions, so both
agree). AgentScope reads only `reasoning` summaries, `output_text` parts and
`function_call` items; provider fidelity keeps, in output order:

- `reasoning`: a thinking block per summary text (AgentScope's text), then
  one per `reasoning_text` content part (the reasoning itself, which
  open-weight models served by LM Studio or vLLM return; marked
  `"reasoning_part": "reasoning_text"`), each with `reasoning_id`, the first
  also `encrypted_content`; a reasoning item with no text still gives one
  empty thinking block, so its id and encrypted content can go back with the
  next turn (the API wants a reasoning item before the calls that followed it).
- `message`: one text block per `output_text` part (never glued to its
  neighbours), its `annotations` verbatim as `citations`, its non-empty
  `logprobs` verbatim as `logprobs`, the item's `phase` (`commentary`,
  `final_answer`) as `phase`; a `refusal` part is a text block of the refusal
  marked `"refusal": true`. A stream adds up the `logprobs` of the text
  deltas until the done item gives them whole.
- `function_call` and `custom_tool_call` (calls the client answers): tool_use
  blocks; a custom call's free-form input is `{"input": <text>}`; a call's
  `caller` (programmatic tool calling: `{"type": "program", "caller_id"}`)
  verbatim as `caller`.
- every other item (web/file search, code interpreter, MCP, image generation,
  shell, apply patch, tool search, computer, compaction, and types unknown
  today): ONE `server_tool_use` block holding the item verbatim in `raw` (it
  goes back as one input item; what the call returned, such as a search's
  sources or a code interpreter's outputs, stays there). Its `input` is the
  call's JSON `arguments`, else the item's fields but its id, status and
  results. An item that is only an output (`*_output`: shell, tool search,
  program) is a `server_tool_result` (output, error flag, `raw`).

The response `id` stays `ParsedResponse.response_id`, as in AgentScope
fidelity: no Msg-level metadata is added.

Provider fidelity, format: what a parsed response kept goes back as the input
items the API expects, in the order it came. AgentScope's formatter skips
thinking and every block kind it does not know, and puts a message's function
calls after its text; in provider fidelity a turn is walked in block order
instead, and each block becomes:

- text: an input or output text part; an assistant's `citations` go back as
  the `output_text` part's `annotations` (Responses annotations with every
  key the API requires; others are dropped with a warning); its `phase` on
  its message item (the API asks for it back on every assistant message that
  had one; parts of another phase start a message of their own); a text
  marked `refusal` as a `refusal` part; `logprobs` stay with the parsed text
  (the API reads none in its input), silently;
- thinking with a `reasoning_id`: a `reasoning` input item (`id`, `summary`,
  `encrypted_content`; reasoning text as its `content`), consecutive blocks
  of one id as one item; thinking without one (another provider's, or none)
  cannot go back and is dropped;
- server_tool_use, or server_tool_result holding the item in `raw`: the item
  verbatim, when it is one the Responses input takes (its type, and the keys
  the API requires; keys it does not define, another vendor's extras, are
  dropped); another provider's (Anthropic, Gemini) is dropped. A result
  without `raw` is carried by its use block's item;
- tool_use: a `function_call` item, in place, with its `caller` when it is
  one the API defines (`direct`, a `program`'s); another API's (Claude's code
  execution) is dropped with a warning;
- a document (`data`, a PDF): an `input_file` part, its data or its URL;
- grounding: dropped (Gemini's; the Responses API has no such input).

Consecutive parts form one message item; an item between them splits it.
Every drop is a warning at the block's path (AgentScope's own "Unsupported
block type" text for the kinds AgentScope skips as well).

The body pass: function tools always get an explicit `"strict": false` (the
API's schema requires the key, `FunctionToolParam.strict`, nullable, and its
documented default is strict mode, which makes optional parameters required
and refuses schemas strict mode cannot take; a tool schema that carries
`strict` keeps it), and a reasoning item left without the output it led to
(its function call dropped for want of an output, or the last item of the
input) is dropped too.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._core import OPENAI_RESPONSES
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import (
    PROVIDER_OPENAI_RESPONSES,
    FormatWarning,
)
from ..errors import FormatError, ParseError, ProviderError, ToolChoiceError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, copy_json
from ._adapt import Json, Notes, note_text
from ._between import CallIds
from ._context import FormatContext
from ._documents import document
from ._history import format_multi_agent, history_prompt, history_text
from ._parse import expect, loads_with_repair, raise_for_error_body, repair_tool_inputs
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider, ProviderFidelity, StreamState, Variant
from ._tools import TOOL_CHOICE_MODES, arguments_json, tool_names, validate_tool_choice
from ._turns import Handler, Turn, TurnTable, format_turns, skipped_block, tool_result_to_text
from .openai import audio_part, history_media, image_block_url, image_url

__all__ = ["PROVIDER", "Responses", "ResponsesParity"]

_NAME = "openai_responses"
Block = dict[str, Any]
Key = tuple[int, int]
# The thinking block's key naming the reasoning item's part it came as, when
# not a `summary_text` (the default): `reasoning_text`, the item's `content`.
_REASONING_PART = "reasoning_part"

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


_CHAT = TurnTable(_CHAT_BLOCKS, _finish_chat)


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


# -- responses: what both fidelities read the same way --------------------------------


def _usage(value: Any, path: str) -> dict[str, int | float] | None:
    """ChatUsage from a Responses `usage` object (None or absent: no usage)."""
    if value is None:
        return None
    value = expect(value, dict, path)
    result: dict[str, int | float] = {
        "input_tokens": expect(value.get("input_tokens"), int, f"{path}.input_tokens"),
        "output_tokens": expect(value.get("output_tokens"), int, f"{path}.output_tokens"),
    }
    for target, details, key in (
        ("cache_read_input_tokens", "input_tokens_details", "cached_tokens"),
        ("reasoning_tokens", "output_tokens_details", "reasoning_tokens"),
    ):
        section = value.get(details)
        number = section.get(key) if isinstance(section, dict) else None
        if isinstance(number, int):
            result[target] = number
    return result


def _finish_reason(response: dict[str, Any]) -> str:
    status = response.get("status")
    details = response.get("incomplete_details")
    # "incomplete" stands for running out of tokens unless a filter cut it short.
    reason = details.get("reason") if isinstance(details, dict) else None
    if status == "incomplete" and reason == "content_filter":
        return "content_filter"
    return status if isinstance(status, str) else ""


class _ResponseEnd:
    """What both Responses stream parsers share: the bookkeeping of every
    event (`_begin`), and what the events that end a response do: take its
    finish reason and usage, or raise the provider's error (AgentScope reads
    nothing from `incomplete`/`failed`; the status is the finish reason)."""

    def __init__(self, options: ParseSettings) -> None:
        self._tool_parsing = options.stream_tool_parsing
        self._structured = options.structured_output
        self._events = 0
        self._id: str | None = None
        self._usage: dict[str, int | float] | None = None
        self._finish = ""

    def _begin(self, event: dict[str, Any]) -> tuple[str | None, str]:
        """Count `event`, raise the error it reports, take the first response
        id; its type and its path (`chunk[i]`)."""
        path = f"chunk[{self._events}]"
        self._events += 1
        raise_for_error_body(_NAME, event)
        kind = expect(event.get("type"), (str, type(None)), f"{path}.type")
        if kind == "error":
            raise ProviderError(_NAME, str(event.get("code") or "error"), str(event.get("message")))
        response = event.get("response")
        if self._id is None and isinstance(response, dict):
            self._id = expect(response.get("id"), (str, type(None)), f"{path}.response.id")
        return kind, path

    def _on_completed(self, event: dict[str, Any], path: str) -> None:
        response = expect(event.get("response"), dict, f"{path}.response")
        self._finish = _finish_reason(response)
        self._usage = _usage(response.get("usage"), f"{path}.response.usage") or self._usage

    def _on_ended(self, event: dict[str, Any], path: str) -> None:
        response = expect(event.get("response"), dict, f"{path}.response")
        error = response.get("error")
        if isinstance(error, dict) and error:
            kind = error.get("code") or error.get("type") or "error"
            raise ProviderError(_NAME, str(kind), str(error.get("message", error)))
        self._finish = _finish_reason(response)


def _call_id(item: dict[str, Any], path: str) -> str:
    # `call_id` pairs the call with its result; the item id only stands in.
    value = item.get("call_id") or item.get("id") or ""
    return str(expect(value, str, f"{path}.call_id"))


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
    acc.content.extend(_function_call(item, path))


_OUTPUT_ITEMS: dict[str, Callable[[_Output, dict[str, Any], str], None]] = {
    "reasoning": _out_reasoning,
    "message": _out_message,
    "function_call": _out_function_call,
}


def _parse_response(response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
    """OpenAIResponseModel._parse_response: output items in order; other item and
    part types (web search, refusal, encrypted reasoning) are ignored."""
    raise_for_error_body(_NAME, response)
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


class _StreamState(_ResponseEnd):
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


# Where the Responses API takes each request parameter; it has no `stop` and
# no `seed`.
_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_output_tokens",
    temperature="temperature",
    top_p="top_p",
    stop=None,
    seed=None,
    stream="stream",
)


class ResponsesParity(Variant):
    """AgentScope 1.0.21's OpenAIResponseChatFormatter /
    OpenAIResponseMultiAgentFormatter and OpenAIResponseModel."""

    turns = _CHAT

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            # TruncatedFormatterBase._format with the multi-agent formatter's parts.
            history_prompt(ctx)  # checked before any message is formatted
            return format_multi_agent(
                msgs, ctx, _system_message, self.format_chat, _format_agent_group
            )
        return self.format_chat(msgs, ctx)

    def format_chat(self, msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
        """OpenAIResponseChatFormatter._format."""
        return format_turns(msgs, ctx, self.turns)

    def build_body(
        self,
        messages: list[Block],
        tools: list[Block] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> Block:
        body: Block = {"input": messages}
        if ctx.settings.response_schema is not None:
            return _structured_body(body, ctx.settings.response_schema, tools, tool_choice, ctx)
        if tools:
            body["tools"] = [_flatten_tool(tool) for tool in tools]
        # Falsy choices ("", []) are not sent, and not validated either.
        if tool_choice:
            _check_tool_choice(tool_choice, tools)
            body["tool_choice"] = _tool_choice(tool_choice)
        return body

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        return _parse_response(response, options)

    def stream(self, options: ParseSettings) -> StreamState:
        return _StreamState(options)


# -- provider fidelity: parse ---------------------------------------------------------

# Where an item carries its result, in the order looked for.
_RESULT_KEYS = ("output", "outputs", "results", "result", "tools")
# What is not the call's input when the input is the item's own fields.
_NOT_INPUT = frozenset({"id", "type", "status", "call_id", "name", "error", *_RESULT_KEYS})


def _reasoning_texts(item: dict[str, Any], key: str, path: str) -> list[Block]:
    """The thinking blocks of a reasoning item's `summary` or `content` texts."""
    blocks: list[Block] = []
    for index, part in enumerate(expect(item.get(key) or [], list, f"{path}.{key}")):
        where = f"{path}.{key}[{index}]"
        text = expect(part, dict, where).get("text", "")
        if text:
            block: Block = {"type": "thinking", "thinking": expect(text, str, f"{where}.text")}
            if key == "content":
                # The reasoning itself (open-weight models, LM Studio), not a
                # summary of it: it goes back as a `reasoning_text` part.
                block[_REASONING_PART] = "reasoning_text"
            blocks.append(block)
    return blocks


def _reasoning(item: dict[str, Any], path: str) -> list[Block]:
    texts = _reasoning_texts(item, "summary", path) + _reasoning_texts(item, "content", path)
    reasoning_id = expect(item.get("id"), (str, type(None)), f"{path}.id")
    where = f"{path}.encrypted_content"
    encrypted = expect(item.get("encrypted_content"), (str, type(None)), where)
    blocks = texts or [{"type": "thinking", "thinking": ""}]
    if encrypted:
        blocks[0]["encrypted_content"] = encrypted
    if reasoning_id:
        for block in blocks:
            block["reasoning_id"] = reasoning_id
    # An id-less, empty reasoning item has nothing to keep.
    return blocks if texts or encrypted or reasoning_id else []


def _message(item: dict[str, Any], path: str) -> list[Block]:
    blocks: list[Block] = []
    phase = expect(item.get("phase"), (str, type(None)), f"{path}.phase")
    for index, part in enumerate(expect(item.get("content") or [], list, f"{path}.content")):
        where = f"{path}.content[{index}]"
        kind = expect(part, dict, where).get("type")
        if kind == "refusal":
            # The model's refusal: its text, marked (it goes back as a refusal part).
            text = expect(part.get("refusal") or "", str, f"{where}.refusal")
            blocks.append({"type": "text", "text": text, "refusal": True})
            if phase:
                blocks[-1]["phase"] = phase
            continue
        if kind != "output_text":
            continue
        block: Block = {"type": "text", "text": expect(part.get("text"), str, f"{where}.text")}
        annotations = expect(part.get("annotations") or [], list, f"{where}.annotations")
        if annotations:
            block["citations"] = copy_json(annotations)
        logprobs = expect(part.get("logprobs") or [], list, f"{where}.logprobs")
        if logprobs:
            block["logprobs"] = copy_json(logprobs)
        if phase:
            block["phase"] = phase
        blocks.append(block)
    return blocks


def _function_call(item: dict[str, Any], path: str, parse: bool = True) -> list[Block]:
    """A `function_call` item as its tool_use block (the arguments parsed,
    unless `parse` is off: a stream that parses them only at its end)."""
    block: Block = {
        "type": "tool_use",
        "id": _call_id(item, path),
        "name": expect(item.get("name"), str, f"{path}.name"),
    }
    arguments = expect(item.get("arguments") or "{}", str, f"{path}.arguments")
    block["input"] = loads_with_repair(arguments) if parse else {}
    return [block]


def _kept_function_call(item: dict[str, Any], path: str, parse: bool = True) -> list[Block]:
    """A `function_call` item in provider fidelity: its `caller` kept too."""
    blocks = _function_call(item, path, parse)
    caller = expect(item.get("caller"), (dict, type(None)), f"{path}.caller")
    if caller is not None:
        # Who made the call (programmatic tool calling: a program); it goes back with it.
        blocks[0]["caller"] = copy_json(caller)
    return blocks


def _custom_tool_call(item: dict[str, Any], path: str) -> list[Block]:
    text = expect(item.get("input") or "", str, f"{path}.input")
    return [
        {
            "type": "tool_use",
            "id": _call_id(item, path),
            "name": expect(item.get("name"), str, f"{path}.name"),
            "input": {"input": text},
        }
    ]


def _server_input(item: dict[str, Any]) -> dict[str, Any]:
    """The call's input: its JSON `arguments` when it has them, else its own fields."""
    arguments = item.get("arguments")
    if isinstance(arguments, dict):
        return {key: copy_json(value) for key, value in arguments.items()}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {"arguments": arguments}
    return {key: copy_json(value) for key, value in item.items() if key not in _NOT_INPUT}


def _server_item(item: dict[str, Any], path: str) -> list[Block]:
    kind = str(item["type"])
    item_id = expect(item.get("id") or item.get("call_id") or "", str, f"{path}.id")
    if kind.endswith("_output"):
        # An output item: the result of a call made earlier (or elsewhere).
        error = item.get("error")
        result_key = next((key for key in _RESULT_KEYS if item.get(key) is not None), None)
        output = item[result_key] if result_key is not None else error
        return [
            {
                "type": "server_tool_result",
                "tool_use_id": expect(item.get("call_id") or item_id, str, f"{path}.call_id"),
                "provider_type": kind,
                "output": copy_json(output),
                "is_error": bool(error) or item.get("status") == "failed",
                "raw": copy_json(item),
            }
        ]
    # One block per item: what the call returned (sources, outputs, results)
    # stays in its `raw`, which goes back as the item.
    name = item.get("name")
    return [
        {
            "type": "server_tool_use",
            "id": item_id,
            "name": name if isinstance(name, str) and name else kind.removesuffix("_call"),
            "input": _server_input(item),
            "provider_type": kind,
            "raw": copy_json(item),
        }
    ]


_ITEMS: dict[str, Callable[[dict[str, Any], str], list[Block]]] = {
    "reasoning": _reasoning,
    "message": _message,
    "function_call": _kept_function_call,
    "custom_tool_call": _custom_tool_call,
}


def _item_blocks(item: Any, path: str) -> list[Block]:
    """The blocks one output item gives in provider fidelity."""
    kind = expect(expect(item, dict, path).get("type"), (str, type(None)), f"{path}.type")
    if kind is None:
        return []
    handler = _ITEMS.get(kind, _server_item)
    return handler(item, path)


def _structured(content: list[Block]) -> dict[str, Any] | None:
    """AgentScope's structured output: the last text part, repaired."""
    texts = [block["text"] for block in content if block["type"] == "text"]
    return loads_with_repair(texts[-1]) if texts else None


def _parse_kept(response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
    """A complete response in provider fidelity: every output item, in order."""
    raise_for_error_body(_NAME, response)
    content: list[Block] = []
    for index, item in enumerate(expect(response.get("output"), list, "output")):
        content.extend(_item_blocks(item, f"output[{index}]"))
    response_id = expect(response.get("id"), (str, type(None)), "id")
    return ParsedResponse(
        content=content,
        usage=_usage(response.get("usage"), "usage"),
        response_id=response_id or "",
        raw_finish_reason=_finish_reason(response),
        structured_output=_structured(content) if options.structured_output else None,
    )


# -- provider fidelity: the stream --------------------------------------------------


class _KeptStream(_ResponseEnd):
    """The output items rebuilt from the stream's events; every snapshot is
    what the complete parse makes of the items so far (tool calls also carry
    `raw_input`, the arguments as streamed, as in AgentScope fidelity)."""

    def __init__(self, options: ParseSettings) -> None:
        super().__init__(options)
        # Output items by (response, `output_index`), and their blocks (rebuilt
        # on change). A recorded multi-step stream holds several responses,
        # each counting its items from 0: all of them are kept, in order.
        self._response = 0
        self._items: dict[Key, dict[str, Any]] = {}
        self._blocks: dict[Key, list[Block]] = {}
        self._indexes: dict[str, Key] = {}

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        kind, path = self._begin(event)
        if kind == "response.created" and self._items:
            self._response += 1
        handler = _KEPT_EVENTS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event, path)
        content = self._content()
        return self._result(content) if content else None

    def finish(self) -> ParsedResponse:
        content = self._content()
        if not self._tool_parsing:
            for block in content:
                if block["type"] == "tool_use" and "raw_input" in block:
                    block["input"] = loads_with_repair(block["raw_input"] or "{}")
        return self._result(content)

    def _result(self, content: list[Block]) -> ParsedResponse:
        return ParsedResponse(
            content=content,
            usage=dict(self._usage) if self._usage is not None else None,
            response_id=self._id or "",
            raw_finish_reason=self._finish,
            structured_output=_structured(content) if self._structured else None,
        )

    def _content(self) -> list[Block]:
        content: list[Block] = []
        for index in sorted(self._blocks):
            content.extend(copy_json(self._blocks[index]))
        return content

    # -- the items ------------------------------------------------------------------------

    def _index(self, event: dict[str, Any], path: str) -> Key | None:
        """The item an event names (by output index, or by item id)."""
        index = event.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            key = (self._response, index)
            return key if key in self._items else None
        item_id = event.get("item_id")
        return self._indexes.get(item_id) if isinstance(item_id, str) else None

    def _set(self, index: Key, item: dict[str, Any], path: str) -> None:
        self._items[index] = item
        if isinstance(item.get("id"), str):
            self._indexes[item["id"]] = index
        self._changed(index, path)

    def _changed(self, index: Key, path: str) -> None:
        item = self._items[index]
        if item.get("type") != "function_call":
            self._blocks[index] = _item_blocks(item, f"{path}.item")
            return
        # Without stream tool parsing the arguments are parsed once, at the end.
        blocks = _kept_function_call(item, f"{path}.item", parse=self._tool_parsing)
        arguments = expect(item.get("arguments") or "", str, f"{path}.item.arguments")
        for block in blocks:
            block["raw_input"] = arguments
        self._blocks[index] = blocks

    def _on_item(self, event: dict[str, Any], path: str) -> None:
        item = copy_json(expect(event.get("item"), dict, f"{path}.item"))
        number = event.get("output_index")
        if isinstance(number, int) and not isinstance(number, bool):
            key = (self._response, number)
        else:
            # No position given: the item of that id, else after the others.
            last = max(self._items, default=(self._response, -1))
            key = (self._response, last[1] + 1 if last[0] == self._response else 0)
            item_id = item.get("id")
            if isinstance(item_id, str):
                key = self._indexes.get(item_id, key)
        self._set(key, item, path)

    def _part(self, event: dict[str, Any], path: str, key: str) -> dict[str, Any] | None:
        """The content (or summary) part an event names, created if missing."""
        index = self._index(event, path)
        if index is None:
            return None
        item = self._items[index]
        number = event.get("summary_index" if key == "summary" else "content_index", 0)
        number = expect(number, int, f"{path}.{key}_index")
        parts = item.get(key)
        if not isinstance(parts, list):
            parts = item[key] = []
        while len(parts) <= number:
            if key == "summary":
                parts.append({"type": "summary_text", "text": ""})
            elif item.get("type") == "reasoning":
                parts.append({"type": "reasoning_text", "text": ""})
            else:
                parts.append({"type": "output_text", "text": "", "annotations": []})
        part: dict[str, Any] = expect(parts[number], dict, f"{path}.{key}[{number}]")
        return part

    def _on_part_added(self, event: dict[str, Any], path: str) -> None:
        key = "summary" if "summary_index" in event else "content"
        part = self._part(event, path, key)
        new = event.get("part")
        if part is not None and isinstance(new, dict) and not part.get("text"):
            part.clear()
            part.update(copy_json(new))
            self._changed(self._index_of(event), path)

    def _on_text(self, event: dict[str, Any], path: str) -> None:
        key = "summary" if "summary_index" in event else "content"
        part = self._part(event, path, key)
        if part is not None:
            text = expect(part.get("text") or "", str, path)
            part["text"] = text + expect(event.get("delta"), str, f"{path}.delta")
            logprobs = expect(event.get("logprobs") or [], list, f"{path}.logprobs")
            if logprobs:
                # The delta's tokens' log probabilities (the done item repeats them all).
                part["logprobs"] = [*(part.get("logprobs") or []), *copy_json(logprobs)]
            self._changed(self._index_of(event), path)

    def _on_refusal(self, event: dict[str, Any], path: str) -> None:
        part = self._part(event, path, "content")
        if part is not None:
            if part.get("type") != "refusal" and not part.get("text"):
                part.clear()
                part["type"] = "refusal"
            text = expect(part.get("refusal") or "", str, path)
            part["refusal"] = text + expect(event.get("delta"), str, f"{path}.delta")
            self._changed(self._index_of(event), path)

    def _on_annotation(self, event: dict[str, Any], path: str) -> None:
        part = self._part(event, path, "content")
        annotation = event.get("annotation")
        if part is not None and isinstance(annotation, dict):
            annotations = part.get("annotations")
            if not isinstance(annotations, list):
                annotations = part["annotations"] = []
            annotations.append(copy_json(annotation))
            self._changed(self._index_of(event), path)

    def _on_arguments(self, event: dict[str, Any], path: str, key: str = "arguments") -> None:
        index = self._index(event, path)
        if index is None:
            return
        item = self._items[index]
        item[key] = expect(item.get(key) or "", str, f"{path}.item.{key}") + expect(
            event.get("delta"), str, f"{path}.delta"
        )
        self._changed(index, path)

    def _on_input(self, event: dict[str, Any], path: str) -> None:
        self._on_arguments(event, path, "input")

    def _index_of(self, event: dict[str, Any]) -> Key:
        index = self._index(event, "")
        if index is None:  # only called once `_part` found the item
            raise ParseError("output_index", "names no item")
        return index


_KEPT_EVENTS: dict[str, Callable[[_KeptStream, dict[str, Any], str], None]] = {
    "response.output_item.added": _KeptStream._on_item,
    "response.output_item.done": _KeptStream._on_item,
    "response.content_part.added": _KeptStream._on_part_added,
    "response.reasoning_summary_part.added": _KeptStream._on_part_added,
    "response.output_text.delta": _KeptStream._on_text,
    "response.reasoning_summary_text.delta": _KeptStream._on_text,
    "response.reasoning_text.delta": _KeptStream._on_text,
    "response.refusal.delta": _KeptStream._on_refusal,
    "response.output_text.annotation.added": _KeptStream._on_annotation,
    "response.function_call_arguments.delta": _KeptStream._on_arguments,
    "response.custom_tool_call_input.delta": _KeptStream._on_input,
    "response.completed": _KeptStream._on_completed,
    "response.incomplete": _KeptStream._on_ended,
    "response.failed": _KeptStream._on_ended,
}


# -- provider fidelity: formatting back ---------------------------------------------

# The items `ResponseInputItemParam` takes besides messages and function
# calls: their required keys, then the optional ones (the SDK's types).
_KEYS: dict[str, tuple[str, str]] = {
    "additional_tools": ("role tools", "id"),
    "apply_patch_call": ("call_id operation status", "caller id"),
    "apply_patch_call_output": ("call_id status", "caller id output"),
    "code_interpreter_call": ("code container_id id outputs status", ""),
    "compaction": ("encrypted_content", "id"),
    "compaction_trigger": ("", "id"),
    "computer_call": ("call_id id pending_safety_checks status", "action actions"),
    "computer_call_output": ("call_id output", "acknowledged_safety_checks id status"),
    "configuration_update": ("", "id reasoning text"),
    "custom_tool_call": ("call_id input name", "async caller id namespace"),
    "custom_tool_call_output": ("call_id output", "caller id"),
    "file_search_call": ("id queries status", "results"),
    "image_generation_call": (
        "id result status",
        "action background error output_format quality revised_prompt size svg_usage",
    ),
    "item_reference": ("id", ""),
    "local_shell_call": ("action call_id id status", ""),
    "local_shell_call_output": ("id output", "status"),
    "mcp_approval_request": ("arguments id name server_label", ""),
    "mcp_approval_response": ("approval_request_id approve", "id reason"),
    "mcp_call": ("arguments id name server_label", "approval_request_id error output status"),
    "mcp_list_tools": ("id server_label tools", "error"),
    "program": ("call_id code fingerprint id", ""),
    "program_output": ("call_id id result status", ""),
    "shell_call": ("action call_id", "caller environment id status"),
    "shell_call_output": ("call_id output", "caller id max_output_length status"),
    "tool_search_call": ("arguments", "call_id execution id status"),
    "tool_search_output": ("tools", "call_id execution id status"),
    "web_search_call": ("action id status", ""),
}
# `output_text` annotations: every key of each type is required.
_ANNOTATIONS = {
    "url_citation": frozenset({"type", "url", "title", "start_index", "end_index"}),
    "file_citation": frozenset({"type", "file_id", "filename", "index"}),
    "container_file_citation": frozenset(
        {"type", "container_id", "file_id", "filename", "start_index", "end_index"}
    ),
    "file_path": frozenset({"type", "file_id", "index"}),
}


def _annotation(citation: Any) -> Json | None:
    """The citation as an `output_text` annotation, if it can be one."""
    keys = _ANNOTATIONS.get(str(citation.get("type"))) if isinstance(citation, dict) else None
    if keys is None or not keys <= set(citation):
        return None
    return {key: copy_json(value) for key, value in citation.items() if key in keys}


@dataclass(frozen=True, slots=True)
class _Item:
    """An input item of its own among a turn's message parts."""

    item: Json


@dataclass(frozen=True, slots=True)
class _Phase:
    """The `phase` of the assistant message the parts after it belong to
    (`commentary` or `final_answer`, as the output message had it)."""

    phase: str


def _skip(turn: Turn, index: int, kind: str) -> None:
    # AgentScope's own warning: a block dropped here is one it skips too.
    turn.ctx.warn(turn.msg, index, kind, skipped_block(kind))


def _text(turn: Turn, index: int, block: Json) -> None:
    assistant = turn.msg.role == "assistant"
    part: Json = {"type": "output_text" if assistant else "input_text", "text": block.get("text")}
    if assistant and block.get("refusal") is True:
        part = {"type": "refusal", "refusal": block.get("text")}
    citations = block.get("citations")
    if assistant and isinstance(citations, list) and citations:
        annotations = [_annotation(citation) for citation in citations]
        kept = [annotation for annotation in annotations if annotation is not None]
        if len(kept) < len(citations):
            turn.ctx.warn(
                turn.msg,
                index,
                "text",
                f"dropped {len(citations) - len(kept)} citation(s) the Responses API cannot "
                "take as annotations (another provider's, or without a key it requires)",
            )
        if kept:
            part["annotations"] = kept
    # `logprobs` stay with the parsed text: the API reads none in its input.
    phase = block.get("phase")
    if assistant and isinstance(phase, str) and phase:
        # The API asks for it back on every assistant message that had one.
        turn.parts.append(_Phase(phase))
    turn.parts.append(part)


def _thinking(turn: Turn, index: int, block: Json) -> None:
    reasoning_id = block.get("reasoning_id")
    if turn.msg.role != "assistant" or not isinstance(reasoning_id, str) or not reasoning_id:
        _skip(turn, index, "thinking")
        return
    last = turn.parts[-1] if turn.parts else None
    if isinstance(last, _Item) and last.item.get("type") == "reasoning":
        item = last.item if last.item.get("id") == reasoning_id else None
    else:
        item = None
    if item is None:
        item = {"type": "reasoning", "id": reasoning_id, "summary": []}
        turn.parts.append(_Item(item))
    text = block.get("thinking")
    if isinstance(text, str) and text:
        if block.get(_REASONING_PART) == "reasoning_text":
            item.setdefault("content", []).append({"type": "reasoning_text", "text": text})
        else:
            item["summary"].append({"type": "summary_text", "text": text})
    encrypted = block.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted and "encrypted_content" not in item:
        item["encrypted_content"] = encrypted


def _own_item(turn: Turn, index: int, block: Json) -> Json | None:
    """The block's `raw` item, as the Responses input takes it: None (and a
    warning) when it is another provider's or lacks a key the API requires;
    keys the API does not define are dropped (another vendor's extras)."""
    raw = block.get("raw")
    kind = str(block.get("type"))
    item_type = block.get("provider_type")
    if (
        not isinstance(raw, dict)
        or not isinstance(item_type, str)
        or item_type not in _KEYS
        or raw.get("type") != item_type
    ):
        _skip(turn, index, kind)
        return None
    required, optional = (frozenset(keys.split()) for keys in _KEYS[item_type])
    missing = sorted(required - set(raw))
    if missing:
        turn.ctx.warn(
            turn.msg,
            index,
            kind,
            f"dropped a {item_type} item without {', '.join(missing)}, which the Responses "
            "API requires",
        )
        return None
    allowed = required | optional | {"type"}
    extra = sorted(set(raw) - allowed)
    if extra:
        turn.ctx.warn(
            turn.msg,
            index,
            kind,
            f"dropped {', '.join(extra)} from a {item_type} item: the Responses API "
            "does not define them",
        )
    return {key: copy_json(value) for key, value in raw.items() if key in allowed}


def _server_tool_use(turn: Turn, index: int, block: Json) -> None:
    item = _own_item(turn, index, block)
    if item is not None:
        turn.parts.append(_Item(item))


def _server_tool_result(turn: Turn, index: int, block: Json) -> None:
    if "raw" not in block and str(block.get("provider_type")) in _KEYS:
        return  # its call's item (the use block's `raw`) holds it
    item = _own_item(turn, index, block)
    if item is not None:
        turn.parts.append(_Item(item))


def _grounding(turn: Turn, index: int, block: Json) -> None:
    turn.ctx.warn(
        turn.msg,
        index,
        "grounding",
        "dropped grounding metadata: the Responses API has no input for it",
    )


def _tool_use(turn: Turn, index: int, block: Json) -> None:
    call = {
        "type": "function_call",
        "call_id": block.get("id"),
        "name": block.get("name"),
        "arguments": arguments_json(block.get("input", {})),
    }
    caller = block.get("caller")
    if _own_caller(caller):
        call["caller"] = copy_json(caller)
    elif caller is not None:
        kind = caller.get("type") if isinstance(caller, dict) else None
        turn.ctx.warn(
            turn.msg,
            index,
            "tool_use",
            f"dropped the call's caller {kind!r}: the Responses API takes its own only",
        )
    turn.parts.append(_Item(call))


def _own_caller(caller: Any) -> bool:
    """A function call's `caller` as the API gives it: direct, or a program's."""
    if not isinstance(caller, dict):
        return False
    kind = caller.get("type")
    return kind == "direct" or (kind == "program" and isinstance(caller.get("caller_id"), str))


def _document(turn: Turn, index: int, block: Json) -> None:
    # An `input_file` part: the PDF's data, or its URL as is.
    found = document(block, turn.ctx, keep_url=True)
    if found.url is not None:
        turn.parts.append({"type": "input_file", "file_url": found.url})
        return
    name = found.name or "document.pdf"
    turn.parts.append({"type": "input_file", "filename": name, "file_data": found.data_url()})


_NATIVE_BLOCKS: dict[str, Handler] = {
    **_CHAT_BLOCKS,
    "text": _text,
    "data": _document,
    "thinking": _thinking,
    "server_tool_use": _server_tool_use,
    "server_tool_result": _server_tool_result,
    "grounding": _grounding,
    "tool_use": _tool_use,
}


def _finish_native(turn: Turn) -> None:
    """The turn's message parts and items, in block order (parts of another
    phase start a message of their own); then what trails it (function call
    outputs)."""
    parts: list[Any] = []
    phase: str | None = None

    def flush() -> None:
        if parts:
            message: Json = {"role": turn.msg.role, "content": list(parts)}
            if phase is not None:
                message["phase"] = phase
            turn.out.append(message)
            parts.clear()

    for segment in turn.parts:
        if isinstance(segment, _Phase):
            if segment.phase != phase:
                flush()
            phase = segment.phase
        elif isinstance(segment, _Item):
            flush()
            phase = None
            turn.out.append(segment.item)
        else:
            parts.append(segment)
    flush()
    turn.out.extend(turn.trailing)


# -- provider fidelity: the body pass -----------------------------------------------

_RESPONSES_USER_PARTS = frozenset({"input_text", "input_image", "input_file"})
_RESPONSES_ASSISTANT_PARTS = frozenset({"output_text", "refusal"})
_EMPTY_PARAMETERS: Json = {"type": "object", "properties": {}}


def _responses_part(part: Json, role: str, at: str, note: Notes) -> Json | None:
    kind = str(part.get("type"))
    allowed = _RESPONSES_ASSISTANT_PARTS if role == "assistant" else _RESPONSES_USER_PARTS
    if kind not in allowed and kind not in ("input_text", "output_text"):
        note(at, kind, f"replaced by a text note: a {role} message cannot hold {kind!r}")
        text_type = "output_text" if role == "assistant" else "input_text"
        return {"type": text_type, "text": note_text(kind, f"a {role} message")}
    if kind in ("input_text", "output_text") and not part.get("text"):
        note(at, kind, "dropped an empty text part")
        return None
    if kind == "input_image" and "detail" not in part:
        # Required by the API's schema; "auto" is its documented default.
        return {**part, "detail": "auto"}
    return part


def _without_orphan_reasoning(items: list[tuple[int, Any]], note: Notes) -> list[Any]:
    """The API refuses a reasoning item without the output that followed it
    (a call dropped above, or a turn cut short): such an item is dropped.
    `items` are the kept items with their index in the parity body."""
    kept = []
    for number, (index, item) in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "reasoning":
            following = items[number + 1][1] if number + 1 < len(items) else None
            if (
                not isinstance(following, dict)
                or following.get("type") == "reasoning"
                or following.get("role", "assistant") != "assistant"
            ):
                note(
                    f"input[{index}]",
                    "thinking",
                    "dropped a reasoning item that no output of its turn follows",
                )
                continue
        kept.append(item)
    return kept


def _adapt_body(body: Json, note: Notes) -> None:
    """The pass: parts each role takes, calls answered, reasoning followed by
    its output, function tools explicitly non-strict."""
    items = body.get("input")
    if isinstance(items, list):
        answered = {
            item.get("call_id")
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        }
        kept: list[tuple[int, Any]] = []
        for index, item in enumerate(items):
            path = f"input[{index}]"
            if not isinstance(item, dict):
                kept.append((index, item))
                continue
            if item.get("type") == "function_call" and item.get("call_id") not in answered:
                note(path, "tool_use", "dropped a function call no function_call_output answers")
                continue
            content = item.get("content")
            if "role" in item and isinstance(content, list):
                parts = [
                    _responses_part(part, str(item["role"]), f"{path}.content[{number}]", note)
                    if isinstance(part, dict)
                    else part
                    for number, part in enumerate(content)
                ]
                item["content"] = [part for part in parts if part is not None]
                if not item["content"]:
                    note(path, str(item["role"]), "dropped a message left empty")
                    continue
            kept.append((index, item))
        body["input"] = _without_orphan_reasoning(kept, note)
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict) or tool.get("type") != "function":
            continue
        if tool.get("parameters") is None:
            tool["parameters"] = copy.deepcopy(_EMPTY_PARAMETERS)
        if "strict" not in tool:
            # Explicit non-strict: left out, the API may switch a tool to strict
            # mode, which makes every optional parameter required.
            tool["strict"] = False


class Responses(ProviderFidelity, ResponsesParity):
    """The Responses API in provider fidelity (see the module's docstring)."""

    turns = TurnTable(_NATIVE_BLOCKS, _finish_native)
    # "Invalid 'input[n].call_id': string too long. Expected a string with
    # maximum length 64".
    call_ids = CallIds("the Responses API takes call ids of at most 64 characters", max_length=64)

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        return _parse_kept(response, options)

    def stream(self, options: ParseSettings) -> StreamState:
        return _KeptStream(options)

    def adapt(self, body: Block, note: Notes) -> None:
        _adapt_body(body, note)


PROVIDER = Provider(
    enum=PROVIDER_OPENAI_RESPONSES,
    options=frozenset(
        {
            "promote_tool_result_images",
            "conversation_history_prompt",
            "response_schema",
            "response_schema_name",
        }
    ),
    formatted_blocks=frozenset({"text", "tool_use", "tool_result", "image", "audio"}),
    # The chat formatter warns and skips these; multi-agent history skips them
    # silently. In provider fidelity the chat formatter gives back thinking
    # and server-tool blocks of this API.
    dropped_blocks=frozenset({"thinking", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # `input_file` parts: a PDF as data or by URL.
    document_types=frozenset({"application/pdf"}),
    agentscope=ResponsesParity,
    provider=Responses,
    compiled=OPENAI_RESPONSES,
)
