"""Gemini: requests as AgentScope's GeminiChatFormatter/GeminiMultiAgentFormatter +
GeminiChatModel build them; responses as GeminiChatModel parses them.

Responses are the REST JSON (camelCase, snake_case also accepted) that the
google-genai SDK turns into the objects AgentScope reads; the checks below are
the ones the SDK's validation would fail on.

Beyond AgentScope (gemini_extras.py): streamed function-call arguments, in both
fidelities; in provider fidelity grounding, URL context and code execution as
blocks, and code execution formatted back. Nothing goes into the Msg's
`metadata` (the candidate-level records are grounding blocks); tool
declarations and the tool config are in gemini_tools.py.
"""

from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass
from typing import Any

from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_GEMINI
from ..errors import FormatError, ParseError, UnsupportedMediaError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse
from ._context import FormatContext
from ._documents import document
from ._history import format_multi_agent, wrap_history
from ._media import web_body
from ._parse import expect, loads_with_repair, raise_for_error_body
from ._provider import UNKNOWN_TO_AGENTSCOPE
from ._tools import arguments_json
from ._turns import Handler, Turn, format_turns, tool_result_handler
from .gemini_extras import (
    CODE_PARTS,
    CallAssembler,
    code_block,
    format_code,
    format_foreign,
    grounding_blocks,
    structured_output,
)
from .gemini_tools import function_declarations, tool_config

__all__ = ["PROVIDER"]

# GeminiChatFormatter.supported_extensions: the mime type of URL media is
# f"{kind}/{extension}", so `.jpg` and `.gif` have none and are refused.
_EXTENSIONS = {
    "image": ("png", "jpeg", "webp", "heic", "heif"),
    "video": ("mp4", "mpeg", "mov", "avi", "x-flv", "mpg", "webm", "wmv", "3gpp"),
    "audio": ("mp3", "wav", "aiff", "aac", "ogg", "flac"),
}
_MEDIA_KINDS = frozenset(_EXTENSIONS)


# -- requests: media -----------------------------------------------------------


def _inline_from_url(url: str, ctx: FormatContext) -> dict[str, Any]:
    """AgentScope's `_to_gemini_inline_data`: read or download, typed by extension."""
    raw = url.removeprefix("file://")
    extension = raw.split(".")[-1].lower()
    kind = next((k for k, exts in _EXTENSIONS.items() if extension in exts), None)
    local = ctx.exists(raw)
    if not local and urllib.parse.urlparse(raw).scheme in ("", "file"):
        raise FormatError(ctx.location, f"{url!r} is neither a web URL nor an existing local file")
    # The extension is checked only once the source is known to exist.
    if kind is None:
        raise UnsupportedMediaError(
            ctx.location,
            f"unsupported file extension {extension!r} (Gemini takes {dict(_EXTENSIONS)})",
        )
    data = base64.b64encode(ctx.read_file(raw)).decode("ascii") if local else web_body(url, ctx)
    return {"data": data, "mime_type": f"{kind}/{extension}"}


def _media_part(
    msg: MsgView, index: int, block: dict[str, Any], ctx: FormatContext
) -> dict[str, Any]:
    """AgentScope's `_format_gemini_media_block`."""
    ctx.at(msg, index)
    source = block["source"]
    if source["type"] == "base64":
        return {"inline_data": {"data": source["data"], "mime_type": source["media_type"]}}
    if source["type"] == "url":
        return {"inline_data": _inline_from_url(source["url"], ctx)}
    raise FormatError(ctx.location, f"unsupported source type {source['type']!r}")


def _signature(block: dict[str, Any], ctx: FormatContext) -> bytes | None:
    """A block's base64 `thought_signature` as the bytes Gemini takes back."""
    value = block.get("thought_signature")
    if value is None:
        return None
    try:
        # Python's lenient decoder, as AgentScope uses it (bad padding still fails).
        return base64.b64decode(value)
    except (TypeError, ValueError) as exc:
        raise FormatError(ctx.location, f"thought_signature: {exc}") from None


# -- requests: the chat formatter ------------------------------------------------


def _with_signature(part: dict[str, Any], turn: Turn, block: dict[str, Any]) -> None:
    signature = _signature(block, turn.ctx)
    if signature is not None:
        part["thought_signature"] = signature
    turn.parts.append(part)


def _text(turn: Turn, index: int, block: dict[str, Any]) -> None:
    _with_signature({"text": block.get("text")}, turn, block)


def _tool_use(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Gemini ids its calls itself: AgentScope always sends `id: None`.
    call = {"id": None, "name": block["name"], "args": block["input"]}
    _with_signature({"function_call": call}, turn, block)


def _function_response(block: dict[str, Any], output: str) -> dict[str, Any]:
    response = {"id": block["id"], "name": block["name"], "response": {"output": output}}
    return {"role": "user", "parts": [{"function_response": response}]}


def _media(turn: Turn, index: int, block: dict[str, Any]) -> None:
    turn.parts.append(_media_part(turn.msg, index, block, turn.ctx))


_CHAT_BLOCKS: dict[str, Handler] = {
    "text": _text,
    "tool_use": _tool_use,
    "tool_result": tool_result_handler(_function_response),
    "image": _media,
    "audio": _media,
    "video": _media,
}


def _finish_chat(turn: Turn) -> None:
    if turn.parts:
        # No system role: system messages are sent as user turns.
        role = "model" if turn.msg.role == "assistant" else "user"
        turn.out.append({"role": role, "parts": turn.parts})


def _skipped(kind: object) -> str:
    # Thinking included: Gemini gets no thoughts back, only signatures.
    return f"unsupported block type {kind!r}; skipped"


def _document(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Inline data: downloaded where it is a URL (the API reads none but its own files').
    found = document(block, turn.ctx, keep_url=False)
    turn.parts.append({"inline_data": {"data": found.data, "mime_type": found.media_type}})


# Provider fidelity: Gemini's code execution parts go back; grounding and other
# providers' server-tool blocks are dropped (see gemini_extras.py); documents go
# as inline data.
_PROVIDER_BLOCKS: dict[str, Handler] = {
    **_CHAT_BLOCKS,
    "data": _document,
    "server_tool_use": format_code,
    "server_tool_result": format_code,
    "grounding": format_foreign,
}


def _format_chat(msgs: list[MsgView], ctx: FormatContext) -> list[dict[str, Any]]:
    """GeminiChatFormatter._format."""
    provider = ctx.settings.fidelity == "provider"
    handlers = _PROVIDER_BLOCKS if provider else _CHAT_BLOCKS
    return format_turns(msgs, ctx, handlers, _finish_chat, skipped=_skipped)


# -- requests: the multi-agent formatter -----------------------------------------


def _history(group: list[MsgView], ctx: FormatContext, first: bool) -> list[dict[str, Any]]:
    """GeminiMultiAgentFormatter._format_agent_message: one user turn of history
    lines, media interleaved where it sat; other blocks are silently ignored."""
    prompt = ctx.settings.history_prompt if first else ""
    parts: list[dict[str, Any]] = []
    lines: list[str] = []
    for msg in group:
        for index, block in enumerate(msg.get_content_blocks()):
            kind = block.get("type")
            if kind == "text":
                lines.append(f"{msg.name}: {block['text']}")
            elif kind in _MEDIA_KINDS:
                if lines:
                    parts.append({"text": "\n".join(lines)})
                    lines = []
                parts.append(_media_part(msg, index, block, ctx))
    if lines:
        parts.append({"text": "\n".join(lines)})
    if not parts:
        return []
    # No newline after "<history>", unlike the other providers (AgentScope's quirk).
    wrap_history(parts, prompt, ctx, opening="<history>")
    return [{"role": "user", "parts": parts}]


def _system_turn(msg: MsgView) -> dict[str, Any]:
    # No system role in Gemini: the text only (None without any), as a user turn.
    return {"role": "user", "parts": [{"text": msg.get_text_content()}]}


def _format_multi_agent(msgs: list[MsgView], ctx: FormatContext) -> list[dict[str, Any]]:
    """TruncatedFormatterBase._format with Gemini's system and group formatting."""
    return format_multi_agent(msgs, ctx, _system_turn, _format_chat, _history)


# -- responses: reading the JSON as the SDK validates it ---------------------------


def _get(obj: dict[str, Any], camel: str, snake: str, kind: Any, path: str) -> Any:
    """A field by its REST (camelCase) or SDK (snake_case) name; None if absent."""
    key = camel if obj.get(camel) is not None else snake
    value = obj.get(key)
    if value is None:
        return None
    return expect(value, kind, f"{path}.{key}" if path else key)


def _count(obj: dict[str, Any], camel: str, snake: str, path: str) -> int | None:
    value = _get(obj, camel, snake, (int, float), path)
    if isinstance(value, float):
        if not value.is_integer():
            raise ParseError(f"{path}.{camel}", f"expected an integer, got {value!r}")
        return int(value)
    return value  # type: ignore[no-any-return]


def _b64decode_like_sdk(text: str, path: str) -> bytes:
    """Pydantic's base64 for `bytes` fields: either alphabet, padding optional,
    no whitespace, no stray bits in the last symbol."""
    urlsafe = not ("+" in text or "/" in text) and ("-" in text or "_" in text)
    body = text.rstrip("=")
    pad = len(text) - len(body)
    alphabet = "-_" if urlsafe else "+/"
    tail = len(body) % 4
    valid = (
        all(c.isascii() and (c.isalnum() or c in alphabet) for c in body)
        and tail != 1
        and (pad == 0 or (tail != 0 and pad <= 4 - tail))
    )
    if valid:
        padded = body + "=" * (-len(body) % 4)
        raw = base64.b64decode(padded, altchars=b"-_" if urlsafe else None, validate=True)
        encoded = base64.b64encode(raw, altchars=b"-_" if urlsafe else None).decode()
        if encoded.rstrip("=") == body:
            return raw
    raise ParseError(path, "invalid base64")


@dataclass(frozen=True, slots=True)
class _Part:
    text: str | None
    thought: bool
    call: dict[str, Any] | None  # the functionCall (whole or a streamed piece)
    signature: str | None  # standard base64, as AgentScope re-encodes the SDK's bytes
    code: str | None  # "executableCode" / "codeExecutionResult" when the part is one
    raw: dict[str, Any]


def _read_part(raw: Any, path: str) -> _Part:
    raw = expect(raw, dict, path)
    text = _get(raw, "text", "text", str, path)
    thought = bool(_get(raw, "thought", "thought", bool, path))
    signature = None
    sig_text = _get(raw, "thoughtSignature", "thought_signature", str, path)
    if sig_text is not None:
        key = "thoughtSignature" if raw.get("thoughtSignature") is not None else "thought_signature"
        decoded = _b64decode_like_sdk(sig_text, f"{path}.{key}")
        # An empty signature is falsy to AgentScope: as good as none.
        signature = base64.b64encode(decoded).decode("ascii") if decoded else None
    call = _get(raw, "functionCall", "function_call", dict, path)
    code = next((CODE_PARTS[key] for key in CODE_PARTS if raw.get(key) is not None), None)
    return _Part(text, thought, call, signature, code, raw)


@dataclass(frozen=True, slots=True)
class _Chunk:
    parts: list[_Part]  # of the first candidate only, as AgentScope reads them
    usage: dict[str, int | float] | None
    response_id: str | None
    finish_reason: str
    grounding: list[dict[str, Any]]  # the first candidate's, as grounding blocks


def _read_usage(raw: Any) -> dict[str, int | float] | None:
    """GeminiChatModel._extract_usage: output = total - prompt (thoughts included);
    nothing unless both counts are there."""
    if raw is None:
        return None
    path = "usageMetadata"
    raw = expect(raw, dict, path)
    prompt = _count(raw, "promptTokenCount", "prompt_token_count", path)
    total = _count(raw, "totalTokenCount", "total_token_count", path)
    if prompt is None or total is None:
        return None
    usage: dict[str, int | float] = {"input_tokens": prompt, "output_tokens": total - prompt}
    cached = _count(raw, "cachedContentTokenCount", "cached_content_token_count", path)
    if cached is not None:
        usage["cache_read_input_tokens"] = cached
    thoughts = _count(raw, "thoughtsTokenCount", "thoughts_token_count", path)
    if thoughts is not None:
        usage["reasoning_tokens"] = thoughts
    return usage


def _read_chunk(response: dict[str, Any], provider: bool) -> _Chunk:
    """A response or stream chunk read once; its grounding records only in
    provider fidelity (AgentScope reads none, and fails on none)."""
    raise_for_error_body("gemini", response)
    candidates = _get(response, "candidates", "candidates", list, "") or []
    # The SDK validates every candidate; AgentScope reads the first.
    all_parts = []
    finish = ""
    grounding: list[dict[str, Any]] = []
    for c_index, candidate in enumerate(candidates):
        c_path = f"candidates[{c_index}]"
        candidate = expect(candidate, dict, c_path)
        if c_index == 0:
            finish = _get(candidate, "finishReason", "finish_reason", str, c_path) or ""
            if provider:
                grounding = grounding_blocks(candidate, c_path)
        content = _get(candidate, "content", "content", dict, c_path) or {}
        raw_parts = _get(content, "parts", "parts", list, f"{c_path}.content") or []
        all_parts.append(
            [_read_part(p, f"{c_path}.content.parts[{i}]") for i, p in enumerate(raw_parts)]
        )
    if not candidates:
        # A blocked prompt has no candidate; its block reason is the closest thing.
        feedback = _get(response, "promptFeedback", "prompt_feedback", dict, "") or {}
        finish = _get(feedback, "blockReason", "block_reason", str, "promptFeedback") or ""
    usage = _read_usage(response.get("usageMetadata", response.get("usage_metadata")))
    response_id = _get(response, "responseId", "response_id", str, "")
    return _Chunk(all_parts[0] if all_parts else [], usage, response_id, finish, grounding)


def _call_block(call: dict[str, Any], signature: str | None, number: int) -> dict[str, Any]:
    """A tool_use block; the call's id is its signature, else its own id, else
    `call_{n}` (Gemini usually sends no id)."""
    args = call["args"] or {}
    block = {
        "type": "tool_use",
        "id": signature or call["id"] or f"call_{number}",
        "name": call["name"],
        "input": args,
        "raw_input": arguments_json(args),
    }
    if signature:
        block["thought_signature"] = signature
    return block


def _parse(response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
    """GeminiChatModel._parse_gemini_generation_response (with streamed-call
    pieces assembled, and in provider fidelity code execution and grounding)."""
    provider = options.fidelity == "provider"
    chunk = _read_chunk(response, provider)
    blocks: list[dict[str, Any]] = []
    calls = CallAssembler()
    code_ids: list[str] = []
    text_signature = None
    for index, part in enumerate(chunk.parts):
        if part.text:
            kind = "thinking" if part.thought else "text"
            blocks.append({"type": kind, kind: part.text})
        if part.call is not None:
            calls.add(part.call, part.signature, f"candidates[0].content.parts[{index}]")
        elif provider and part.code is not None:
            path = f"candidates[0].content.parts[{index}]"
            blocks.append(code_block(part.code, part.raw, code_ids, path))
        elif part.signature:
            text_signature = part.signature
    if text_signature:
        # The last signature of a non-call part (thoughts included) goes to the last text.
        text_block = next((b for b in reversed(blocks) if b["type"] == "text"), None)
        if text_block is not None:
            text_block["thought_signature"] = text_signature
    metadata = None
    # The SDK's `response.text`: every non-thought text part, "" ones included.
    text = "".join(p.text for p in chunk.parts if p.text is not None and not p.thought)
    if text and options.structured_output:
        metadata = loads_with_repair(text)
    blocks += chunk.grounding
    return ParsedResponse(
        content=blocks + [_call_block(c, c["signature"], n) for n, c in enumerate(calls.calls)],
        usage=chunk.usage,
        response_id=chunk.response_id or "",
        raw_finish_reason=chunk.finish_reason,
        structured_output=metadata,
    )


class _Stream:
    """GeminiChatModel._parse_gemini_stream_generation_response: one snapshot per
    chunk (even a chunk without parts), usage from that chunk alone."""

    def __init__(self, options: ParseSettings) -> None:
        self._structured = options.structured_output
        self._provider = options.fidelity == "provider"
        self._text = ""
        self._thinking = ""
        self._text_signature: str | None = None
        self._calls = CallAssembler()
        # Provider fidelity: text and code execution blocks in part order (text
        # on either side of a code part stays apart), and grounding records.
        self._segments: list[dict[str, Any]] = []
        self._code_ids: list[str] = []
        self._grounding: list[dict[str, Any]] = []
        self._chunks = 0
        self._metadata: dict[str, Any] | None = None
        # The first chunk's id sticks, even an empty one.
        self._response_id: str | None = None
        self._finish = ""
        self._last: ParsedResponse | None = None

    def feed(self, event: dict[str, Any]) -> ParsedResponse:
        chunk = _read_chunk(event, self._provider)
        path = f"chunk[{self._chunks}].candidates[0].content.parts"
        self._chunks += 1
        for index, part in enumerate(chunk.parts):
            if part.text:
                if part.thought:
                    self._thinking += part.text
                else:
                    self._text += part.text
                    if self._provider:
                        self._add_text(part.text)
            if part.call is not None:
                self._calls.add(part.call, part.signature, f"{path}[{index}]")
            elif self._provider and part.code is not None:
                block = code_block(part.code, part.raw, self._code_ids, f"{path}[{index}]")
                self._segments.append(block)
            elif part.signature:
                self._text_signature = part.signature
        self._grounding += [b for b in chunk.grounding if b not in self._grounding]
        if self._text and self._structured:
            self._metadata = loads_with_repair(self._text)
        if self._response_id is None:
            self._response_id = chunk.response_id
        self._finish = chunk.finish_reason or self._finish
        content: list[dict[str, Any]] = []
        if self._thinking:
            content.append({"type": "thinking", "thinking": self._thinking})
        texts = [dict(b) for b in self._segments] if self._provider else []
        if self._text and not self._provider:
            texts = [{"type": "text", "text": self._text}]
        last_text = next((b for b in reversed(texts) if b["type"] == "text"), None)
        if last_text is not None and self._text_signature:
            last_text["thought_signature"] = self._text_signature
        content += texts + self._grounding
        calls = [_call_block(c, c["signature"], n) for n, c in enumerate(self._calls.calls)]
        self._last = ParsedResponse(
            content=content + calls,
            usage=chunk.usage,
            response_id=self._response_id or "",
            raw_finish_reason=self._finish,
            structured_output=self._metadata,
        )
        return self._last

    def _add_text(self, text: str) -> None:
        if self._segments and self._segments[-1]["type"] == "text":
            self._segments[-1]["text"] += text
        else:
            self._segments.append({"type": "text", "text": text})

    def finish(self) -> ParsedResponse:
        last = self._last
        if last is None:
            return ParsedResponse(content=[])
        # A copy: the parser stamps deltas on what it returns.
        return ParsedResponse(
            content=[dict(block) for block in last.content],
            usage=last.usage,
            response_id=last.response_id,
            raw_finish_reason=last.raw_finish_reason,
            structured_output=last.structured_output,
        )


# Where each request parameter goes in the body, which is the SDK's
# `generate_content` call with its `GenerateContentConfig` fields at the top
# (as `tools` and `tool_config` are): `model`, and the config's own names.
# Streaming is a method of its own (`generate_content_stream`,
# `streamGenerateContent`), not a field.
REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_output_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop_sequences",
    seed="seed",
    stream=None,
)


class _Gemini:
    name = "gemini"
    enum = PROVIDER_GEMINI
    options = frozenset(
        {
            "promote_tool_result_images",
            "conversation_history_prompt",
            "response_schema",
            "response_schema_name",
        }
    )
    formatted_blocks = frozenset({"text", "tool_use", "tool_result", "image", "audio", "video"})
    dropped_blocks = frozenset({"thinking", "opaque"}) | UNKNOWN_TO_AGENTSCOPE
    framing = "sse"
    request_fields = REQUEST_FIELDS
    # Inline data of the document types the Gemini API lists.
    document_types = frozenset(
        {"application/pdf", "text/plain", "text/html", "text/csv", "text/xml", "text/rtf"}
    )

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
        # GeminiChatModel puts tools and tool_config in its `config`; they are hoisted.
        body: dict[str, Any] = {"contents": messages}
        if tools:
            body["tools"] = function_declarations(tools, ctx)
        if tool_choice:
            body["tool_config"] = tool_config(tool_choice, tools)
        structured_output(body, ctx.settings.response_schema, ctx)
        return body

    def parse(self, response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
        return _parse(response, options)

    def stream(self, options: ParseSettings) -> _Stream:
        return _Stream(options)


PROVIDER = _Gemini()
