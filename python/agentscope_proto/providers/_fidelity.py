"""Provider fidelity for `format()`: the parity body adapted to the provider's API.

`format(..., fidelity="provider")` formats exactly as AgentScope 1.0.21 first,
then hands the finished body to the pass below for its provider. The parity
code never sees this module, so provider fidelity cannot leak into parity.

Each pass makes the body one the provider's own request schema accepts: keys
the provider does not define are dropped (foreign signatures, `cache_control`
where the API has none, `name` on tool messages), content a place cannot hold
is replaced by a short text note (audio in an Anthropic tool result, an image
in an OpenAI assistant turn, unsigned thinking for Anthropic becomes text),
tool calls nothing answers are dropped, empty text and thinking blocks are
dropped, and tool schemas are narrowed to the keywords the provider takes.
Every drop or move is a `FormatWarning` whose path points into the parity body
(`messages[3].content[1]`), `block_type` the kind of thing changed and
`message` what was done. Pure: the input body is deep-copied, never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning

__all__ = ["provider_fidelity"]

Json = dict[str, Any]


class _Notes:
    """The warnings of one pass."""

    def __init__(self, warnings: list[FormatWarning]) -> None:
        self.warnings = warnings

    def __call__(self, path: str, kind: str, message: str) -> None:
        self.warnings.append(FormatWarning(path=path, block_type=kind, message=message))


def _note_text(kind: str, where: str) -> str:
    """The text that stands in for content a place cannot hold."""
    return f"[{kind} omitted: {where} cannot hold it]"


def _prune(item: Json, allowed: frozenset[str], path: str, kind: str, note: _Notes) -> Json:
    """`item` without the keys the provider does not define, each dropped key noted."""
    extra = [key for key in item if key not in allowed]
    for key in extra:
        note(f"{path}.{key}", kind, f"dropped {key!r}: the provider does not define it here")
    return {key: value for key, value in item.items() if key in allowed} if extra else item


def _empty(block: Json) -> bool:
    """A text or thinking block with nothing in it (no text, no signature)."""
    kind = block.get("type")
    if kind == "text":
        return not block.get("text")
    if kind == "thinking":
        return not block.get("thinking") and not block.get("signature")
    return False


def _wrap_bare_tools(body: Json, note: _Notes) -> None:
    """OpenAI-style bodies: an unwrapped schema becomes a function tool."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return
    wrapped = []
    for index, tool in enumerate(tools):
        if isinstance(tool, dict) and "type" not in tool and "function" not in tool:
            note(f"tools[{index}]", "tool", "wrapped a bare schema as a function tool")
            tool = {"type": "function", "function": tool}
        wrapped.append(tool)
    body["tools"] = wrapped


# -- OpenAI chat, DeepSeek ------------------------------------------------------------------

_CHAT_PARTS = {
    "text": frozenset({"type", "text"}),
    "image_url": frozenset({"type", "image_url"}),
    "input_audio": frozenset({"type", "input_audio"}),
    "file": frozenset({"type", "file"}),
    "refusal": frozenset({"type", "refusal"}),
}
_ASSISTANT_PARTS = frozenset({"text", "refusal"})


def _chat_content(message: Json, path: str, note: _Notes) -> None:
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
            part = {"type": "text", "text": _note_text(kind, "an assistant turn")}
            kind = "text"
        if _empty(part):
            note(at, kind, "dropped an empty text part")
            continue
        parts.append(_prune(part, _CHAT_PARTS[kind], at, kind, note))
    message["content"] = parts


def _chat_answered(messages: list[Json], index: int) -> set[Any]:
    """The tool call ids the tool messages right after `messages[index]` answer."""
    ids = set()
    for later in messages[index + 1 :]:
        if later.get("role") != "tool":
            break
        ids.add(later.get("tool_call_id"))
    return ids


def _chat_messages(body: Json, note: _Notes, tool_name: bool) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    calls_by_id: dict[str, str] = {}
    kept = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if not isinstance(message, dict):
            kept.append(message)
            continue
        _chat_content(message, path, note)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            answered = _chat_answered(messages, index)
            kept_calls = []
            for number, call in enumerate(calls):
                at = f"{path}.tool_calls[{number}]"
                if call.get("id") not in answered:
                    note(at, "tool_use", "dropped a tool call no tool message answers")
                    continue
                calls_by_id[call.get("id")] = call.get("function", {}).get("name", "")
                if tool_name:
                    # Ollama's ToolCall is only `function`.
                    call = _prune(call, frozenset({"function"}), at, "tool_use", note)
                kept_calls.append(call)
            if kept_calls:
                message["tool_calls"] = kept_calls
            else:
                del message["tool_calls"]
        if message.get("role") == "tool":
            if tool_name:
                # Ollama names the answered tool `tool_name`, not `tool_call_id`.
                name = message.get("name") or calls_by_id.get(message.get("tool_call_id", ""), "")
                message = _prune(message, frozenset({"role", "content"}), path, "tool_result", note)
                if name:
                    message["tool_name"] = name
            elif "name" in message:
                message = _prune(
                    message,
                    frozenset({"role", "content", "tool_call_id"}),
                    path,
                    "tool_result",
                    note,
                )
        if (
            message.get("role") in ("assistant", "system")
            and not message.get("content")
            and not (message.get("tool_calls") or message.get("reasoning_content"))
        ):
            note(path, str(message.get("role")), "dropped a message left empty")
            continue
        kept.append(message)
    body["messages"] = kept


def _openai(body: Json, note: _Notes) -> None:
    _chat_messages(body, note, tool_name=False)
    _wrap_bare_tools(body, note)


# -- Ollama ---------------------------------------------------------------------------------

_OLLAMA_PARAMETERS = frozenset({"type", "defs", "items", "required", "properties"})
_OLLAMA_PROPERTY = frozenset({"type", "items", "description", "enum"})


def _ollama(body: Json, note: _Notes) -> None:
    _chat_messages(body, note, tool_name=True)
    _wrap_bare_tools(body, note)
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("parameters"), dict):
            continue
        parameters = function["parameters"]
        path = f"tools[{index}].function.parameters"
        parameters = _prune(parameters, _OLLAMA_PARAMETERS, path, "tool_schema", note)
        properties = parameters.get("properties")
        if isinstance(properties, dict):
            parameters["properties"] = {
                name: _prune(
                    value, _OLLAMA_PROPERTY, f"{path}.properties.{name}", "tool_schema", note
                )
                if isinstance(value, dict)
                else value
                for name, value in properties.items()
            }
        function["parameters"] = parameters


# -- OpenAI Responses -------------------------------------------------------------------------

_RESPONSES_USER_PARTS = frozenset({"input_text", "input_image", "input_file"})
_RESPONSES_ASSISTANT_PARTS = frozenset({"output_text", "refusal"})
_EMPTY_PARAMETERS: Json = {"type": "object", "properties": {}}


def _responses_part(part: Json, role: str, at: str, note: _Notes) -> Json | None:
    kind = str(part.get("type"))
    allowed = _RESPONSES_ASSISTANT_PARTS if role == "assistant" else _RESPONSES_USER_PARTS
    if kind not in allowed and kind not in ("input_text", "output_text"):
        note(at, kind, f"replaced by a text note: a {role} message cannot hold {kind!r}")
        text_type = "output_text" if role == "assistant" else "input_text"
        return {"type": text_type, "text": _note_text(kind, f"a {role} message")}
    if kind in ("input_text", "output_text") and not part.get("text"):
        note(at, kind, "dropped an empty text part")
        return None
    if kind == "input_image" and "detail" not in part:
        # Required by the API's schema; "auto" is its documented default.
        return {**part, "detail": "auto"}
    return part


def _responses(body: Json, note: _Notes) -> None:
    items = body.get("input")
    if isinstance(items, list):
        answered = {
            item.get("call_id")
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        }
        kept = []
        for index, item in enumerate(items):
            path = f"input[{index}]"
            if not isinstance(item, dict):
                kept.append(item)
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
            kept.append(item)
        body["input"] = kept
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict) or tool.get("type") != "function":
            continue
        if tool.get("parameters") is None:
            tool["parameters"] = copy.deepcopy(_EMPTY_PARAMETERS)
        if "strict" not in tool:
            # Explicit non-strict: left out, the API may switch a tool to strict
            # mode, which makes every optional parameter required.
            tool["strict"] = False


# -- Anthropic ------------------------------------------------------------------------------

_ANTHROPIC_BLOCKS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "cache_control", "title", "context", "citations"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
}
_TOOL_RESULT_KINDS = frozenset({"text", "image", "document", "search_result"})
_ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _anthropic_block(block: Json, at: str, note: _Notes, in_tool_result: bool) -> Json | None:
    kind = str(block.get("type"))
    if in_tool_result and kind not in _TOOL_RESULT_KINDS:
        note(at, kind, "replaced by a text note: a tool result takes text, images and documents")
        return {"type": "text", "text": _note_text(kind, "a tool result")}
    if _empty(block):
        note(at, kind, f"dropped an empty {kind} block")
        return None
    if kind == "thinking" and not block.get("signature"):
        # Thinking from another provider: Claude refuses it without a signature.
        note(at, kind, "unsigned thinking turned into text")
        return {"type": "text", "text": block.get("thinking", "")}
    if kind == "image":
        media = (block.get("source") or {}).get("media_type")
        if media is not None and media not in _ANTHROPIC_IMAGE_TYPES:
            note(at, kind, f"replaced by a text note: Claude takes no {media} images")
            return {"type": "text", "text": _note_text(str(media), "Claude")}
    if kind == "tool_result" and isinstance(block.get("content"), list):
        inner = [
            _anthropic_block(item, f"{at}.content[{number}]", note, True)
            if isinstance(item, dict)
            else item
            for number, item in enumerate(block["content"])
        ]
        block = {**block, "content": [item for item in inner if item is not None]}
    allowed = _ANTHROPIC_BLOCKS.get(kind)
    return block if allowed is None else _prune(block, allowed, at, kind, note)


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


def _anthropic_content(messages: list[Any], index: int, note: _Notes) -> list[Any]:
    message = messages[index]
    answered = _anthropic_answers(messages, index) if message.get("role") == "assistant" else None
    blocks = []
    for number, block in enumerate(message["content"]):
        at = f"messages[{index}].content[{number}]"
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


def _anthropic(body: Json, note: _Notes) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    turns: list[Json] = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message = {**message, "content": _anthropic_content(messages, index, note)}
            if not message["content"]:
                note(path, str(message.get("role")), "dropped a message left empty")
                continue
        if turns and _results_only(turns[-1]) and _results_only(message):
            # Parallel tool results answer one assistant turn: one user turn.
            note(path, "tool_result", "merged into the previous user turn")
            turns[-1] = {**turns[-1], "content": turns[-1]["content"] + message["content"]}
            continue
        turns.append(message)
    body["messages"] = turns


def _results_only(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


# -- Gemini ---------------------------------------------------------------------------------

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


def _gemini_schema(schema: Json, path: str, note: _Notes) -> Json:
    schema = _prune(schema, _GEMINI_SCHEMA, path, "tool_schema", note)
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


def _gemini(body: Json, note: _Notes) -> None:
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
    for index, tool in enumerate(body.get("tools") or []):
        for number, declaration in enumerate(tool.get("function_declarations") or []):
            parameters = declaration.get("parameters")
            if isinstance(parameters, dict):
                at = f"tools[{index}].function_declarations[{number}].parameters"
                declaration["parameters"] = _gemini_schema(parameters, at, note)


# -- DashScope ------------------------------------------------------------------------------


def _dashscope(body: Json, note: _Notes) -> None:
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


_PASSES: dict[str, Callable[[Json, _Notes], None]] = {
    "anthropic": _anthropic,
    "dashscope": _dashscope,
    "deepseek": _openai,
    "gemini": _gemini,
    "ollama": _ollama,
    "openai": _openai,
    "openai_responses": _responses,
}


def provider_fidelity(provider: str, body: Json, warnings: list[FormatWarning]) -> Json:
    """`body` (AgentScope parity, for `provider`) adapted so the provider accepts it.

    Appends a warning per change to `warnings`; returns a new body.
    """
    adapted = copy.deepcopy(body)
    _PASSES[provider](adapted, _Notes(warnings))
    return adapted
