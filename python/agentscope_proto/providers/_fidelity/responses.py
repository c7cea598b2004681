"""Provider fidelity for OpenAI Responses bodies.

Function tools always get an explicit `"strict": false`: the API's schema
requires the key (`FunctionToolParam.strict`, nullable), and its documented
default is strict mode, which makes optional parameters required and refuses
schemas strict mode cannot take. Strict mode stays the caller's choice (a tool
schema that carries `strict` keeps it).

A reasoning item must be followed by the output it led to: one left without
(its function call dropped for want of an output, or the last item of the
input) is dropped too.
"""

from __future__ import annotations

import copy
from typing import Any

from ._common import Json, Notes, note_text

# -- OpenAI Responses -------------------------------------------------------------------------

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


def responses(body: Json, note: Notes) -> None:
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
