"""Alibaba DashScope generation (Qwen), its native MultiModalConversation API.

`DashScopeParity` is AgentScope 1.0.21's: requests as its
DashScopeChatFormatter/DashScopeMultiAgentFormatter + DashScopeChatModel build
them, responses as DashScopeChatModel parses them. `DashScope` is provider
fidelity: the same formatter, and a body pass that drops the messages left
without content (the API refuses a null content where no tool call stands in
for it). Documents: none (its messages take images, audio and video).

Provider fidelity, parse: the same parsers, and what they drop kept. A
response asked for with `result_format="text"` (`output.text` and
`output.finish_reason`, no `choices`; AgentScope always asks for
`"message"` and fails on it) is read as the one message it stands for, complete
or streamed. A complete response's `reasoning_content` is the thinking block
first, as a stream's is (AgentScope reads it only when streaming). Neither
goes back: DashScope's messages take text, and thinking is dropped with
AgentScope's warning as before.
"""

from __future__ import annotations

import base64
import mimetypes
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._core import DASHSCOPE
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_DASHSCOPE
from ..errors import FormatError, ParseError, ProviderError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, copy_json
from ._adapt import Json, Notes
from ._context import FormatContext
from ._history import format_multi_agent, history_prompt, system_text, wrap_history
from ._parse import (
    StreamedInputs,
    expect,
    loads_with_repair,
    raise_for_error_body,
    repair_tool_inputs,
    streamed_tool_use,
)
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider, ProviderFidelity, Variant
from ._tools import TOOL_CHOICE_MODES, tool_call, tool_message, validate_tool_choice
from ._turns import Handler, Turn, TurnTable, format_turns, tool_result_handler

__all__ = ["PROVIDER", "DashScope", "DashScopeParity"]

_NAME = "dashscope"
_MEDIA_KINDS = ("image", "audio", "video")

Block = dict[str, Any]


# -- media ------------------------------------------------------------------


def _media_from_base64(ctx: FormatContext, msg: MsgView, index: int, source: Block) -> str:
    return f"data:{source['media_type']};base64,{source['data']}"


def _media_from_url(ctx: FormatContext, msg: MsgView, index: int, source: Block) -> str:
    url: str = source["url"].removeprefix("file://")
    if not ctx.is_file(url):
        # AgentScope treats anything that is not an existing file as a web URL,
        # so a missing local file goes out as its bare (file://-stripped) path.
        return url
    # AgentScope types the file with `mimetypes` on its absolute path: by
    # extension only (`.wav` -> audio/x-wav, `.mpeg` -> video/mpeg).
    media_type = mimetypes.guess_type(posixpath.normpath(posixpath.join("/", url)))[0]
    if not media_type:
        raise FormatError(
            msg.path(index),
            f"cannot tell the media type of {url!r} from its extension; "
            "DashScope needs a recognised one (.png, .jpg, .mp3, .mp4, ...)",
        )
    data = base64.b64encode(ctx.read_file(url)).decode("ascii")
    return f"data:{media_type};base64,{data}"


def _media_unsupported(ctx: FormatContext, msg: MsgView, index: int, source: Block) -> str:
    # AgentScope raises NotImplementedError for other source types.
    raise FormatError(f"{msg.path(index)}.source", f"unsupported source {source!r}")


_SOURCES: dict[str, Callable[[FormatContext, MsgView, int, Block], str]] = {
    "url": _media_from_url,
    "base64": _media_from_base64,
}


def _media_item(ctx: FormatContext, msg: MsgView, index: int, block: Block) -> dict[str, str]:
    """A bare-key content item, `{"image"|"audio"|"video": url or data URI}`."""
    ctx.at(msg, index)
    source = block["source"]
    convert = _SOURCES.get(source.get("type"), _media_unsupported)
    return {block["type"]: convert(ctx, msg, index, source)}


def _collapse_text(message: Block) -> Block:
    """AgentScope's `_reformat_messages`, for one message: an all-text content
    list becomes one string, in place (the message is being built).

    Empty texts are left out of the join, and a list whose texts are all empty
    stays a list (so `""` content is sent as `[{"text": ""}]`). It runs as
    each message is made, not over the finished list: a message's form then
    depends on that message alone, which is what lets a chat turn be cached.
    """
    content = message.get("content")
    if not isinstance(content, list):
        return message
    # Our items never carry "type"; AgentScope's check also accepts "type": "text".
    if not all(
        isinstance(item, dict) and "text" in item and item.get("type", "text") == "text"
        for item in content
    ):
        return message
    texts = [item["text"] for item in content if item["text"]]
    if texts:
        message["content"] = "\n".join(texts)
    return message


# -- chat formatter -----------------------------------------------------------


def _chat_text(turn: Turn, index: int, block: Block) -> None:
    turn.parts.append({"text": block["text"]})


def _chat_media(turn: Turn, index: int, block: Block) -> None:
    turn.parts.append(_media_item(turn.ctx, turn.msg, index, block))


def _chat_tool_use(turn: Turn, index: int, block: Block) -> None:
    turn.tool_calls.append(tool_call(block))


_CHAT_BLOCKS: dict[str, Handler] = {
    "text": _chat_text,
    **dict.fromkeys(_MEDIA_KINDS, _chat_media),
    "tool_use": _chat_tool_use,
    "tool_result": tool_result_handler(tool_message, kinds=_MEDIA_KINDS, noun="media"),
}


def _finish_chat(turn: Turn) -> None:
    formatted: Block = {"role": turn.msg.role, "content": turn.parts}
    if turn.tool_calls:
        formatted["tool_calls"] = turn.tool_calls
    # Tool-call-only messages keep `"content": []` (DashScope rejects a
    # missing or null content); messages with neither are dropped.
    if turn.parts or turn.tool_calls:
        turn.out.append(_collapse_text(formatted))


_CHAT = TurnTable(_CHAT_BLOCKS, _finish_chat)


# -- multi-agent formatter ------------------------------------------------------


@dataclass(slots=True)
class _History:
    """One agent-message group being folded into a history user message."""

    ctx: FormatContext
    msg: MsgView
    blocks: list[Block] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def flush(self) -> None:
        if self.lines:
            self.blocks.append({"text": "\n".join(self.lines)})
            self.lines.clear()


def _history_text(history: _History, block: Block, index: int) -> None:
    history.lines.append(f"{history.msg.name}: {block['text']}")


def _history_media(history: _History, block: Block, index: int) -> None:
    # Media interleave with the text: the lines so far become one item first.
    history.flush()
    history.blocks.append(_media_item(history.ctx, history.msg, index, block))


# Other kinds (thinking, unknown) are skipped silently in history, as AgentScope does.
_HISTORY_BLOCKS: dict[str, Callable[[_History, Block, int], None]] = {
    "text": _history_text,
    **dict.fromkeys(_MEDIA_KINDS, _history_media),
}


def _format_history(msgs: list[MsgView], ctx: FormatContext, first: bool) -> list[Block]:
    """DashScopeMultiAgentFormatter._format_agent_message."""
    history = _History(ctx, msgs[0])
    for msg in msgs:
        history.msg = msg
        for index, block in enumerate(msg.get_content_blocks()):
            handler = _HISTORY_BLOCKS.get(block["type"])
            if handler is not None:
                handler(history, block, index)
    history.flush()
    blocks = history.blocks
    if not blocks:
        return []
    wrap_history(blocks, history_prompt(ctx, first), ctx)
    return [_collapse_text({"role": "user", "content": blocks})]


# -- tools ----------------------------------------------------------------------------


def _check_tools(tools: list[Block]) -> None:
    """DashScopeChatModel._format_tools_json_schemas: OpenAI-form schemas, passed as is."""
    for index, tool in enumerate(tools):
        if tool.get("type") != "function" or "function" not in tool:
            raise FormatError(
                f"tools[{index}]",
                "each tool must be a dict with 'type': 'function' and a 'function' key",
            )


def _tool_choice(tool_choice: Any, tools: list[Block] | None) -> str | Block:
    """ChatModelBase._validate_tool_choice + DashScopeChatModel._format_tool_choice."""
    if tool_choice in ("any", "required"):
        # DashScope has no forced mode: AgentScope downgrades both to "auto".
        tool_choice = "auto"
    choice = validate_tool_choice(tool_choice, tools)
    if choice in TOOL_CHOICE_MODES:
        return choice
    return {"type": "function", "function": {"name": choice}}


# -- parsing --------------------------------------------------------------------------


def _check_status(response: Block) -> None:
    """Raise `ProviderError` for an error response (the SDK's non-200 status)."""
    raise_for_error_body(_NAME, response)
    status = response.get("status_code", 200)
    code = response.get("code")
    # Without status_code, a bare `{"code", "message"}` body (the HTTP error
    # body itself) is an error too.
    if status != 200 or (code and response.get("output") is None):
        raise ProviderError(
            _NAME, str(code or status), str(response.get("message") or f"HTTP status {status}")
        )


def _choice(response: Block) -> Block:
    """`output.choices[0]`, checked as the SDK's response classes would build it."""
    output = expect(response.get("output"), dict, "output")
    choices = output.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ParseError("output.choices", "expected a non-empty list")
    for index, item in enumerate(choices):
        message = expect(item, dict, f"output.choices[{index}]").get("message")
        # The SDK builds a Message (which needs a role) from every non-empty one.
        if message:
            path = f"output.choices[{index}].message"
            if "role" not in expect(message, dict, path):
                raise ParseError(f"{path}.role", "missing")
    first: Block = choices[0]
    if not first.get("message"):
        raise ParseError("output.choices[0].message", "missing")
    return first


def _count(details: Any, key: str, path: str) -> int | None:
    if not isinstance(details, dict) or details.get(key) is None:
        return None
    value: int = expect(details[key], int, f"{path}.{key}")
    return value


def _usage(response: Block) -> dict[str, int | float]:
    # The SDK builds usage from `{}` when there is none, so AgentScope reports
    # zeros rather than no usage.
    raw = response.get("usage") or {}
    expect(raw, dict, "usage")
    usage: dict[str, int | float] = {
        "input_tokens": expect(raw.get("input_tokens", 0), int, "usage.input_tokens"),
        "output_tokens": expect(raw.get("output_tokens", 0), int, "usage.output_tokens"),
    }
    extras = {
        "cache_read_input_tokens": ("prompt_tokens_details", "cached_tokens"),
        "cache_creation_input_tokens": ("prompt_tokens_details", "cache_creation_input_tokens"),
        "reasoning_tokens": ("output_tokens_details", "reasoning_tokens"),
    }
    for name, (group, key) in extras.items():
        value = _count(raw.get(group), key, f"usage.{group}")
        if value is not None:
            usage[name] = value
    return usage


def _request_id(response: Block) -> str:
    request_id = response.get("request_id")
    if request_id is None:
        return ""
    value: str = expect(request_id, str, "request_id")
    return value


def _finish_reason(choice: Block) -> str:
    reason = choice.get("finish_reason")
    # Stream chunks carry the string "null" until the last one.
    return reason if isinstance(reason, str) and reason != "null" else ""


def _text(value: Any, path: str) -> Block:
    return {"type": "text", "text": expect(value, str, path)}


def _content_blocks(content: Any, path: str) -> list[Block]:
    """Non-stream message content: a string, or the `text` items of a list."""
    if content is None or content == "" or content == []:
        return []
    if isinstance(content, str):
        return [_text(content, path)]
    if not isinstance(content, list):
        raise ParseError(path, f"expected a string or a list, got {type(content).__name__}")
    return [
        _text(item["text"], f"{path}[{index}].text")
        for index, item in enumerate(content)
        if isinstance(item, dict) and "text" in item
    ]


def _tool_use(call: Any, path: str) -> Block:
    call = expect(call, dict, path)
    function = expect(call.get("function"), dict, f"{path}.function")
    if "name" not in function:
        raise ParseError(f"{path}.function.name", "missing")
    if "id" not in call:
        raise ParseError(f"{path}.id", "missing")
    # Non-stream tool calls carry no raw_input in AgentScope.
    return {
        "type": "tool_use",
        "name": expect(function["name"], str, f"{path}.function.name"),
        "input": loads_with_repair(function.get("arguments", "{}") or "{}"),
        "id": expect(call["id"], str, f"{path}.id"),
    }


def _structured(content: list[Block]) -> dict[str, Any] | None:
    """AgentScope's structured-output metadata: the input of the last tool call."""
    inputs = [block["input"] for block in content if block["type"] == "tool_use"]
    return inputs[-1] if inputs else None


def _parse(response: Block, structured: bool) -> ParsedResponse:
    _check_status(response)
    choice = _choice(response)
    message: Block = choice["message"]
    path = "output.choices[0].message"
    # `reasoning_content` is ignored: AgentScope reads thinking only when streaming.
    content = _content_blocks(message.get("content"), f"{path}.content")
    calls = message.get("tool_calls")
    if calls:
        calls = expect(calls, list, f"{path}.tool_calls")
        content += [_tool_use(call, f"{path}.tool_calls[{i}]") for i, call in enumerate(calls)]
    return ParsedResponse(
        content=content,
        usage=_usage(response),
        response_id=_request_id(response),
        raw_finish_reason=_finish_reason(choice),
        structured_output=_structured(content) if structured else None,
    )


# -- streaming ------------------------------------------------------------------------


def _concat(entry: Block, key: str, value: Any, path: str) -> None:
    entry[key] = entry.get(key, "") + expect(value, str, path)


@dataclass(slots=True)
class _Stream:
    """DashScopeChatModel._parse_dashscope_stream_response, one chunk at a time."""

    tool_parsing: bool
    structured: bool = False
    thinking: str = ""
    text: str = ""
    # Tool calls by the delta's `index`, in first-seen order.
    calls: dict[Any, Block] = field(default_factory=dict)
    # The last parsed input per tool *id* (AgentScope keys it so; ids can collide).
    last_inputs: StreamedInputs = field(default_factory=StreamedInputs)
    metadata: dict[str, Any] | None = None
    request_id: str | None = None
    usage: dict[str, int | float] | None = None
    finish_reason: str = ""
    last: ParsedResponse | None = None
    events: int = 0

    def feed(self, event: Block) -> ParsedResponse | None:
        chunk = self.events
        self.events += 1
        try:
            return self._feed(event)
        except ParseError as exc:
            raise ParseError(f"chunk[{chunk}].{exc.path}", exc.reason) from None

    def _feed(self, event: Block) -> ParsedResponse | None:
        _check_status(event)
        if self.request_id is None:
            # Only the first chunk's request id counts (an empty one stays empty).
            self.request_id = _request_id(event)
        choice = _choice(event)
        self.finish_reason = _finish_reason(choice) or self.finish_reason
        message: Block = choice["message"]
        path = "output.choices[0].message"
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str):
            self.thinking += reasoning
        content = message.get("content")
        if isinstance(content, str):
            self.text += content
        elif isinstance(content, list):
            for index, item in enumerate(content):
                if isinstance(item, dict) and "text" in item:
                    self.text += expect(item["text"], str, f"{path}.content[{index}].text")
        calls = message.get("tool_calls", [])
        if isinstance(calls, (dict, str)) and not calls:
            calls = []
        for index, call in enumerate(expect(calls, list, f"{path}.tool_calls")):
            self._add_call(call, f"{path}.tool_calls[{index}]")
        blocks = self._blocks()
        # Usage comes from every chunk (zeros where a chunk has none).
        self.usage = _usage(event)
        if not blocks:
            return None
        self.last = ParsedResponse(
            content=blocks,
            usage=self.usage,
            response_id=self.request_id,
            raw_finish_reason=self.finish_reason,
            structured_output=self.metadata,
        )
        return self._copy(self.last)

    def _add_call(self, call: Any, path: str) -> None:
        call = expect(call, dict, path)
        key = call.get("index", 0)
        try:
            hash(key)
        except TypeError:
            raise ParseError(f"{path}.index", "expected a number") from None
        if "id" in call:
            entry = self.calls.setdefault(key, {})
            # Quirk: an id that differs from the one so far is appended to it.
            if call["id"] != entry.get("id"):
                _concat(entry, "id", call["id"], f"{path}.id")
        if "function" in call:
            function = expect(call["function"], dict, f"{path}.function")
            # Quirk: names are concatenated too, so a repeated name doubles.
            for name in ("name", "arguments"):
                if name in function:
                    entry = self.calls.setdefault(key, {})
                    _concat(entry, name, function[name], f"{path}.function.{name}")

    def _blocks(self) -> list[Block]:
        blocks: list[Block] = []
        if self.thinking:
            blocks.append({"type": "thinking", "thinking": self.thinking})
        if self.text:
            blocks.append({"type": "text", "text": self.text})
        for call in self.calls.values():
            block = streamed_tool_use(
                call.get("id", ""),
                call.get("name", ""),
                call.get("arguments"),
                self.last_inputs,
                self.tool_parsing,
            )
            blocks.append(block)
            if self.structured:
                # Kept across chunks, like AgentScope's `metadata` variable.
                self.metadata = block["input"]
        return blocks

    @staticmethod
    def _copy(result: ParsedResponse) -> ParsedResponse:
        return ParsedResponse(
            content=copy_json(result.content),
            usage=result.usage,
            response_id=result.response_id,
            raw_finish_reason=result.raw_finish_reason,
            structured_output=copy_json(result.structured_output),
        )

    def finish(self) -> ParsedResponse:
        if self.last is None:
            return ParsedResponse(
                content=[],
                usage=self.usage,
                response_id=self.request_id or "",
                raw_finish_reason=self.finish_reason,
                structured_output=self.metadata,
            )
        result = self._copy(self.last)
        result.raw_finish_reason = self.finish_reason
        if not self.tool_parsing and self.calls:
            # stream_tool_parsing=False: one extra final snapshot with the
            # inputs parsed at last, and the latest chunk's usage.
            result.usage = self.usage
            repaired = repair_tool_inputs(result.content)
            result.structured_output = repaired if self.structured else None
        return result


# -- provider -------------------------------------------------------------------------


# Where each request parameter goes in the body, which holds the SDK call's
# keyword arguments (`MultiModalConversation.call`, which moves them into
# `input`/`parameters`). A stream also asks for `incremental_output`, as
# AgentScope's DashScopeChatModel does: each event then carries only what is
# new, which is what this module's stream parser reads.
_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop",
    seed="seed",
    stream=("stream", "incremental_output"),
)


class DashScopeParity(Variant):
    """AgentScope 1.0.21's DashScopeChatFormatter / DashScopeMultiAgentFormatter
    and DashScopeChatModel."""

    turns = _CHAT

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            # TruncatedFormatterBase._format with DashScope's system and group formatting.
            history_prompt(ctx)  # checked before any message is formatted
            return format_multi_agent(msgs, ctx, system_text, self.format_chat, _format_history)
        return self.format_chat(msgs, ctx)

    def format_chat(self, msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
        """DashScopeChatFormatter._format."""
        return format_turns(msgs, ctx, self.turns)

    def build_body(
        self,
        messages: list[Block],
        tools: list[Block] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> Block:
        body: Block = {"messages": messages}
        if tools:
            _check_tools(tools)
            body["tools"] = tools
        if tool_choice:
            body["tool_choice"] = _tool_choice(tool_choice, tools)
        return body

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        return _parse(response, options.structured_output)

    def stream(self, options: ParseSettings) -> _Stream:
        return _Stream(options.stream_tool_parsing, options.structured_output)


# -- provider fidelity ----------------------------------------------------------------


def _adapt_messages(body: Json, note: Notes) -> None:
    """The pass: no message without content where no tool call stands in for it."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    kept = []
    for index, message in enumerate(messages):
        if (
            isinstance(message, dict)
            and message.get("content") is None
            and not message.get("tool_calls")
        ):
            note(
                f"messages[{index}]", str(message.get("role")), "dropped a message without content"
            )
            continue
        kept.append(message)
    body["messages"] = kept


def _as_message_format(response: Block) -> Block:
    """A `result_format="text"` response (or chunk) in the `"message"` format
    the parsers read: its `output.text` as the one choice's message content,
    its `output.finish_reason` as the choice's. Any other response as it is."""
    output = response.get("output")
    if not isinstance(output, dict) or output.get("choices") is not None or "text" not in output:
        return response
    text = expect(output["text"], (str, type(None)), "output.text")
    choice = {
        "finish_reason": output.get("finish_reason"),
        "message": {"role": "assistant", "content": text or ""},
    }
    rest = {key: value for key, value in output.items() if key not in ("text", "finish_reason")}
    return {**response, "output": {**rest, "choices": [choice]}}


def _with_reasoning(result: ParsedResponse, response: Block) -> ParsedResponse:
    """The complete response's `reasoning_content` as the thinking block first
    (AgentScope reads it only when streaming)."""
    output = response.get("output")
    choices = output.get("choices") if isinstance(output, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices else None
    reasoning = message.get("reasoning_content") if isinstance(message, dict) else None
    path = "output.choices[0].message.reasoning_content"
    if expect(reasoning, (str, type(None)), path):
        result.content = [{"type": "thinking", "thinking": reasoning}, *result.content]
    return result


@dataclass(slots=True)
class _KeptStream(_Stream):
    """The stream in provider fidelity: `result_format="text"` chunks too."""

    def _feed(self, event: Block) -> ParsedResponse | None:
        return _Stream._feed(self, _as_message_format(event))


class DashScope(ProviderFidelity, DashScopeParity):
    """The native API in provider fidelity (see the module's docstring)."""

    conversation = "messages"

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        message_format = _as_message_format(response)
        return _with_reasoning(_parse(message_format, options.structured_output), message_format)

    def stream(self, options: ParseSettings) -> _Stream:
        return _KeptStream(options.stream_tool_parsing, options.structured_output)

    def adapt(self, body: Block, note: Notes) -> None:
        _adapt_messages(body, note)


PROVIDER = Provider(
    enum=PROVIDER_DASHSCOPE,
    options=frozenset(
        {
            "promote_tool_result_images",
            "promote_tool_result_audios",
            "promote_tool_result_videos",
            "conversation_history_prompt",
        }
    ),
    formatted_blocks=frozenset({"text", "tool_use", "tool_result", "image", "audio", "video"}),
    # Thinking and unknown blocks: warned about and skipped by the chat
    # formatter, skipped silently in multi-agent history.
    dropped_blocks=frozenset({"thinking", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # None: its multimodal messages take images, audio and video.
    document_types=frozenset(),
    agentscope=DashScopeParity,
    provider=DashScope,
    compiled=DASHSCOPE,
)
