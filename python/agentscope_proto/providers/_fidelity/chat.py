"""Provider fidelity for OpenAI chat, DeepSeek, Ollama and DashScope bodies."""

from __future__ import annotations

from typing import Any

from ._common import Json, Notes, empty, note_text, prune, wrap_bare_tools

# -- OpenAI chat, DeepSeek ------------------------------------------------------------------

_CHAT_PARTS = {
    "text": frozenset({"type", "text"}),
    "image_url": frozenset({"type", "image_url"}),
    "input_audio": frozenset({"type", "input_audio"}),
    "file": frozenset({"type", "file"}),
    "refusal": frozenset({"type", "refusal"}),
}
_ASSISTANT_PARTS = frozenset({"text", "refusal"})
# ollama.Message's fields a tool message uses.
_OLLAMA_TOOL_MESSAGE = frozenset({"role", "content", "tool_name", "images"})


def _chat_content(message: Json, path: str, note: Notes) -> None:
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
        if empty(part):
            note(at, kind, "dropped an empty text part")
            continue
        if kind == "text" and "citations" in part:
            # Request messages take no annotations: the text goes without them, silently.
            part = {key: value for key, value in part.items() if key != "citations"}
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


def _chat_messages(body: Json, note: Notes, tool_name: bool) -> None:
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
            elif "name" in message:
                message = prune(
                    message,
                    frozenset({"role", "content", "tool_call_id"}),
                    path,
                    "tool_result",
                    note,
                )
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
    body["messages"] = kept


def openai(body: Json, note: Notes) -> None:
    _chat_messages(body, note, tool_name=False)
    wrap_bare_tools(body, note)


# -- Ollama ---------------------------------------------------------------------------------

_OLLAMA_PARAMETERS = frozenset({"type", "defs", "items", "required", "properties"})
_OLLAMA_PROPERTY = frozenset({"type", "items", "description", "enum"})


def ollama(body: Json, note: Notes) -> None:
    _chat_messages(body, note, tool_name=True)
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


# -- DashScope ------------------------------------------------------------------------------


def dashscope(body: Json, note: Notes) -> None:
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
