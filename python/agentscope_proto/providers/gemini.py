"""Google Gemini `generateContent`.

`GeminiParity` is AgentScope 1.0.21's: requests as its
GeminiChatFormatter/GeminiMultiAgentFormatter + GeminiChatModel build them,
responses as GeminiChatModel parses them. Responses are the REST JSON
(camelCase, snake_case also accepted) that the google-genai SDK turns into
the objects AgentScope reads; the checks below are the ones the SDK's
validation would fail on. `Gemini` is provider fidelity, the parity variant
with what differs overridden.

Streamed function-call arguments (Vertex AI's `partialArgs` / `willContinue`),
in both fidelities: AgentScope turns every piece of such a stream into a tool
call of its own, most without a name (which no Msg can hold; this package
raised ParseError), so there is no behaviour to keep. A `functionCall` part
with a name and `willContinue: true` opens a call; name-less parts set their
`partialArgs` at each `jsonPath` (a string piece after one that said
`willContinue` is appended to it); a name-less part without `willContinue`
(`{}`, or the last piece) closes the call. The call is a tool_use block from
the part that opens it, its input growing.

Structured output (`response_schema`), both fidelities, as GeminiChatModel
with a `structured_model`: `response_mime_type` "application/json" and the
schema, tools and _tool_config left out (a warning when there were some). The
SDK turns a `response_schema` dict into its Schema the way it turns
AgentScope's model class; provider fidelity sends it as
`response_json_schema`, the field that takes a plain JSON Schema.

The request body: with `request=` it is REST `generateContent`'s (what the
SDK's REST layer sends): the parameters and structured output's two fields
in `generation_config`, the model in the URL, never in the body. Without
it, AgentScope fidelity keeps AgentScope's body (its `config=` fields
hoisted to the top); provider fidelity is the REST body either way, a
leading system message its `system_instruction`.

Provider fidelity, parse: the first candidate's `groundingMetadata` and
`urlContextMetadata` each give a `grounding` block after the text (web,
retrieved-context and maps chunks' uri/title are the sources,
`webSearchQueries` the queries; URL context's retrieved URLs are the sources),
the record verbatim in `raw`. `executableCode` / `codeExecutionResult` parts
give `server_tool_use` (name "code_execution", input {language, code}) /
`server_tool_result` (output {outcome, output}, an error unless OUTCOME_OK)
blocks where the part sat among the text blocks, the part verbatim (thought
signature included) in `raw`; a code part's signature stays in its `raw`, it
is not the text's. The first candidate's `citationMetadata` citations go,
verbatim, into its last text block's `citations` (their indices count in
the candidate's whole text; a stream keeps each distinct one once), and its
`finishMessage` (why generation stopped, in words) into the message's
metadata as `{"finishMessage": ...}`, the last one of a stream.

Provider fidelity, format: code execution blocks from Gemini go back as the
same parts, in order, in the model turn; a document (`data`) as inline data.
Grounding blocks and text citations (Gemini's own, or another provider's)
are dropped silently: no request field takes them, and the text they ground
is sent; so are the finish message and other APIs' text marks (`phase`,
`logprobs`, `refusal`).
Server-tool blocks of other providers are dropped with a FormatWarning. A
model turn whose function calls carry no thought signature (calls another
provider made, whose signatures Gemini never takes) gets, on its first call,
the placeholder Gemini's thought-signature docs give for a conversation from
another model (`UNSIGNED_CALL`), with a FormatWarning: Gemini 3 refuses the
call otherwise. The body pass drops empty parts and turns and narrows tool parameters to the
keywords Gemini's Schema takes.
"""

from __future__ import annotations

import base64
import copy
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, ClassVar

from .._core import GEMINI
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_GEMINI
from ..errors import FormatError, ParseError, UnsupportedMediaError
from ..options import ParseSettings
from ..request import BESIDE_BODY, RequestFields
from ..results import ParsedResponse
from ._adapt import Json, Notes, prune
from ._context import FormatContext
from ._documents import document
from ._history import format_multi_agent, wrap_history
from ._media import web_body
from ._parse import expect, loads_with_repair, raise_for_error_body
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider, ProviderFidelity, Variant
from ._tools import arguments_json, validate_tool_choice, without_tools
from ._turns import (
    Handler,
    Turn,
    TurnTable,
    foreign_block_handler,
    format_turns,
    tool_result_handler,
)

__all__ = ["PROVIDER", "Gemini", "GeminiParity"]

Block = dict[str, Any]

# GeminiChatFormatter.supported_extensions: the mime type of URL media is
# f"{kind}/{extension}", so `.jpg` and `.gif` have none and are refused.
_EXTENSIONS = {
    "image": ("png", "jpeg", "webp", "heic", "heif"),
    "video": ("mp4", "mpeg", "mov", "avi", "x-flv", "mpg", "webm", "wmv", "3gpp"),
    "audio": ("mp3", "wav", "aiff", "aac", "ogg", "flac"),
}
_MEDIA_KINDS = frozenset(_EXTENSIONS)
# The part keys of code execution, REST (camelCase) and SDK (snake_case) spelling.
_CODE_PARTS = {
    "executableCode": "executableCode",
    "executable_code": "executableCode",
    "codeExecutionResult": "codeExecutionResult",
    "code_execution_result": "codeExecutionResult",
}
_SNAKE = {"executableCode": "executable_code", "codeExecutionResult": "code_execution_result"}
_RECORDS = {
    "groundingMetadata": "groundingMetadata",
    "grounding_metadata": "groundingMetadata",
    "urlContextMetadata": "urlContextMetadata",
    "url_context_metadata": "urlContextMetadata",
}
_PATH_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def _field(obj: dict[str, Any], camel: str, snake: str) -> Any:
    return obj.get(camel) if obj.get(camel) is not None else obj.get(snake)


# -- requests: media -------------------------------------------------------------


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


def _finish_native(turn: Turn) -> None:
    """Provider fidelity: a system message first is marked "system", for the
    body pass to make it the `system_instruction`; a later one is a user
    turn still (moving it first would change what it follows)."""
    if turn.parts and turn.msg.role == "system" and turn.position == 0:
        turn.out.append({"role": "system", "parts": turn.parts})
    else:
        _finish_chat(turn)


def _leading_system(msg: MsgView) -> dict[str, Any]:
    """`_finish_native`'s mark on the multi-agent formatter's system turn."""
    return {**_system_turn(msg), "role": "system"}


def _skipped(kind: object) -> str:
    # Thinking included: Gemini gets no thoughts back, only signatures.
    return f"unsupported block type {kind!r}; skipped"


_CHAT = TurnTable(_CHAT_BLOCKS, _finish_chat, _skipped)


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


# -- tools -------------------------------------------------------------------------

_CHOICE_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_DEFS_PREFIX = "#/$defs/"


def _inline_refs(schema: Any, ctx: FormatContext, path: str) -> Any:
    """GeminiChatModel's `_flatten_json_schema`: Gemini takes no `$ref`, so every
    `#/$defs/...` reference is replaced by a copy of its definition."""
    schema = copy.deepcopy(schema)
    if not isinstance(schema, dict):
        raise FormatError(path, f"expected a JSON schema object, got {type(schema).__name__}")
    defs = schema.pop("$defs", {})

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" not in node:
            return {key: resolve(value, seen) for key, value in node.items()}
        ref = node["$ref"]
        if not isinstance(ref, str):
            raise FormatError(path, f"$ref must be a string, got {type(ref).__name__}")
        if not ref.startswith(_DEFS_PREFIX):
            return node  # other references are left as they are
        name = ref[len(_DEFS_PREFIX) :]
        if name in seen:
            ctx.warn(None, None, "tool", f"circular reference to {name!r} in a tool schema")
            return {"type": "object", "description": f"(circular: {name})"}
        seen |= {name}
        if not isinstance(defs, dict):
            raise FormatError(f"{path}.$defs", "expected an object")
        if name not in defs:
            return node
        resolved = resolve(defs[name], seen)
        extras = {key: value for key, value in node.items() if key != "$ref"}
        if extras and not isinstance(resolved, dict):
            raise FormatError(f"{path}.$defs.{name}", "expected an object")
        for key, value in extras.items():
            # Keys beside the $ref (a description, say) override the definition's.
            resolved[key] = resolve(value, seen)
        return resolved

    return resolve(schema, frozenset())


def _function_declarations(tools: list[dict[str, Any]], ctx: FormatContext) -> list[dict[str, Any]]:
    """GeminiChatModel._format_tools_json_schemas: schemas without a `function`
    are skipped, leaving possibly an empty declaration list."""
    declarations = []
    for index, tool in enumerate(tools):
        if "function" not in tool:
            continue
        function = tool["function"]
        if not isinstance(function, dict):
            raise FormatError(f"tools[{index}].function", "expected an object")
        function = dict(function)
        if "parameters" in function:
            function["parameters"] = _inline_refs(
                function["parameters"], ctx, f"tools[{index}].function.parameters"
            )
        declarations.append(function)
    return [{"function_declarations": declarations}]


def _tool_config(tool_choice: Any, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """ChatModelBase._validate_tool_choice plus GeminiChatModel._format_tool_choice."""
    if tool_choice == "any":
        tool_choice = "required"  # deprecated alias (a DeprecationWarning, not a log)
    choice = validate_tool_choice(tool_choice, tools)
    if choice in _CHOICE_MODES:
        return {"function_calling_config": {"mode": _CHOICE_MODES[choice]}}
    return {"function_calling_config": {"mode": "ANY", "allowed_function_names": [choice]}}


# -- structured output -----------------------------------------------------------


def _structured_output(body: Block, schema: Any, ctx: FormatContext) -> None:
    """GeminiChatModel with a structured model: JSON out, no tools."""
    if schema is None:
        return
    without_tools(body, "tool_config", ctx)
    body["response_mime_type"] = "application/json"
    body["response_schema"] = schema


# -- responses: reading the JSON as the SDK validates it ---------------------------


def _get(obj: dict[str, Any], camel: str, snake: str, kind: Any, path: str) -> Any:
    """A field by its REST (camelCase) or SDK (snake_case) name; None if absent."""
    # Every field of every chunk comes through here: one lookup where the
    # camelCase name is there, and the error's path only for an error.
    key = camel
    value = obj.get(camel)
    if value is None:
        key = snake
        value = obj.get(snake)
        if value is None:
            return None
    if isinstance(value, kind):
        return value
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
    code = None
    for key, kind in _CODE_PARTS.items():
        if raw.get(key) is not None:
            code = kind
            break
    return _Part(text, thought, call, signature, code, raw)


@dataclass(frozen=True, slots=True)
class _Chunk:
    parts: list[_Part]  # of the first candidate only, as AgentScope reads them
    usage: dict[str, int | float] | None
    response_id: str | None
    finish_reason: str
    grounding: list[dict[str, Any]]  # the first candidate's, as grounding blocks
    # The first candidate's `citationMetadata` citations, verbatim, and what
    # the message's metadata keeps of it (`finishMessage`), as `reader` reads them.
    citations: list[dict[str, Any]]
    metadata: dict[str, Any] | None


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


def _read_chunk(response: dict[str, Any], reader: _Reader | None) -> _Chunk:
    """A response or stream chunk read once; what `reader` reads beyond
    AgentScope's blocks only with one (provider fidelity: AgentScope reads no
    grounding, and fails on none)."""
    raise_for_error_body("gemini", response)
    candidates = _get(response, "candidates", "candidates", list, "") or []
    # The SDK validates every candidate; AgentScope reads the first.
    all_parts = []
    finish = ""
    grounding: list[dict[str, Any]] = []
    citations: list[dict[str, Any]] = []
    metadata = None
    for c_index, candidate in enumerate(candidates):
        c_path = f"candidates[{c_index}]"
        candidate = expect(candidate, dict, c_path)
        if c_index == 0:
            finish = _get(candidate, "finishReason", "finish_reason", str, c_path) or ""
            if reader is not None:
                grounding = reader.grounding(candidate, c_path)
                citations = reader.citations(candidate, c_path)
                metadata = reader.metadata(candidate, c_path)
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
    parts = all_parts[0] if all_parts else []
    return _Chunk(parts, usage, response_id, finish, grounding, citations, metadata)


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


class _Stream:
    """GeminiChatModel._parse_gemini_stream_generation_response: one snapshot per
    chunk (even a chunk without parts), usage from that chunk alone."""

    def __init__(self, options: ParseSettings, reader: _Reader | None) -> None:
        self._structured = options.structured_output
        self._reader = reader
        self._text = ""
        self._thinking = ""
        self._text_signature: str | None = None
        self._calls = _CallAssembler()
        # With a reader (provider fidelity): text and code execution blocks in
        # part order (text on either side of a code part stays apart), and
        # grounding records.
        self._segments: list[dict[str, Any]] = []
        self._code_ids: list[str] = []
        self._grounding: list[dict[str, Any]] = []
        self._citations: list[dict[str, Any]] = []
        self._kept: dict[str, Any] | None = None
        self._chunks = 0
        self._metadata: dict[str, Any] | None = None
        # The first chunk's id sticks, even an empty one.
        self._response_id: str | None = None
        self._finish = ""
        self._last: ParsedResponse | None = None

    def feed(self, event: dict[str, Any]) -> ParsedResponse:
        reader = self._reader
        chunk = _read_chunk(event, reader)
        path = f"chunk[{self._chunks}].candidates[0].content.parts"
        self._chunks += 1
        for index, part in enumerate(chunk.parts):
            if part.text:
                if part.thought:
                    self._thinking += part.text
                else:
                    self._text += part.text
                    if reader is not None:
                        self._add_text(part.text)
            if part.call is not None:
                self._calls.add(part.call, part.signature, f"{path}[{index}]")
            elif reader is not None and part.code is not None:
                self._segments.append(
                    _code_block(part.code, part.raw, self._code_ids, f"{path}[{index}]")
                )
            elif part.signature:
                self._text_signature = part.signature
        # Most chunks carry none of these: each test below runs for every chunk.
        if chunk.grounding:
            self._grounding += [b for b in chunk.grounding if b not in self._grounding]
        if chunk.citations:
            # A stream may repeat a citation in later chunks: once each.
            self._citations += [c for c in chunk.citations if c not in self._citations]
        if chunk.metadata:
            self._kept = {**(self._kept or {}), **chunk.metadata}
        if self._text and self._structured:
            self._metadata = loads_with_repair(self._text)
        if self._response_id is None:
            self._response_id = chunk.response_id
        self._finish = chunk.finish_reason or self._finish
        content: list[dict[str, Any]] = []
        if self._thinking:
            content.append({"type": "thinking", "thinking": self._thinking})
        if reader is not None:
            texts = [dict(b) for b in self._segments]
        else:
            # AgentScope's one block of all the text.
            texts = [{"type": "text", "text": self._text}] if self._text else []
        last_text = next((b for b in reversed(texts) if b["type"] == "text"), None)
        if last_text is not None and self._text_signature:
            last_text["thought_signature"] = self._text_signature
        if self._citations:
            _cite(texts, self._citations)
        content += texts + self._grounding
        calls = [_call_block(c, c["signature"], n) for n, c in enumerate(self._calls.calls)]
        self._last = ParsedResponse(
            content=content + calls,
            usage=chunk.usage,
            response_id=self._response_id or "",
            raw_finish_reason=self._finish,
            structured_output=self._metadata,
            metadata=None if self._kept is None else copy.deepcopy(self._kept),
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
            metadata=copy.deepcopy(last.metadata),
        )


def _cite(blocks: list[Block], citations: list[dict[str, Any]]) -> None:
    """The candidate's citations on its last text block (their indices count
    in the candidate's whole text)."""
    text_block = next((b for b in reversed(blocks) if b["type"] == "text"), None)
    if citations and text_block is not None:
        text_block["citations"] = copy.deepcopy(citations)


# -- streamed function-call arguments ------------------------------------------------


def _json_path(path: Any, where: str) -> list[str | int]:
    """`$.a.b[0]['c d']` as keys and indexes."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise ParseError(where, f"expected a JSON path starting with '$', got {path!r}")
    tokens: list[str | int] = []
    position = 1
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if match is None:
            raise ParseError(where, f"unsupported JSON path {path!r}")
        name, index, quoted, double = match.groups()
        tokens.append(int(index) if index is not None else (name or quoted or double or ""))
        position = match.end()
    if not tokens:
        raise ParseError(where, "a partial argument needs a path below '$'")
    return tokens


def _partial_value(piece: dict[str, Any], where: str) -> tuple[bool, Any]:
    """(is a string piece, the value) of one `PartialArg`."""
    for camel, snake, kind in (
        ("stringValue", "string_value", str),
        ("numberValue", "number_value", (int, float)),
        ("boolValue", "bool_value", bool),
    ):
        value = _field(piece, camel, snake)
        if value is not None:
            return kind is str, expect(value, kind, f"{where}.{camel}")
    if _field(piece, "nullValue", "null_value") is not None:
        return False, None
    raise ParseError(where, "a partial argument carries no value")


class _CallAssembler:
    """Function-call parts, whole or streamed in pieces, as complete calls.

    Each call is `{"id", "name", "args", "signature"}`; `calls` keeps them in
    order, a streamed one from the part that opened it (its args growing)."""

    def __init__(self) -> None:
        self.calls: list[Block] = []
        self._open: Block | None = None
        self._continuing: set[tuple[str | int, ...]] = set()

    def add(self, raw: dict[str, Any], signature: str | None, path: str) -> None:
        name = _field(raw, "name", "name")
        will_continue = bool(
            expect(
                _field(raw, "willContinue", "will_continue"),
                (bool, type(None)),
                f"{path}.willContinue",
            )
        )
        pieces = _field(raw, "partialArgs", "partial_args")
        if name is not None:
            name = expect(name, str, f"{path}.name")
            args = expect(_field(raw, "args", "args"), (dict, type(None)), f"{path}.args")
            call_id = expect(_field(raw, "id", "id"), (str, type(None)), f"{path}.id")
            call = {"id": call_id, "name": name, "args": args, "signature": signature}
            self.calls.append(call)
            self._open = call if will_continue else None
            self._continuing = set()
            if pieces is not None:
                self._apply(pieces, f"{path}.partialArgs")
            return
        if self._open is None:
            if pieces:
                raise ParseError(f"{path}.partialArgs", "arguments for no open function call")
            if raw.get("args") is not None:
                raise ParseError(f"{path}.name", "missing")
            return  # an empty piece between calls: nothing to do
        if pieces is not None:
            self._apply(pieces, f"{path}.partialArgs")
        if not will_continue:
            self._open = None

    def _apply(self, pieces: Any, path: str) -> None:
        assert self._open is not None
        for number, piece in enumerate(expect(pieces, list, path)):
            where = f"{path}[{number}]"
            piece = expect(piece, dict, where)
            tokens = _json_path(_field(piece, "jsonPath", "json_path"), f"{where}.jsonPath")
            is_text, value = _partial_value(piece, where)
            key = tuple(tokens)
            if self._open["args"] is None:
                self._open["args"] = {}
            current = _get_at(self._open["args"], tokens)
            if is_text and key in self._continuing and isinstance(current, str):
                value = current + value
            _set_at(self._open["args"], tokens, value, where)
            piece_continues = _field(piece, "willContinue", "will_continue")
            if is_text and piece_continues:
                self._continuing.add(key)
            else:
                self._continuing.discard(key)


def _get_at(root: Any, tokens: list[str | int]) -> Any:
    node = root
    for token in tokens:
        present = (
            token < len(node)
            if isinstance(token, int) and isinstance(node, list)
            else isinstance(node, dict) and token in node
        )
        if not present:
            return None
        node = node[token]
    return node


def _set_at(root: dict[str, Any], tokens: list[str | int], value: Any, where: str) -> None:
    node: Any = root
    for token, following in zip(tokens, [*tokens[1:], None], strict=True):
        child: Any = value if following is None else ([] if isinstance(following, int) else {})
        if isinstance(token, int):
            if not isinstance(node, list):
                raise ParseError(where, "a list index where the arguments hold no list")
            if token > len(node):
                # Pieces arrive in order: an index never skips ahead (nor grows a huge list).
                raise ParseError(where, f"list index {token} skips ahead of the arguments")
            node.extend([None] * (token + 1 - len(node)))
            if following is None or not isinstance(node[token], (list, dict)):
                node[token] = child
            node = node[token]
        else:
            if not isinstance(node, dict):
                raise ParseError(where, "a key where the arguments hold no object")
            if following is None or not isinstance(node.get(token), (list, dict)):
                node[token] = child
            node = node[token]


# The structured-output fields AgentScope's body holds at the top (the SDK's
# config, hoisted), which the REST body nests in `generation_config`.
_GENERATION_KEYS = ("response_mime_type", "response_schema", "response_json_schema")


def _rest_body(body: Block) -> None:
    """The body as REST `generateContent` takes it (the SDK's REST layer maps
    its config the same way): the generation fields in `generation_config`.
    A new object: the body may share the one it has."""
    moved = {key: body.pop(key) for key in _GENERATION_KEYS if key in body}
    if moved:
        body["generation_config"] = {**body.get("generation_config", {}), **moved}


# Where each request parameter goes in the REST request body: sampling and
# the output budget in `generation_config` (the top level takes none of
# them). The model is not a body key: it is in the URL
# (`models/{model}:generateContent`), as streaming is
# (`streamGenerateContent`, no field), so giving `stream` is refused.
_REQUEST_FIELDS = RequestFields(
    model=BESIDE_BODY,
    max_output_tokens="generation_config.max_output_tokens",
    temperature="generation_config.temperature",
    top_p="generation_config.top_p",
    stop="generation_config.stop_sequences",
    seed="generation_config.seed",
    stream=None,
    to_request=_rest_body,
)


class GeminiParity(Variant):
    """AgentScope 1.0.21's GeminiChatFormatter / GeminiMultiAgentFormatter and
    GeminiChatModel."""

    turns = _CHAT
    # What a parse reads beyond AgentScope's blocks: nothing.
    reader: ClassVar[_Reader | None] = None

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            # TruncatedFormatterBase._format with Gemini's system and group formatting.
            return format_multi_agent(msgs, ctx, _system_turn, self.format_chat, _history)
        return self.format_chat(msgs, ctx)

    def format_chat(self, msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
        """GeminiChatFormatter._format."""
        return format_turns(msgs, ctx, self.turns)

    def build_body(
        self,
        messages: list[Block],
        tools: list[Block] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> Block:
        # GeminiChatModel puts tools and _tool_config in its `config`; they are hoisted.
        body: Block = {"contents": messages}
        if tools:
            body["tools"] = _function_declarations(tools, ctx)
        if tool_choice:
            body["tool_config"] = _tool_config(tool_choice, tools)
        _structured_output(body, ctx.settings.response_schema, ctx)
        return body

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        """GeminiChatModel._parse_gemini_generation_response (with streamed-call
        pieces assembled, and what the variant's `reader` reads beyond it)."""
        reader = self.reader
        chunk = _read_chunk(response, reader)
        blocks: list[dict[str, Any]] = []
        calls = _CallAssembler()
        code_ids: list[str] = []
        text_signature = None
        for index, part in enumerate(chunk.parts):
            if part.text:
                kind = "thinking" if part.thought else "text"
                blocks.append({"type": kind, kind: part.text})
            if part.call is not None:
                calls.add(part.call, part.signature, f"candidates[0].content.parts[{index}]")
            elif reader is not None and part.code is not None:
                path = f"candidates[0].content.parts[{index}]"
                blocks.append(_code_block(part.code, part.raw, code_ids, path))
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
        if chunk.citations:
            _cite(blocks, chunk.citations)
        blocks += chunk.grounding
        return ParsedResponse(
            content=blocks + [_call_block(c, c["signature"], n) for n, c in enumerate(calls.calls)],
            usage=chunk.usage,
            response_id=chunk.response_id or "",
            raw_finish_reason=chunk.finish_reason,
            structured_output=metadata,
            metadata=chunk.metadata,
        )

    def stream(self, options: ParseSettings) -> _Stream:
        return _Stream(options, self.reader)


# -- provider fidelity: parse --------------------------------------------------------


def _code_block(kind: str, raw: dict[str, Any], numbers: list[str], path: str) -> Block:
    """A code execution part as a server_tool_use / server_tool_result block.

    `numbers` holds the ids of the code parts so far (a result without an id
    answers the last one)."""
    key = next(k for k in _CODE_PARTS if _CODE_PARTS[k] == kind and raw.get(k) is not None)
    body = expect(raw[key], dict, f"{path}.{key}")
    own_id = expect(body.get("id"), (str, type(None)), f"{path}.{key}.id")
    if kind == "executableCode":
        block_id = own_id or f"code_{len(numbers)}"
        numbers.append(block_id)
        code = {k: body[k] for k in ("language", "code") if body.get(k) is not None}
        return {
            "type": "server_tool_use",
            "id": block_id,
            "name": "code_execution",
            "input": code,
            "provider_type": kind,
            "raw": raw,
        }
    outcome = body.get("outcome")
    return {
        "type": "server_tool_result",
        "tool_use_id": own_id or (numbers[-1] if numbers else ""),
        "provider_type": kind,
        "output": {k: body[k] for k in ("outcome", "output") if body.get(k) is not None},
        "is_error": outcome not in (None, "OUTCOME_OK"),
        "raw": raw,
    }


def _sources(kind: str, record: dict[str, Any], path: str) -> list[Block]:
    sources: list[Block] = []
    if kind == "urlContextMetadata":
        items = _field(record, "urlMetadata", "url_metadata") or []
        for item in expect(items, list, f"{path}.urlMetadata"):
            url = _field(item, "retrievedUrl", "retrieved_url") if isinstance(item, dict) else None
            if isinstance(url, str):
                sources.append({"url": url, "title": ""})
        return sources
    chunks = _field(record, "groundingChunks", "grounding_chunks") or []
    for chunk in expect(chunks, list, f"{path}.groundingChunks"):
        if not isinstance(chunk, dict):
            continue
        for source_kind in ("web", "retrievedContext", "retrieved_context", "maps"):
            source = chunk.get(source_kind)
            if isinstance(source, dict) and isinstance(source.get("uri"), str):
                title = source.get("title")
                sources.append(
                    {"url": source["uri"], "title": title if isinstance(title, str) else ""}
                )
                break
    return sources


def _grounding_blocks(candidate: dict[str, Any], path: str) -> list[Block]:
    """The candidate's grounding and URL-context records as grounding blocks."""
    blocks = []
    for key, kind in _RECORDS.items():
        record = candidate.get(key)
        if record is None:
            continue
        record = expect(record, dict, f"{path}.{key}")
        if not record:
            continue  # an empty record grounds nothing
        queries = _field(record, "webSearchQueries", "web_search_queries") or []
        block: Block = {
            "type": "grounding",
            "provider_type": kind,
            "sources": _sources(kind, record, f"{path}.{key}"),
        }
        block["queries"] = [
            q for q in expect(queries, list, f"{path}.{key}.webSearchQueries") if isinstance(q, str)
        ]
        block["raw"] = record
        blocks.append(block)
    return blocks


class _Reader:
    """What a parse reads of a response beyond AgentScope's blocks in provider
    fidelity: the grounding and URL-context records, citations and the
    finish message (code execution parts become blocks where it is given)."""

    def grounding(self, candidate: dict[str, Any], path: str) -> list[Block]:
        """The first candidate's grounding records, as grounding blocks."""
        return _grounding_blocks(candidate, path)

    def citations(self, candidate: dict[str, Any], path: str) -> list[dict[str, Any]]:
        """The first candidate's citations (`citationMetadata`), verbatim."""
        record = _get(candidate, "citationMetadata", "citation_metadata", dict, path) or {}
        where = f"{path}.citationMetadata.citations"
        found = record.get("citations") or []
        return [copy.deepcopy(c) for c in expect(found, list, where) if isinstance(c, dict) and c]

    def metadata(self, candidate: dict[str, Any], path: str) -> dict[str, Any] | None:
        """What the message's metadata keeps of the first candidate."""
        # Why generation stopped, in words (a blocked or malformed call says more).
        message = _get(candidate, "finishMessage", "finish_message", str, path)
        return {"finishMessage": message} if message else None


# -- provider fidelity: formatting back ---------------------------------------------


def _signature_bytes(value: Any, ctx: FormatContext) -> bytes:
    try:
        return base64.b64decode(value)
    except (TypeError, ValueError) as exc:
        raise FormatError(ctx.location, f"thoughtSignature: {exc}") from None


def _format_code(turn: Turn, index: int, block: Block) -> None:
    """A Gemini code execution block back as its part; others dropped with a warning."""
    kind = block.get("provider_type")
    if not isinstance(kind, str) or kind not in _SNAKE or turn.msg.role != "assistant":
        _format_foreign(turn, index, block)
        return
    raw = block.get("raw")
    if not isinstance(raw, dict):
        raise FormatError(turn.ctx.location, "a code execution block needs its part in `raw`")
    key = next((k for k in _CODE_PARTS if _CODE_PARTS[k] == kind and raw.get(k) is not None), None)
    if key is None:
        raise FormatError(turn.ctx.location, f"`raw` holds no {kind} part")
    part: Block = {_SNAKE[kind]: raw[key]}
    signature = _field(raw, "thoughtSignature", "thought_signature")
    if signature is not None:
        part["thought_signature"] = _signature_bytes(signature, turn.ctx)
    turn.parts.append(part)


_format_foreign = foreign_block_handler("Gemini")


def _document(turn: Turn, index: int, block: dict[str, Any]) -> None:
    # Inline data: downloaded where it is a URL (the API reads none but its own files').
    found = document(block, turn.ctx, keep_url=False)
    turn.parts.append({"inline_data": {"data": found.data, "mime_type": found.media_type}})


# Gemini's code execution parts go back; grounding and other providers'
# server-tool blocks are dropped; documents go as inline data.
_NATIVE_BLOCKS: dict[str, Handler] = {
    **_CHAT_BLOCKS,
    "data": _document,
    "server_tool_use": _format_code,
    "server_tool_result": _format_code,
    "grounding": _format_foreign,
}


# -- provider fidelity: the body pass -----------------------------------------------

# google-genai `types.Schema`'s fields, in the REST body's camelCase and the
# SDK's snake_case: the keywords Gemini takes in function parameters.
_GEMINI_KEYWORDS = """
    additionalProperties anyOf default defs description enum example format items
    maxItems maxLength maxProperties maximum minItems minLength minProperties minimum
    nullable pattern properties propertyOrdering ref required title type
    additional_properties any_of max_items max_length max_properties min_items
    min_length min_properties property_ordering
"""
_GEMINI_SCHEMA = frozenset(_GEMINI_KEYWORDS.split())


def _gemini_schema(schema: Json, path: str, note: Notes) -> Json:
    schema = prune(schema, _GEMINI_SCHEMA, path, "tool_schema", note)
    out = dict(schema)
    for key in ("items", "additionalProperties", "additional_properties"):
        if isinstance(schema.get(key), dict):
            out[key] = _gemini_schema(schema[key], f"{path}.{key}", note)
    for key in ("properties", "defs"):
        if isinstance(schema.get(key), dict):
            out[key] = {
                name: _gemini_schema(value, f"{path}.{key}.{name}", note)
                if isinstance(value, dict)
                else value
                for name, value in schema[key].items()
            }
    for key in ("anyOf", "any_of"):
        if isinstance(schema.get(key), list):
            out[key] = [
                _gemini_schema(value, f"{path}.{key}[{i}]", note)
                if isinstance(value, dict)
                else value
                for i, value in enumerate(schema[key])
            ]
    return out


# What Gemini's docs give a function call it did not sign (a conversation
# that comes from another model): Gemini 3 skips its signature check for it,
# where it refuses an unsigned call of the current turn.
UNSIGNED_CALL = b"skip_thought_signature_validator"


def _sign_calls(contents: list[Any], note: Notes) -> None:
    """Each model turn's calls with a signature on the first, as Gemini signs
    them: where none has one, the first gets `UNSIGNED_CALL`."""
    for index, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role") != "model":
            continue
        parts = content.get("parts")
        if not isinstance(parts, list):
            continue
        calls = [n for n, p in enumerate(parts) if isinstance(p, dict) and "function_call" in p]
        if calls and not any("thought_signature" in parts[n] for n in calls):
            # A new part: the walk's may be a cached turn's.
            parts[calls[0]] = {**parts[calls[0]], "thought_signature": UNSIGNED_CALL}
            note(
                f"contents[{index}].parts[{calls[0]}]",
                "tool_use",
                "Gemini signed none of this turn's calls: the first carries Gemini's "
                "skip_thought_signature_validator",
            )


def _system_instruction(body: Json) -> None:
    """The leading system turn (role "system", `_finish_native`) as the
    body's `system_instruction`, where Gemini takes a system prompt. Alone it
    stays a user turn, as AgentScope sends it: the API needs a content."""
    contents = body["contents"]
    if not contents or contents[0].get("role") != "system":
        return
    if len(contents) == 1:
        contents[0] = {**contents[0], "role": "user"}
        return
    body["system_instruction"] = {"parts": contents[0]["parts"]}
    body["contents"] = contents[1:]


def _adapt_body(body: Json, note: Notes) -> None:
    """The pass: no empty parts or turns, the response schema where a plain
    JSON Schema goes, tool parameters narrowed to the keywords Gemini takes,
    a placeholder signature on calls Gemini did not sign."""
    contents = body.get("contents")
    if isinstance(contents, list):
        kept = []
        for index, content in enumerate(contents):
            parts = content.get("parts") if isinstance(content, dict) else None
            if isinstance(parts, list):
                left = []
                for number, part in enumerate(parts):
                    if (
                        isinstance(part, dict)
                        and set(part) <= {"text", "thought", "thought_signature"}
                        and not part.get("text")
                    ):
                        note(f"contents[{index}].parts[{number}]", "text", "dropped an empty part")
                        continue
                    left.append(part)
                if not left:
                    note(
                        f"contents[{index}]", str(content.get("role")), "dropped a turn left empty"
                    )
                    continue
                content = {**content, "parts": left}
            kept.append(content)
        body["contents"] = kept
        _sign_calls(kept, note)
        _system_instruction(body)
    if "response_schema" in body:
        # `response_schema` is Gemini's OpenAPI subset; a plain JSON Schema goes
        # in `response_json_schema`, which takes JSON Schema as it is.
        where = "generation_config.response_json_schema"
        note("response_schema", "response_schema", f"moved to {where}")
        body["response_json_schema"] = body.pop("response_schema")
    _rest_body(body)
    for index, tool in enumerate(body.get("tools") or []):
        for number, declaration in enumerate(tool.get("function_declarations") or []):
            parameters = declaration.get("parameters")
            if isinstance(parameters, dict):
                at = f"tools[{index}].function_declarations[{number}].parameters"
                declaration["parameters"] = _gemini_schema(parameters, at, note)


class Gemini(ProviderFidelity, GeminiParity):
    """`generateContent` in provider fidelity (see the module's docstring)."""

    turns = TurnTable(_NATIVE_BLOCKS, _finish_native, _skipped)
    recounts = True

    def counted(self, messages: list[Block]) -> list[Block]:
        # The system mark counts as the user turn AgentScope sends.
        if messages and messages[0].get("role") == "system":
            return [{**messages[0], "role": "user"}, *messages[1:]]
        return messages

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            return format_multi_agent(msgs, ctx, _leading_system, self.format_chat, _history)
        return self.format_chat(msgs, ctx)

    reader = _Reader()
    # Any: the API documents no rule, and AgentScope names Gemini's own calls
    # after their thought signatures.
    call_ids = None
    conversation = "contents"

    def adapt(self, body: Block, note: Notes) -> None:
        _adapt_body(body, note)


PROVIDER = Provider(
    enum=PROVIDER_GEMINI,
    options=frozenset(
        {
            "promote_tool_result_images",
            "conversation_history_prompt",
            "response_schema",
            "response_schema_name",
        }
    ),
    formatted_blocks=frozenset({"text", "tool_use", "tool_result", "image", "audio", "video"}),
    dropped_blocks=frozenset({"thinking", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # Inline data of the document types the Gemini API lists.
    document_types=frozenset(
        {"application/pdf", "text/plain", "text/html", "text/csv", "text/xml", "text/rtf"}
    ),
    agentscope=GeminiParity,
    provider=Gemini,
    compiled=GEMINI,
)
