"""OpenAI Chat Completions, the API of the Chat Completions family.

`ChatCompletionsParity` is AgentScope 1.0.21's: requests as its
OpenAIChatFormatter/OpenAIMultiAgentFormatter + OpenAIChatModel build them,
responses as OpenAIChatModel parses them. `ChatCompletions` is provider
fidelity, the parity variant with what differs overridden:

- parse: `message.annotations` (OpenAI's `url_citation`s, streamed in `delta`s
  too) become the text block's `citations`, each annotation verbatim; a
  `message.refusal` (streamed too) is a text block of the refusal marked
  `"refusal": true`, before the calls; the choice's token `logprobs`
  (`choices[].logprobs.content`, verbatim; streamed, each chunk's pieces in
  order) go on the message's text block as `logprobs`, the refusal's
  (`logprobs.refusal`) on the refusal's block; a thinking block records
  the key its reasoning came under in `reasoning_field`:
  `"reasoning_content"` (DeepSeek, Kimi, Qwen...) or `"reasoning"` (vLLM
  since it renamed the field, Groq); the structured output
  is the message content, JSON (what AgentScope gets from the SDK's
  `message.parsed` when it asks with `response_format`), else the first tool
  call's arguments as before (the golden responses come from `create`, where
  `parsed` does not exist).
- format: thinking goes back on the assistant message under the key it came
  from (`reasoning_field`), so a server that wants its reasoning back in a tool
  loop (DeepSeek's thinking mode, Kimi, vLLM) gets it where it reads it; to
  OpenAI, thinking without `reasoning_field` (another provider's) is still
  dropped, as AgentScope does. A text marked `refusal` goes back as an
  assistant `refusal` part. Citations are not sent back (request messages
  take no annotations: dropped silently), nor the text marks no request
  reads (`logprobs`, the Responses API's `phase`). Server-tool blocks of other
  providers are dropped with a FormatWarning, grounding blocks silently (the
  text they ground is sent). A PDF (`data`) goes as a `file` part.
- the body: the pass (`adapt_chat_messages`) makes it one the Chat
  Completions request schema accepts.

Structured output (`response_schema`), both fidelities, as OpenAIChatModel with
a `structured_model`: `response_format` json_schema (`strict`), tools and
tool_choice left out (a warning when there were some).

A provider that speaks Chat Completions is these two classes with its own
`Provider` record: DeepSeek (`deepseek.py`) changes the formatter; a provider
AgentScope 1.0.21 has no formatter for registers `ChatCompletions` (or a
subclass with its quirks) alone. AgentScope's Responses API formatters share
the media conversion and the multi-agent history walk here
(`openai_responses.py`).
"""

from __future__ import annotations

import base64
import copy
import json
import mimetypes
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from .._core import OPENAI_CHAT
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_OPENAI
from ..errors import FormatError, ParseError, UnsupportedMediaError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, copy_json
from ._adapt import Json, Notes, empty, note_text, prune, without_text_marks, wrap_bare_tools
from ._between import CallIds
from ._context import FormatContext
from ._documents import document
from ._history import format_multi_agent, history_prompt, history_text, system_blocks
from ._media import sniff_image
from ._parse import (
    StreamedInputs,
    expect,
    loads_with_repair,
    raise_for_error_body,
    repair_tool_inputs,
    streamed_tool_use,
)
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider, ProviderFidelity, Variant
from ._tools import TOOL_CHOICE_MODES, tool_call, tool_message, validate_tool_choice, without_tools
from ._turns import (
    Handler,
    Turn,
    TurnTable,
    foreign_block_handler,
    format_turns,
    skipped_block,
    tool_result_handler,
)

__all__ = [
    "CHAT_DROPPED_BLOCKS",
    "CHAT_FORMATTED_BLOCKS",
    "CHAT_OPTIONS",
    "CHAT_PARTS",
    "CHAT_REQUEST_FIELDS",
    "CHAT_TOOL_MESSAGE",
    "PROVIDER",
    "ChatCompletionStream",
    "ChatCompletions",
    "ChatCompletionsParity",
    "KeptChatCompletionStream",
    "adapt_chat_messages",
    "audio_part",
    "chat_message_pass",
    "history_media",
    "image_block_url",
    "image_url",
    "native_handlers",
    "with_reasoning",
]

Block = dict[str, Any]
_REASONING_KEYS = ("reasoning_content", "reasoning")


# -- media (AgentScope's OpenAI formatters, Chat Completions and Responses) ---------

# Extensions `_to_openai_image_url` trusts (case-sensitively) before sniffing.
_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _read(ctx: FormatContext, path: str) -> bytes:
    try:
        return ctx.read_file(path)
    except OSError as exc:
        raise FormatError(ctx.location, f"cannot read {path!r}: {exc.strerror}") from None


def image_url(url: str, ctx: FormatContext) -> str:
    """AgentScope's `_to_openai_image_url`: a local image becomes a data URL, a
    web URL stays as it is (errors name `ctx.location`)."""
    raw = url.removeprefix("file://")
    if ctx.exists(raw) and ctx.is_file(raw):
        if raw.endswith(_IMAGE_EXTENSIONS):
            # The mime comes from the lowered extension, so `.jpg` gives `image/jpg`.
            return f"data:image/{raw.lower().split('.')[-1]};base64,{_b64(_read(ctx, raw))}"
        data = _read(ctx, raw)
        mime = sniff_image(data)
        if mime is not None:
            return f"data:{mime};base64,{_b64(data)}"
    if ctx.is_web_url(raw):
        return url
    raise FormatError(
        ctx.location, f'Invalid image URL: "{url}". It should be a local file or a web URL.'
    )


def image_block_url(block: Block, ctx: FormatContext) -> str:
    """The URL an image block goes out as: `image_url` of its URL, or a data URL."""
    source = block["source"]
    if source["type"] == "url":
        return image_url(source["url"], ctx)
    if source["type"] == "base64":
        return f"data:{source['media_type']};base64,{source['data']}"
    raise FormatError(ctx.location, f"Unsupported image source type: {source['type']}")


def audio_part(block: Block, ctx: FormatContext) -> Block:
    """AgentScope's `_to_openai_audio_data` wrapped as an `input_audio` part: wav
    and mp3 only, local files read, web URLs downloaded."""
    source = block["source"]
    if source["type"] == "base64":
        media_type = source["media_type"]
        if media_type not in ("audio/wav", "audio/mp3"):
            raise UnsupportedMediaError(
                ctx.location,
                f"Unsupported audio media type: {media_type}, "
                "only audio/wav and audio/mp3 are supported.",
            )
        audio = {"data": source["data"], "format": media_type.split("/")[-1]}
        return {"type": "input_audio", "input_audio": audio}
    url = source["url"]
    raw = url.removeprefix("file://")
    extension = raw.split(".")[-1].lower()
    if extension not in ("wav", "mp3"):
        raise UnsupportedMediaError(
            ctx.location,
            f"Unsupported audio file extension: {extension}, wav and mp3 are supported.",
        )
    if ctx.exists(raw):
        data = _read(ctx, raw)
    elif ctx.is_web_url(raw):
        try:
            data = ctx.download(url)
        except OSError as exc:
            raise FormatError(ctx.location, f"cannot download {url!r}: {exc}") from None
    else:
        raise FormatError(
            ctx.location,
            f"Unsupported audio source: {url}, it should be a local file or a web URL.",
        )
    return {"type": "input_audio", "input_audio": {"data": _b64(data), "format": extension}}


def media_url(block: Block, ctx: FormatContext, default_type: str) -> str:
    """A media block as the URL a family member's URL part takes (Ark's and
    GLM's `video_url`, GLM's `file_url`): a web URL as it is, inline data or
    a local file (read within the caller's permission) as a data URL, typed
    by the block, else by the file's extension, else `default_type`."""
    source = block["source"]
    if source["type"] == "base64":
        return f"data:{source.get('media_type') or default_type};base64,{source['data']}"
    if source["type"] != "url":
        raise FormatError(ctx.location, f"Unsupported source type: {source['type']}")
    url: str = source["url"]
    if ctx.is_web_url(url):
        return url
    path = url.removeprefix("file://")
    media_type = source.get("media_type") or mimetypes.guess_type(path)[0] or default_type
    return f"data:{media_type};base64,{_b64(_read(ctx, path))}"


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


_CHAT = TurnTable(_CHAT_BLOCKS, _finish_chat)


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


def _build_chat_body(
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


def _structured_output(body: Block, schema: Any, name: str | None, ctx: FormatContext) -> None:
    """OpenAIChatModel with a structured model: `response_format`, no tools."""
    if schema is None:
        return
    without_tools(body, "tool_choice", ctx)
    body["response_format"] = {
        "type": "json_schema",
        "json_schema": {"name": name or "response", "schema": schema, "strict": True},
    }


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
        # DeepSeek's own field, then Moonshot's (beside the prompt count).
        cached = raw.get("prompt_cache_hit_tokens", raw.get("cached_tokens"))
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
        self._last: ParsedResponse | None = None
        # The message's metadata, where a family member's stream keeps some.
        self._metadata: dict[str, Any] | None = None

    def _result(self, content: list[Block], structured: Block | None) -> ParsedResponse:
        return ParsedResponse(
            content=content,
            usage=self._usage,
            response_id=self._response_id or "",
            raw_finish_reason=self._finish,
            structured_output=structured,
            # Every chunk's snapshot takes a copy; most streams keep none.
            metadata=None if self._metadata is None else copy.deepcopy(self._metadata),
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
        self._absorb_choice(choice, f"{path}.choices[0]")
        self._contents = self._build()
        return self._snapshot(self._contents) if self._contents else None

    def _snapshot(self, content: list[Block]) -> ParsedResponse:
        self._last = self._result(content, self._structured)
        return self._last

    def _absorb_choice(self, choice: Block, path: str) -> None:
        delta = expect(choice.get("delta") or {}, dict, f"{path}.delta")
        self._absorb(delta, f"{path}.delta")

    def _absorb(self, delta: Block, path: str) -> None:
        self._thinking += _reasoning(delta) or ""
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
                metadata=None if self._metadata is None else copy.deepcopy(self._metadata),
            )
        # One extra response with every tool input repaired from its raw text.
        content = copy.deepcopy(last.content)
        structured = repair_tool_inputs(content)
        return self._result(content, structured if self._options.structured_output else None)


# Where Chat Completions takes each request parameter (docs/request-params.md):
# the output budget as `max_completion_tokens`, which OpenAI documents in place
# of the deprecated `max_tokens` (its reasoning models refuse that one).
CHAT_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_completion_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop",
    seed="seed",
    stream="stream",
)


# What OpenAI's record declares, for any member of the family to start from:
# the options its formatter takes, and the block kinds it formats or drops.
CHAT_OPTIONS = frozenset(
    {
        "promote_tool_result_images",
        "conversation_history_prompt",
        "response_schema",
        "response_schema_name",
    }
)
CHAT_FORMATTED_BLOCKS = frozenset({"text", "tool_use", "tool_result", "image", "audio"})
CHAT_DROPPED_BLOCKS = frozenset({"thinking", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE


class ChatCompletionsParity(Variant):
    """AgentScope 1.0.21's OpenAIChatFormatter / OpenAIMultiAgentFormatter and
    OpenAIChatModel (a provider of the family may change the formatter)."""

    turns = _CHAT
    # One history message per run of agent messages (multi-agent).
    agent_message = staticmethod(_format_agent_message)
    stream_state: ClassVar[type[ChatCompletionStream]] = ChatCompletionStream

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            return format_multi_agent(
                msgs, ctx, system_blocks, self.format_chat, self.agent_message
            )
        return self.format_chat(msgs, ctx)

    def format_chat(self, msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
        """`OpenAIChatFormatter._format`."""
        return format_turns(msgs, ctx, self.turns)

    def build_body(
        self,
        messages: list[Block],
        tools: list[Block] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> Block:
        body = _build_chat_body(messages, tools, tool_choice, ctx)
        settings = ctx.settings
        _structured_output(body, settings.response_schema, settings.response_schema_name, ctx)
        return body

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        """`OpenAIChatModel._parse_openai_completion_response` (only `choices[0]` is read)."""
        raise_for_error_body(self.name, response)
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
            structured = self._kept(choice, "choices[0]", content, structured, options)
        response_id = response.get("id")
        return ParsedResponse(
            content=content,
            usage=_parse_usage(response.get("usage"), "usage"),
            response_id=response_id if isinstance(response_id, str) else "",
            raw_finish_reason=finish,
            structured_output=structured,
        )

    def _kept(
        self,
        choice: Block,
        path: str,
        content: list[Block],
        structured: Block | None,
        options: ParseSettings,
    ) -> Block | None:
        """What provider fidelity keeps of a completion's choice (`path`: its
        place, `choices[0]`; its `message` is a dict) beyond AgentScope's
        blocks, and the structured output (as AgentScope's here)."""
        return structured

    def stream(self, options: ParseSettings) -> ChatCompletionStream:
        return self.stream_state(self.name, options)


# -- provider fidelity ---------------------------------------------------------------


def _reasoning_field(message: Block) -> str | None:
    """The key `_reasoning` reads the reasoning from."""
    return next((key for key in _REASONING_KEYS if isinstance(message.get(key), str)), None)


def _message_annotations(message: Block, path: str) -> list[Any]:
    value = message.get("annotations")
    return list(expect(value, list, f"{path}.annotations")) if value else []


def _add_refusal(content: list[Block], refusal: Any, path: str) -> None:
    """The message's `refusal` as a text block marked `refusal`, before its calls."""
    if not expect(refusal, (str, type(None)), path):
        return
    at = next((n for n, block in enumerate(content) if block["type"] == "tool_use"), len(content))
    content.insert(at, {"type": "text", "text": refusal, "refusal": True})


def _add_citations(content: list[Block], cited: list[Any], field: str | None) -> None:
    """Mark the thinking block's origin and put the citations on the message's
    text (the first text block: an audio transcript may follow it)."""
    for block in content:
        if block["type"] == "thinking" and field is not None:
            block["reasoning_field"] = field
    text = next((block for block in content if block["type"] == "text"), None)
    if text is not None and cited:
        text["citations"] = list(cited)


def _logprobs(choice: Block, path: str) -> dict[str, list[Any]]:
    """A choice's `logprobs` (`content`, `refusal`: token lists, or null)."""
    found = expect(choice.get("logprobs") or {}, dict, f"{path}.logprobs")
    return {
        key: copy_json(expect(found.get(key) or [], list, f"{path}.logprobs.{key}"))
        for key in _LOGPROB_KINDS
    }


# The token lists of a choice's `logprobs`: the content's, the refusal's.
_LOGPROB_KINDS = ("content", "refusal")


def _add_logprobs(content: list[Block], logprobs: dict[str, list[Any]]) -> None:
    """The content's token logprobs on the message's text (the first text
    block not a refusal), the refusal's on the refusal's block."""
    for key, tokens in logprobs.items():
        refusal = key == "refusal"
        text = next(
            (b for b in content if b["type"] == "text" and bool(b.get("refusal")) is refusal),
            None,
        )
        if text is not None and tokens:
            text["logprobs"] = tokens


class KeptChatCompletionStream(ChatCompletionStream):
    """The stream in provider fidelity: where the reasoning came from, the
    citations and the token logprobs (a family member with more to keep
    extends `_absorb` and `_build`)."""

    def __init__(self, provider: str, options: ParseSettings) -> None:
        super().__init__(provider, options)
        self._field: str | None = None
        self._cited: list[Any] = []
        self._refusal = ""
        self._logprobs: dict[str, list[Any]] = {key: [] for key in _LOGPROB_KINDS}

    def _absorb_choice(self, choice: Block, path: str) -> None:
        if choice.get("logprobs"):
            for key, tokens in _logprobs(choice, path).items():
                self._logprobs[key] += tokens
        super()._absorb_choice(choice, path)

    def _absorb(self, delta: Block, path: str) -> None:
        self._field = self._field or _reasoning_field(delta)
        self._cited += _message_annotations(delta, path)
        self._refusal += expect(delta.get("refusal") or "", str, f"{path}.refusal")
        super()._absorb(delta, path)

    def _build(self) -> list[Block]:
        content = super()._build()
        _add_citations(content, self._cited, self._field)
        _add_refusal(content, self._refusal, "refusal")
        if any(self._logprobs.values()):
            # Each snapshot its own lists (the tokens were copied as they came).
            _add_logprobs(content, {key: list(tokens) for key, tokens in self._logprobs.items()})
        return content


def _reasoning_back(turn: Turn, index: int, block: Block) -> None:
    field = block.get("reasoning_field")
    if field not in _REASONING_KEYS:
        turn.ctx.warn(turn.msg, index, "thinking", skipped_block("thinking"))
        return
    turn.trailing.append({"field": field, "text": block.get("thinking", "")})


_foreign = foreign_block_handler("Chat Completions")


def native_handlers(
    base: dict[str, Handler], *, thinking: Handler | None = None
) -> dict[str, Handler]:
    """A family member's handlers in provider fidelity: thinking back under its
    key (`thinking`: the member's own way), other providers' kinds dropped."""
    return {
        **base,
        "thinking": thinking or _reasoning_back,
        "server_tool_use": _foreign,
        "server_tool_result": _foreign,
        "grounding": _foreign,
    }


def reasoning_back_as(field: str, base: Handler) -> Handler:
    """A thinking handler that sends reasoning which came as `field` back
    there, and hands any other thinking block to `base`."""

    def handle(turn: Turn, index: int, block: Block) -> None:
        if block.get("reasoning_field") == field:
            _reasoning_back(turn, index, block)
        else:
            base(turn, index, block)

    return handle


def with_reasoning(finish: Callable[[Turn], None]) -> Callable[[Turn], None]:
    """`finish`, then the turn's reasoning on the assistant message it made."""

    def done(turn: Turn) -> None:
        start = len(turn.out)
        finish(turn)
        if not turn.trailing or len(turn.out) == start:
            return
        message = turn.out[-1]
        for field in _REASONING_KEYS:
            texts = [item["text"] for item in turn.trailing if item["field"] == field]
            if texts:
                message[field] = "\n".join(texts)

    return done


def _chat_document(turn: Turn, index: int, block: Block) -> None:
    # Chat Completions' `file` part (a PDF): inlined, it has no URL form.
    found = document(block, turn.ctx, keep_url=False)
    file = {"filename": found.name or "document.pdf", "file_data": found.data_url()}
    turn.parts.append({"type": "file", "file": file})


def _native_text(turn: Turn, index: int, block: Block) -> None:
    # A refusal the model gave goes back as one (an assistant `refusal` part).
    if turn.msg.role == "assistant" and block.get("refusal") is True:
        turn.parts.append({"type": "refusal", "refusal": block.get("text")})
    else:
        _chat_text(turn, index, block)


_NATIVE = TurnTable(
    {**native_handlers(_CHAT_BLOCKS), "text": _native_text, "data": _chat_document},
    with_reasoning(_finish_chat),
)

_CHAT_PARTS = {
    "text": frozenset({"type", "text"}),
    "image_url": frozenset({"type", "image_url"}),
    "input_audio": frozenset({"type", "input_audio"}),
    "file": frozenset({"type", "file"}),
    "refusal": frozenset({"type", "refusal"}),
    # Family members' own: Ark's and GLM's videos, GLM's files by URL.
    "video_url": frozenset({"type", "video_url"}),
    "file_url": frozenset({"type", "file_url"}),
}
_ASSISTANT_PARTS = frozenset({"text", "refusal"})
# The content parts OpenAI's chat takes; a family member takes others.
CHAT_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
# ollama.Message's fields a tool message uses.
_OLLAMA_TOOL_MESSAGE = frozenset({"role", "content", "tool_name", "images"})


def _chat_content(message: Json, path: str, note: Notes, taken: frozenset[str]) -> None:
    content = message.get("content")
    if not isinstance(content, list):
        return
    parts = []
    for index, part in enumerate(content):
        at = f"{path}.content[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(part, dict) or kind not in _CHAT_PARTS:
            parts.append(part)
            continue
        if message.get("role") == "assistant" and kind not in _ASSISTANT_PARTS:
            note(at, kind, "replaced by a text note: assistant turns take only text")
            part = {"type": "text", "text": note_text(kind, "an assistant turn")}
            kind = "text"
        elif kind not in taken:
            note(at, kind, f"replaced by a text note: the API takes no {kind} part")
            part = {"type": "text", "text": note_text(kind, "this API")}
            kind = "text"
        if empty(part):
            note(at, kind, "dropped an empty text part")
            continue
        if kind == "text":
            # Request messages take no annotations: the text goes without them,
            # and without another API's marks, silently.
            unmarked = without_text_marks(part).items()
            part = {key: value for key, value in unmarked if key != "citations"}
        parts.append(prune(part, _CHAT_PARTS[kind], at, kind, note))
    message["content"] = parts


def _chat_answered(messages: list[Json], index: int) -> set[Any]:
    """The tool call ids the tool messages right after `messages[index]` answer."""
    ids = set()
    for later in messages[index + 1 :]:
        if later.get("role") != "tool":
            break
        ids.add(later.get("tool_call_id"))
    return ids


# The keys of OpenAI's tool message.
CHAT_TOOL_MESSAGE = frozenset({"role", "content", "tool_call_id"})


def adapt_chat_messages(
    body: Json,
    note: Notes,
    *,
    tool_name: bool,
    tool_message: frozenset[str] = CHAT_TOOL_MESSAGE,
    parts: frozenset[str] = CHAT_PARTS,
) -> None:
    """The Chat Completions pass over the body's `messages` (`chat_message_pass`)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        body["messages"] = chat_message_pass(
            messages, note, tool_name=tool_name, tool_message=tool_message, parts=parts
        )


def chat_message_pass(
    messages: list[Json],
    note: Notes,
    *,
    start: int = 0,
    tool_name: bool,
    tool_message: frozenset[str] = CHAT_TOOL_MESSAGE,
    parts: frozenset[str] = CHAT_PARTS,
) -> list[Json]:
    """The Chat Completions pass over a message list, `messages[start]` on of
    the body's (its paths): parts each role takes, tool calls answered by the
    tool messages after them, no empty messages; the messages kept.
    `tool_name`: Ollama's shape (a tool message names its tool, calls are
    only their function). A family member whose API differs says so:
    `tool_message`, the keys a tool message keeps (`name` too, say);
    `parts`, the content part kinds it takes (any other of OpenAI's is
    replaced by a text note). Without `tool_name`, a message's pass reads
    only it and the tool messages right after it: the list may be passed in
    runs cut before any other message (`ChatCompletions.cuts_before`)."""
    calls_by_id: dict[str, str] = {}
    kept = []
    for index, message in enumerate(messages):
        path = f"messages[{start + index}]"
        if not isinstance(message, dict):
            kept.append(message)
            continue
        _chat_content(message, path, note, parts)
        if "name" in message and message["name"] is None:
            # A turn no one sent by name (a hint of AgentScope 2.x's): the
            # API's `name` is a string or absent.
            del message["name"]
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            answered = _chat_answered(messages, index)
            kept_calls = []
            for number, call in enumerate(calls):
                at = f"{path}.tool_calls[{number}]"
                # An id-less call is Ollama's shape already (nothing to pair).
                if "id" in call and call["id"] not in answered:
                    note(at, "tool_use", "dropped a tool call no tool message answers")
                    continue
                calls_by_id[call.get("id")] = call.get("function", {}).get("name", "")
                if tool_name:
                    # Ollama's ToolCall is only `function`.
                    call = prune(call, frozenset({"function"}), at, "tool_use", note)
                kept_calls.append(call)
            if kept_calls:
                message["tool_calls"] = kept_calls
            else:
                del message["tool_calls"]
        if message.get("role") == "tool":
            if tool_name:
                # Ollama names the answered tool `tool_name`, not `tool_call_id`.
                name = message.get("name") or calls_by_id.get(message.get("tool_call_id", ""), "")
                message = prune(message, _OLLAMA_TOOL_MESSAGE, path, "tool_result", note)
                if name:
                    message["tool_name"] = name
            elif message.keys() - tool_message:
                message = prune(message, tool_message, path, "tool_result", note)
        # A user turn counts as empty only when the pass emptied its parts.
        emptied = message.get("content") == [] and message.get("role") == "user"
        if emptied or (
            message.get("role") in ("assistant", "system")
            and not message.get("content")
            and not (message.get("tool_calls") or message.get("reasoning_content"))
        ):
            note(path, str(message.get("role")), "dropped a message left empty")
            continue
        kept.append(message)
    return kept


class ChatCompletions(ProviderFidelity, ChatCompletionsParity):
    """The Chat Completions API in provider fidelity (see the module's docstring)."""

    turns = _NATIVE
    stream_state = KeptChatCompletionStream
    conversation = "messages"
    # OpenAI refuses longer ones ("string too long. Expected a string with
    # maximum length 40"); a family member inherits the rule.
    call_ids = CallIds("Chat Completions takes ids of at most 40 characters", max_length=40)

    def _kept(
        self,
        choice: Block,
        path: str,
        content: list[Block],
        structured: Block | None,
        options: ParseSettings,
    ) -> Block | None:
        """Citations, the reasoning's origin and the token logprobs on the
        blocks; the structured output AgentScope's `message.parsed` gives: the
        content's JSON object."""
        message, where = choice["message"], f"{path}.message"
        _add_citations(content, _message_annotations(message, where), _reasoning_field(message))
        _add_refusal(content, message.get("refusal"), f"{where}.refusal")
        _add_logprobs(content, _logprobs(choice, path))
        extra = structured
        text = message.get("content")
        if isinstance(text, str):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                extra = parsed
        return extra if options.structured_output else None

    # The content part kinds its API takes, and the keys a tool message keeps
    # (a family member whose API differs says so).
    chat_parts: ClassVar[frozenset[str]] = CHAT_PARTS
    chat_tool_message: ClassVar[frozenset[str]] = CHAT_TOOL_MESSAGE
    segmented = True

    def adapt(self, body: Block, note: Notes) -> None:
        messages = body.get("messages")
        if isinstance(messages, list):
            body["messages"] = self.pass_messages(messages, note)
        self.pass_rest(body, note)

    def cuts_before(self, message: Block) -> bool:
        # Tool messages answer the calls right before them.
        return message.get("role") != "tool"

    def pass_messages(self, messages: list[Block], note: Notes, start: int = 0) -> list[Block]:
        return chat_message_pass(
            messages,
            note,
            start=start,
            tool_name=False,
            tool_message=self.chat_tool_message,
            parts=self.chat_parts,
        )

    def pass_rest(self, body: Block, note: Notes) -> None:
        wrap_bare_tools(body, note)


PROVIDER = Provider(
    enum=PROVIDER_OPENAI,
    options=CHAT_OPTIONS,
    formatted_blocks=CHAT_FORMATTED_BLOCKS,
    dropped_blocks=CHAT_DROPPED_BLOCKS,
    framing="sse",
    request_fields=CHAT_REQUEST_FIELDS,
    # `file` parts take PDFs (inlined: Chat Completions has no URL form).
    document_types=frozenset({"application/pdf"}),
    agentscope=ChatCompletionsParity,
    provider=ChatCompletions,
    compiled=OPENAI_CHAT,
)
