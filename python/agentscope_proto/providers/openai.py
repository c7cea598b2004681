"""OpenAI: requests as AgentScope's OpenAIChatFormatter/OpenAIMultiAgentFormatter + OpenAIChatModel
build them; responses as OpenAIChatModel parses them.

DeepSeek speaks the same Chat Completions dialect through the same model class, so its
provider subclasses `OpenAIChat` (body builder and parsers). AgentScope's Responses API
formatters convert images and audio with the same helpers as the OpenAI ones
(openai_media.py, re-exported here), so `openai_responses.py` uses the media
conversion and the multi-agent history walk here.

Beyond AgentScope (chat_extras.py), in provider fidelity: citations from
`annotations`, reasoning sent back under the key it came from, structured output
from the JSON content; `response_format` for a response schema. Nothing goes into
the Msg's `metadata` beyond AgentScope's structured output.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_OPENAI
from ..errors import ParseError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse
from ._context import FormatContext
from ._documents import document
from ._history import format_multi_agent, history_prompt, history_text, system_blocks
from ._parse import (
    StreamedInputs,
    expect,
    loads_with_repair,
    raise_for_error_body,
    repair_tool_inputs,
    streamed_tool_use,
)
from ._provider import UNKNOWN_TO_AGENTSCOPE
from ._tools import TOOL_CHOICE_MODES, tool_call, tool_message, validate_tool_choice
from ._turns import Handler, Turn, format_turns, tool_result_handler
from .chat_extras import (
    add_citations,
    message_annotations,
    message_extras,
    provider_handlers,
    reasoning_field,
    structured_output,
    with_reasoning,
)
from .openai_media import audio_part, image_block_url, image_url

__all__ = [
    "PROVIDER",
    "ChatCompletionStream",
    "OpenAIChat",
    "audio_part",
    "build_chat_body",
    "history_media",
    "image_block_url",
    "image_url",
    "parse_completion",
]

Block = dict[str, Any]


# -- OpenAIChatFormatter ----------------------------------------------------------


def _chat_text(turn: Turn, index: int, block: Block) -> None:
    # A shallow copy: extra keys (cache_control, ...) go to the API as they are.
    turn.parts.append({**block})


def _chat_tool_use(turn: Turn, index: int, block: Block) -> None:
    turn.tool_calls.append(tool_call(block))


def _image_part(block: Block, ctx: FormatContext) -> Block:
    """`_format_openai_image_block`."""
    return {"type": "image_url", "image_url": {"url": image_block_url(block, ctx)}}


def _chat_image(turn: Turn, index: int, block: Block) -> None:
    turn.parts.append(_image_part(block, turn.ctx))


def _chat_audio(turn: Turn, index: int, block: Block) -> None:
    # Assistant audio (a multimodal model's own output) is dropped unchecked and
    # without a warning.
    if turn.msg.role != "assistant":
        turn.parts.append(audio_part(block, turn.ctx))


_CHAT_BLOCKS: dict[str, Handler] = {
    "text": _chat_text,
    "tool_use": _chat_tool_use,
    "tool_result": tool_result_handler(tool_message),
    "image": _chat_image,
    "audio": _chat_audio,
}


def _finish_chat(turn: Turn) -> None:
    message: Block = {"role": turn.msg.role, "name": turn.msg.name, "content": turn.parts or None}
    if turn.tool_calls:
        message["tool_calls"] = turn.tool_calls
    if turn.parts or turn.tool_calls:
        turn.out.append(message)


def _chat_document(turn: Turn, index: int, block: Block) -> None:
    # Chat Completions' `file` part (a PDF): inlined, it has no URL form.
    found = document(block, turn.ctx, keep_url=False)
    file = {"filename": found.name or "document.pdf", "file_data": found.data_url()}
    turn.parts.append({"type": "file", "file": file})


_PROVIDER_BLOCKS = {**provider_handlers(_CHAT_BLOCKS), "data": _chat_document}  # chat_extras.py
_finish_provider = with_reasoning(_finish_chat)


def _format_chat(msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
    """`OpenAIChatFormatter._format`."""
    if ctx.settings.fidelity == "provider":
        return format_turns(msgs, ctx, _PROVIDER_BLOCKS, _finish_provider)
    return format_turns(msgs, ctx, _CHAT_BLOCKS, _finish_chat)


# -- OpenAIMultiAgentFormatter -----------------------------------------------------


def history_media(
    group: list[MsgView], ctx: FormatContext, image_part: Callable[[Block, FormatContext], Block]
) -> tuple[list[str], list[Block]]:
    """The walk of `_format_agent_message` in AgentScope's OpenAI multi-agent
    formatters (Chat Completions and Responses): the `name: text` lines, and the
    group's images followed by its audio (assistant audio is left out). Other
    kinds are skipped without a warning."""
    lines: list[str] = []
    images: list[Block] = []
    audios: list[Block] = []
    for msg in group:
        for at, block in enumerate(msg.get_content_blocks()):
            kind = block.get("type")
            if kind == "text":
                lines.append(f"{msg.name}: {block['text']}")
            elif kind == "image":
                ctx.at(msg, at)
                images.append(image_part(block, ctx))
            elif kind == "audio" and msg.role != "assistant":
                ctx.at(msg, at)
                audios.append(audio_part(block, ctx))
    return lines, images + audios


def _format_agent_message(group: list[MsgView], ctx: FormatContext, first: bool) -> list[Block]:
    """One user message: all history text in one part, then images, then audio."""
    lines, media = history_media(group, ctx, _image_part)
    text = history_text(lines, history_prompt(ctx, first))
    content = ([{"type": "text", "text": text}] if text else []) + media
    return [{"role": "user", "content": content}] if content else []


# -- OpenAIChatModel: request body ---------------------------------------------------


def build_chat_body(
    messages: list[Block], tools: list[Block] | None, tool_choice: Any, ctx: FormatContext
) -> Block:
    """The Chat Completions body in `OpenAIChatModel.__call__`'s kwargs order."""
    body: Block = {"messages": messages}
    if tools:
        # `_format_tools_json_schemas` is the identity for OpenAI.
        body["tools"] = tools
    if tool_choice:
        if tool_choice == "any":
            # Deprecated alias; AgentScope warns through `warnings`, not its logger.
            tool_choice = "required"
        choice = validate_tool_choice(tool_choice, tools)
        body["tool_choice"] = (
            choice
            if choice in TOOL_CHOICE_MODES
            else {"type": "function", "function": {"name": choice}}
        )
    return body


# -- OpenAIChatModel: responses --------------------------------------------------------


def _audio_format(options: ParseSettings, default: str) -> str:
    # AgentScope reads the model's `generate_kwargs["audio"]["format"]`, whose
    # default differs between streamed and complete responses.
    return options.audio_format or default


def _int_or_none(value: Any, path: str) -> int | None:
    if value is None:
        return None
    return int(expect(value, int, path))


def _parse_usage(raw: Any, path: str) -> dict[str, Any] | None:
    """`ChatUsage` from a Chat Completions `usage` (`{}` still counts: the SDK
    object is truthy; missing counts are None)."""
    if not isinstance(raw, dict) and not raw:
        return None
    raw = expect(raw, dict, path)
    usage: dict[str, Any] = {
        "input_tokens": _int_or_none(raw.get("prompt_tokens"), f"{path}.prompt_tokens"),
        "output_tokens": _int_or_none(raw.get("completion_tokens"), f"{path}.completion_tokens"),
    }
    prompt = expect(raw.get("prompt_tokens_details") or {}, dict, f"{path}.prompt_tokens_details")
    cached = prompt.get("cached_tokens")
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")  # DeepSeek's own field
    if cached is not None:
        usage["cache_read_input_tokens"] = _int_or_none(cached, f"{path}.cached_tokens")
    completion = expect(
        raw.get("completion_tokens_details") or {}, dict, f"{path}.completion_tokens_details"
    )
    reasoning = completion.get("reasoning_tokens")
    if reasoning is not None:
        usage["reasoning_tokens"] = _int_or_none(reasoning, f"{path}.reasoning_tokens")
    return usage


def _reasoning(message: Block) -> str | None:
    """`reasoning_content` if it is a string, else `reasoning` if that is one."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str):
            return value
    return None


def _finish_reason(choice: Block) -> str:
    value = choice.get("finish_reason")
    return value if isinstance(value, str) else ""


def _message_thinking(message: Block, path: str, options: ParseSettings) -> Iterator[Block]:
    reasoning = _reasoning(message)
    # An empty string still gives a (empty) thinking block.
    if reasoning is not None:
        yield {"type": "thinking", "thinking": reasoning}


def _message_text(message: Block, path: str, options: ParseSettings) -> Iterator[Block]:
    if message.get("content"):
        yield {"type": "text", "text": expect(message["content"], str, f"{path}.content")}


def _message_audio(message: Block, path: str, options: ParseSettings) -> Iterator[Block]:
    audio = message.get("audio")
    if not audio:
        return
    audio = expect(audio, dict, f"{path}.audio")
    source = {
        "data": expect(audio.get("data"), str, f"{path}.audio.data"),
        "media_type": f"audio/{_audio_format(options, 'mp3')}",
        "type": "base64",
    }
    yield {"type": "audio", "source": source}
    if audio.get("transcript"):
        yield {"type": "text", "text": expect(audio["transcript"], str, f"{path}.audio.transcript")}


def _call_arguments(call: Any, path: str) -> tuple[str, str, str]:
    call = expect(call, dict, path)
    # A `custom` tool call has no `function`; AgentScope crashes on it.
    function = expect(call.get("function"), dict, f"{path}.function")
    return (
        expect(call.get("id"), str, f"{path}.id"),
        expect(function.get("name"), str, f"{path}.function.name"),
        expect(function.get("arguments"), str, f"{path}.function.arguments"),
    )


def _message_tool_calls(message: Block, path: str, options: ParseSettings) -> Iterator[Block]:
    calls = expect(message.get("tool_calls") or [], list, f"{path}.tool_calls")
    for index, call in enumerate(calls):
        call_id, name, arguments = _call_arguments(call, f"{path}.tool_calls[{index}]")
        # No raw_input in non-stream mode.
        yield {
            "type": "tool_use",
            "id": call_id,
            "name": name,
            "input": loads_with_repair(arguments),
        }


# AgentScope's fixed block order: thinking, text, audio (+ transcript), tool calls.
_MESSAGE_PARTS: tuple[Callable[[Block, str, ParseSettings], Iterator[Block]], ...] = (
    _message_thinking,
    _message_text,
    _message_audio,
    _message_tool_calls,
)


def parse_completion(provider: str, response: Block, options: ParseSettings) -> ParsedResponse:
    """`OpenAIChatModel._parse_openai_completion_response` (only `choices[0]` is read)."""
    raise_for_error_body(provider, response)
    content: list[Block] = []
    structured: Block | None = None
    finish = ""
    choices = response.get("choices")
    if choices:
        choices = expect(choices, list, "choices")
        choice = expect(choices[0], dict, "choices[0]")
        message = expect(choice.get("message"), dict, "choices[0].message")
        path = "choices[0].message"
        content = [block for part in _MESSAGE_PARTS for block in part(message, path, options)]
        finish = _finish_reason(choice)
        if options.structured_output and message.get("tool_calls"):
            # Without a parsed `response_format`, the first tool call's arguments.
            first = _call_arguments(message["tool_calls"][0], f"{path}.tool_calls[0]")
            structured = loads_with_repair(first[2])
        if options.fidelity == "provider":
            extra = message_extras(message, path, content, structured)
            structured = extra if options.structured_output else None
    response_id = response.get("id")
    return ParsedResponse(
        content=content,
        usage=_parse_usage(response.get("usage"), "usage"),
        response_id=response_id if isinstance(response_id, str) else "",
        raw_finish_reason=finish,
        structured_output=structured,
    )


@dataclass(slots=True)
class _StreamedCall:
    id: str
    name: str
    arguments: str


class ChatCompletionStream:
    """`OpenAIChatModel._parse_openai_stream_response` over chunk JSONs."""

    def __init__(self, provider: str, options: ParseSettings) -> None:
        self._provider = provider
        self._options = options
        self._chunks = 0
        self._response_id: str | None = None
        self._usage: dict[str, Any] | None = None
        self._finish = ""
        self._text = ""
        self._thinking = ""
        self._audio = ""
        self._calls: dict[Any, _StreamedCall] = {}
        # Last parsed input per tool call *id* (AgentScope keys it so).
        self._inputs = StreamedInputs()
        self._structured: Block | None = None
        self._contents: list[Block] = []
        # Provider fidelity: where the reasoning came from, and the citations.
        self._field: str | None = None
        self._cited: list[Any] = []
        self._last: ParsedResponse | None = None

    def _result(self, content: list[Block], structured: Block | None) -> ParsedResponse:
        return ParsedResponse(
            content=content,
            usage=self._usage,
            response_id=self._response_id or "",
            raw_finish_reason=self._finish,
            structured_output=structured,
        )

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        path = f"chunk[{self._chunks}]"
        self._chunks += 1
        raise_for_error_body(self._provider, event)
        if self._response_id is None:
            # Only the first chunk's id counts, even "" (then the id is invented).
            chunk_id = event.get("id")
            self._response_id = chunk_id if isinstance(chunk_id, str) or chunk_id is None else ""
        if isinstance(event.get("usage"), dict) or event.get("usage"):
            # Any usage object counts, even `{}` (its counts are then None).
            self._usage = _parse_usage(event["usage"], f"{path}.usage")
        choices = event.get("choices")
        if not choices:
            # A usage-only chunk repeats the last content with the usage.
            if self._usage is not None and self._contents:
                return self._snapshot(list(self._contents))
            return None
        choices = expect(choices, list, f"{path}.choices")
        choice = expect(choices[0], dict, f"{path}.choices[0]")
        self._finish = _finish_reason(choice) or self._finish
        delta = expect(choice.get("delta") or {}, dict, f"{path}.choices[0].delta")
        self._absorb(delta, f"{path}.choices[0].delta")
        self._contents = self._build()
        return self._snapshot(self._contents) if self._contents else None

    def _snapshot(self, content: list[Block]) -> ParsedResponse:
        self._last = self._result(content, self._structured)
        return self._last

    def _absorb(self, delta: Block, path: str) -> None:
        self._thinking += _reasoning(delta) or ""
        if self._options.fidelity == "provider":
            self._field = self._field or reasoning_field(delta)
            self._cited += message_annotations(delta, path)
        if delta.get("content"):
            self._text += expect(delta["content"], str, f"{path}.content")
        if "audio" in delta:
            # A null `audio` crashes AgentScope (`"data" in None`).
            audio = expect(delta["audio"], dict, f"{path}.audio")
            if "data" in audio:
                self._audio += expect(audio["data"], str, f"{path}.audio.data")
            if "transcript" in audio:
                self._text += expect(audio["transcript"], str, f"{path}.audio.transcript")
        calls = expect(delta.get("tool_calls") or [], list, f"{path}.tool_calls")
        for index, call in enumerate(calls):
            self._absorb_call(
                expect(call, dict, f"{path}.tool_calls[{index}]"), f"{path}.tool_calls[{index}]"
            )

    def _absorb_call(self, call: Block, path: str) -> None:
        key = call.get("index")
        if isinstance(key, (dict, list)):
            raise ParseError(f"{path}.index", f"expected an integer, got {type(key).__name__}")
        function = expect(call.get("function"), dict, f"{path}.function")
        arguments = function.get("arguments")
        if key in self._calls:
            if arguments is not None:
                self._calls[key].arguments += expect(arguments, str, f"{path}.function.arguments")
            return
        # The first delta of a call names it; later ones only add arguments.
        self._calls[key] = _StreamedCall(
            expect(call.get("id"), str, f"{path}.id"),
            expect(function.get("name"), str, f"{path}.function.name"),
            expect(arguments or "", str, f"{path}.function.arguments"),
        )

    def _build(self) -> list[Block]:
        content: list[Block] = []
        if self._thinking:
            content.append({"type": "thinking", "thinking": self._thinking})
        if self._audio:
            # Streams default to wav (non-stream responses to mp3).
            media_type = f"audio/{_audio_format(self._options, 'wav')}"
            source = {"data": self._audio, "media_type": media_type, "type": "base64"}
            content.append({"type": "audio", "source": source})
        if self._text:
            content.append({"type": "text", "text": self._text})
            if self._options.structured_output:
                self._structured = loads_with_repair(self._text)
        parse = self._options.stream_tool_parsing
        for call in self._calls.values():
            content.append(
                streamed_tool_use(call.id, call.name, call.arguments, self._inputs, parse)
            )
        if self._options.fidelity == "provider":
            add_citations(content, self._cited, self._field)
        return content

    def finish(self) -> ParsedResponse:
        last = self._last
        if last is None:
            # AgentScope yields nothing at all here.
            return self._result([], None)
        if self._options.stream_tool_parsing or not self._calls:
            # A copy of the last snapshot (the caller annotates each result it gets).
            return ParsedResponse(
                content=list(last.content),
                usage=last.usage,
                response_id=last.response_id,
                raw_finish_reason=self._finish,
                structured_output=last.structured_output,
            )
        # One extra response with every tool input repaired from its raw text.
        content = copy.deepcopy(last.content)
        structured = repair_tool_inputs(content)
        return self._result(content, structured if self._options.structured_output else None)


# -- the provider ---------------------------------------------------------------------


# Where Chat Completions takes each request parameter (docs/request-params.md):
# the output budget as `max_completion_tokens`, which OpenAI documents in place
# of the deprecated `max_tokens` (its reasoning models refuse that one).
REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_completion_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop",
    seed="seed",
    stream="stream",
)


class OpenAIChat:
    """OpenAIChatModel with AgentScope's OpenAI formatters (DeepSeek subclasses it:
    the same model class, its own formatters)."""

    name = "openai"
    enum = PROVIDER_OPENAI
    options = frozenset(
        {
            "promote_tool_result_images",
            "conversation_history_prompt",
            "response_schema",
            "response_schema_name",
        }
    )
    formatted_blocks = frozenset({"text", "tool_use", "tool_result", "image", "audio"})
    dropped_blocks = frozenset({"thinking", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE
    framing = "sse"
    request_fields = REQUEST_FIELDS
    # `file` parts take PDFs (inlined: Chat Completions has no URL form).
    document_types = frozenset({"application/pdf"})

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            return format_multi_agent(msgs, ctx, system_blocks, _format_chat, _format_agent_message)
        return _format_chat(msgs, ctx)

    def build_body(
        self,
        messages: list[Block],
        tools: list[Block] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> Block:
        body = build_chat_body(messages, tools, tool_choice, ctx)
        settings = ctx.settings
        structured_output(body, settings.response_schema, settings.response_schema_name, ctx)
        return body

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        return parse_completion(self.name, response, options)

    def stream(self, options: ParseSettings) -> ChatCompletionStream:
        return ChatCompletionStream(self.name, options)


PROVIDER = OpenAIChat()
