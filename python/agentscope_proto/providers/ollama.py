"""Ollama `/api/chat`.

`OllamaParity` is AgentScope 1.0.21's: requests as its
OllamaChatFormatter/OllamaMultiAgentFormatter + OllamaChatModel build them,
responses as OllamaChatModel parses them. `Ollama` is provider fidelity: the
same formatter and parsers, and a body pass in the Chat Completions family's
shape (`openai.adapt_chat_messages`, with Ollama's tool messages: `tool_name`,
calls as functions only) that also narrows tool parameters to the keywords
Ollama takes. Documents: none (its messages take images only).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from .._core import OLLAMA
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_OLLAMA
from ..errors import FormatError, ParseError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, TokenUsage, copy_json
from ._adapt import Json, Notes, prune, wrap_bare_tools
from ._context import FormatContext
from ._history import format_multi_agent, history_prompt, system_text, wrap_history
from ._media import web_body
from ._parse import expect, loads_with_repair, raise_for_error_body
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider, ProviderFidelity, Variant
from ._tools import tool_message
from ._turns import Handler, Turn, TurnTable, format_turns, tool_result_handler
from .openai import adapt_chat_messages

__all__ = ["PROVIDER", "Ollama", "OllamaParity"]

Block = dict[str, Any]

# -- requests -----------------------------------------------------------------


def _image_data(msg: MsgView, index: int, block: dict[str, Any], ctx: FormatContext) -> str:
    """What Ollama's `images` list takes for an image block: base64 text."""
    ctx.at(msg, index)
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    kind = source.get("type")
    if kind == "base64":
        return str(source.get("data", ""))
    if kind != "url" or not isinstance(source.get("url"), str):
        raise FormatError(ctx.location, f"unsupported image source type {kind!r}")
    url: str = source["url"]
    # AgentScope strips `file://` before checking the file system, but hands
    # the original URL to its downloader.
    raw = url.removeprefix("file://")
    if ctx.exists(raw):
        if not ctx.is_file(raw):
            raise FormatError(ctx.location, f"{url!r} is not a file")
        return base64.b64encode(ctx.read_file(raw)).decode("utf-8")
    if ctx.is_web_url(raw):
        return web_body(url, ctx)
    raise FormatError(ctx.location, f"the URL `{url}` is not a valid image URL or local file")


def _text(turn: Turn, index: int, block: dict[str, Any]) -> None:
    turn.texts.append(block.get("text", ""))


def _tool_use(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Ollama takes the arguments as an object, not as a JSON string.
    turn.tool_calls.append(
        {
            "id": block.get("id"),
            "type": "function",
            "function": {"name": block.get("name"), "arguments": block.get("input", {})},
        }
    )


def _image(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Image data goes in `images`, beside the text.
    turn.parts.append(_image_data(turn.msg, index, block, turn.ctx))


_CHAT_BLOCKS: dict[str, Handler] = {
    "text": _text,
    "tool_use": _tool_use,
    "tool_result": tool_result_handler(tool_message),
    "image": _image,
}


def _finish_chat(turn: Turn) -> None:
    message: dict[str, Any] = {"role": turn.msg.role, "content": "\n".join(turn.texts) or None}
    if turn.tool_calls:
        message["tool_calls"] = turn.tool_calls
    if turn.parts:
        message["images"] = turn.parts
    # Messages left with nothing (empty text, dropped blocks only) vanish.
    if message["content"] or turn.parts or turn.tool_calls:
        turn.out.append(message)


_CHAT = TurnTable(_CHAT_BLOCKS, _finish_chat)


def _format_history(group: list[MsgView], ctx: FormatContext, first: bool) -> list[dict[str, Any]]:
    """OllamaMultiAgentFormatter's agent-message group: one user message."""
    # AgentScope's `conversation_blocks`: text runs, and copies of image blocks
    # that contribute "" (or a leaked `text` key) when everything is joined.
    parts: list[dict[str, Any]] = []
    lines: list[str] = []
    images: list[str] = []
    for msg in group:
        for index, block in enumerate(msg.get_content_blocks()):
            kind = block.get("type")
            if kind == "text":
                lines.append(f"{msg.name}: {block['text']}")
            elif kind == "image":
                if lines:
                    parts.append({"text": "\n".join(lines)})
                    lines.clear()
                images.append(_image_data(msg, index, block, ctx))
                if not isinstance(block.get("text", ""), str):
                    raise FormatError(msg.path(index), "image block has a non-string 'text'")
                parts.append({**block})
            # Every other kind is ignored silently here (no warning in AgentScope).
    if lines:
        parts.append({"text": "\n".join(lines)})
    if not parts:
        return []
    wrap_history(parts, history_prompt(ctx, first), ctx)
    # Joining with "\n" where an image sat gives the doubled newline quirk.
    message: dict[str, Any] = {
        "role": "user",
        "content": "\n".join(part.get("text", "") for part in parts),
    }
    if images:
        message["images"] = images
    return [message]


# -- responses ----------------------------------------------------------------


def _lax_int(value: Any, path: str) -> int | None:
    """An `Optional[int]` field as the ollama SDK's pydantic model reads it."""
    if value is None or isinstance(value, int):
        return None if value is None else int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ParseError(path, f"expected an integer, got {value!r}")


_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})
_FALSE = frozenset({"false", "0", "no", "off", "f", "n"})


def _lax_bool(value: Any, path: str) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise ParseError(path, f"expected a boolean, got {value!r}")


def _opt_str(value: Any, path: str) -> str | None:
    return None if value is None else str(expect(value, str, path))


_STR_FIELDS = ("model", "created_at", "done_reason")
_INT_FIELDS = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One /api/chat response line, checked as `ollama.ChatResponse` checks it."""

    thinking: str
    text: str
    calls: list[tuple[str, dict[str, Any]]]
    done: bool
    done_reason: str
    prompt_eval_count: int | None
    eval_count: int | None


def _read_chunk(data: dict[str, Any], path: str) -> _Chunk:
    # Almost every line is well typed: `_plain_chunk` reads it without the
    # per-field paths (a third of a small response's parse); anything it does
    # not take goes through the checked read, which names what is wrong.
    plain = _plain_chunk(data)
    return _checked_chunk(data, path) if plain is None else plain


_PLAIN = (str, type(None))


def _plain_chunk(data: dict[str, Any]) -> _Chunk | None:
    """`_checked_chunk`'s result where every field has its plain type, else None."""
    get = data.get
    message = get("message")
    if (
        get("error") is not None
        or type(message) is not dict
        or type(message.get("role")) is not str
        or type(get("done")) not in (bool, type(None))
    ):
        return None
    for name in _STR_FIELDS:
        if type(get(name)) not in _PLAIN:
            return None
    for name in _INT_FIELDS:
        if type(get(name)) not in (int, type(None)):
            return None
    thinking, text = message.get("thinking"), message.get("content")
    if type(thinking) not in _PLAIN or type(text) not in _PLAIN:
        return None
    calls = _plain_calls(message.get("tool_calls"))
    if calls is None:
        return None
    return _Chunk(
        thinking=thinking or "",
        text=text or "",
        calls=calls,
        done=bool(get("done")),
        done_reason=get("done_reason") or "",
        prompt_eval_count=get("prompt_eval_count"),
        eval_count=get("eval_count"),
    )


def _plain_calls(raw: Any) -> list[tuple[str, dict[str, Any]]] | None:
    if raw is None:
        return []
    if type(raw) is not list:
        return None
    calls = []
    for call in raw:
        function = call.get("function") if type(call) is dict else None
        if type(function) is not dict:
            return None
        name, arguments = function.get("name"), function.get("arguments")
        if type(name) is not str or type(arguments) is not dict:
            return None
        calls.append((name, arguments))
    return calls


def _checked_chunk(data: dict[str, Any], path: str) -> _Chunk:
    raise_for_error_body("ollama", data)
    for name in _STR_FIELDS:
        _opt_str(data.get(name), f"{path}.{name}")
    counts = {name: _lax_int(data.get(name), f"{path}.{name}") for name in _INT_FIELDS}
    message = expect(data.get("message"), dict, f"{path}.message")
    expect(message.get("role"), str, f"{path}.message.role")
    calls: list[tuple[str, dict[str, Any]]] = []
    raw_calls = message.get("tool_calls")
    if raw_calls is not None:
        for i, call in enumerate(expect(raw_calls, list, f"{path}.message.tool_calls")):
            where = f"{path}.message.tool_calls[{i}]"
            function = expect(expect(call, dict, where).get("function"), dict, f"{where}.function")
            name = expect(function.get("name"), str, f"{where}.function.name")
            # The SDK rejects string arguments: they must already be an object.
            arguments = expect(function.get("arguments"), dict, f"{where}.function.arguments")
            calls.append((name, arguments))
    return _Chunk(
        thinking=_opt_str(message.get("thinking"), f"{path}.message.thinking") or "",
        text=_opt_str(message.get("content"), f"{path}.message.content") or "",
        calls=calls,
        done=_lax_bool(data.get("done"), f"{path}.done"),
        done_reason=data.get("done_reason") or "",
        prompt_eval_count=counts["prompt_eval_count"],
        eval_count=counts["eval_count"],
    )


class _Stream:
    """OllamaChatModel's stream parser: cumulative text, thinking and tool calls."""

    def __init__(self, structured: bool) -> None:
        self._structured = structured
        self._thinking = ""
        self._text = ""
        # Keyed by `{index in its line}_{name}`: a same-named call in a later
        # line overwrites the earlier one in place (AgentScope's OrderedDict).
        self._calls: dict[str, dict[str, Any]] = {}
        self._metadata: dict[str, Any] | None = None
        self._finish_reason = ""
        self._last: ParsedResponse | None = None
        self._events = 0

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        chunk = _read_chunk(event, f"chunk[{self._events}]")
        self._events += 1
        self._thinking += chunk.thinking
        self._text += chunk.text
        for index, (name, arguments) in enumerate(chunk.calls):
            call_id = f"{index}_{name}"
            # No raw_input in stream mode: AgentScope keeps it aside.
            self._calls[call_id] = {
                "type": "tool_use",
                "id": call_id,
                "name": name,
                "input": arguments,
            }
        self._finish_reason = chunk.done_reason or self._finish_reason
        content: list[dict[str, Any]] = []
        if self._thinking:
            content.append({"type": "thinking", "thinking": self._thinking})
        if self._text:
            content.append({"type": "text", "text": self._text})
            if self._structured:
                self._metadata = loads_with_repair(self._text)
        content.extend(dict(call) for call in self._calls.values())
        # Lines that add nothing are not yielded, except the final `done` one.
        if not (chunk.done or content):
            return None
        self._last = ParsedResponse(
            content=content,
            # Every line counts, with missing counts as 0.
            usage=TokenUsage(
                input_tokens=chunk.prompt_eval_count or 0,
                output_tokens=chunk.eval_count or 0,
            ),
            response_id="",
            raw_finish_reason=self._finish_reason,
            structured_output=self._metadata,
        )
        return self._last

    def finish(self) -> ParsedResponse:
        if self._last is None:
            return ParsedResponse(content=[])
        last = self._last
        return ParsedResponse(
            content=copy_json(last.content),
            usage=last.usage,
            response_id="",
            raw_finish_reason=last.raw_finish_reason,
            structured_output=copy_json(last.structured_output),
        )


# -- the provider -------------------------------------------------------------


# Where `/api/chat` takes each request parameter: sampling and the output
# budget (`num_predict`) in its `options`.
_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="options.num_predict",
    temperature="options.temperature",
    top_p="options.top_p",
    stop="options.stop",
    seed="options.seed",
    stream="stream",
)


class OllamaParity(Variant):
    """AgentScope 1.0.21's OllamaChatFormatter / OllamaMultiAgentFormatter and
    OllamaChatModel."""

    turns = _CHAT

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            history_prompt(ctx)  # checked before any message is formatted
            return format_multi_agent(msgs, ctx, system_text, self.format_chat, _format_history)
        return self.format_chat(msgs, ctx)

    def format_chat(self, msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
        """OllamaChatFormatter: one message each, content as one string plus `images`."""
        return format_turns(msgs, ctx, self.turns)

    def build_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": messages}
        if tools:
            # OllamaChatModel passes tool schemas through unchanged.
            body["tools"] = tools
        if tool_choice:
            ctx.warn(None, None, "tool_choice", "Ollama does not support tool_choice yet, ignored.")
        return body

    def parse(self, response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
        chunk = _read_chunk(response, "response")
        content: list[dict[str, Any]] = []
        metadata: dict[str, Any] | None = None
        if chunk.thinking:
            content.append({"type": "thinking", "thinking": chunk.thinking})
        if chunk.text:
            content.append({"type": "text", "text": chunk.text})
            if options.structured_output:
                metadata = loads_with_repair(chunk.text)
        for index, (name, arguments) in enumerate(chunk.calls):
            content.append(
                {
                    "type": "tool_use",
                    "id": f"{index}_{name}",
                    "name": name,
                    "input": arguments,
                    # Plain json.dumps: ASCII escapes, default separators.
                    "raw_input": json.dumps(arguments),
                }
            )
        usage: TokenUsage | None = None
        # Usage only when both counts are present, even if null (then None).
        if "prompt_eval_count" in response and "eval_count" in response:
            usage = TokenUsage(input_tokens=chunk.prompt_eval_count, output_tokens=chunk.eval_count)
        # Ollama sends no response id; AgentScope invents one.
        return ParsedResponse(
            content=content,
            usage=usage,
            response_id="",
            raw_finish_reason=chunk.done_reason,
            structured_output=metadata,
        )

    def stream(self, options: ParseSettings) -> _Stream:
        return _Stream(options.structured_output)


# -- provider fidelity ----------------------------------------------------------------

_OLLAMA_PARAMETERS = frozenset({"type", "defs", "items", "required", "properties"})
_OLLAMA_PROPERTY = frozenset({"type", "items", "description", "enum"})


def _adapt_body(body: Json, note: Notes) -> None:
    """The pass: the chat family's, in Ollama's shape; tool parameters narrowed."""
    adapt_chat_messages(body, note, tool_name=True)
    wrap_bare_tools(body, note)
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("parameters"), dict):
            continue
        parameters = function["parameters"]
        path = f"tools[{index}].function.parameters"
        parameters = prune(parameters, _OLLAMA_PARAMETERS, path, "tool_schema", note)
        properties = parameters.get("properties")
        if isinstance(properties, dict):
            parameters["properties"] = {
                name: prune(
                    value, _OLLAMA_PROPERTY, f"{path}.properties.{name}", "tool_schema", note
                )
                if isinstance(value, dict)
                else value
                for name, value in properties.items()
            }
        function["parameters"] = parameters


class Ollama(ProviderFidelity, OllamaParity):
    """`/api/chat` in provider fidelity (see the module's docstring)."""

    # None go: Ollama pairs a tool message with its call by the tool's name.
    call_ids = None

    def adapt(self, body: Block, note: Notes) -> None:
        _adapt_body(body, note)


PROVIDER = Provider(
    enum=PROVIDER_OLLAMA,
    options=frozenset({"promote_tool_result_images", "conversation_history_prompt"}),
    formatted_blocks=frozenset({"text", "tool_use", "tool_result", "image"}),
    dropped_blocks=frozenset({"thinking", "audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="ndjson",
    request_fields=_REQUEST_FIELDS,
    # None: its messages take images only.
    document_types=frozenset(),
    agentscope=OllamaParity,
    provider=Ollama,
    compiled=OLLAMA,
)
