"""Provider fidelity for the Responses chat formatter: what a parsed response
kept goes back as the input items the API expects, in the order it came.

AgentScope's formatter skips thinking and every block kind it does not know,
and puts a message's function calls after its text. In provider fidelity a
turn is walked in block order instead, and each block becomes:

- text: an input or output text part; an assistant's `citations` go back as
  the `output_text` part's `annotations` (Responses annotations with every
  key the API requires; others are dropped with a warning);
- thinking with a `reasoning_id`: a `reasoning` input item (`id`, `summary`,
  `encrypted_content`), consecutive blocks of one id as one item; thinking
  without one (another provider's, or none) cannot go back and is dropped;
- server_tool_use, or server_tool_result holding the item in `raw`: the item
  verbatim, when it is one the Responses input takes (its type, and the keys
  the API requires; keys it does not define, another vendor's extras, are
  dropped); another provider's (Anthropic, Gemini) is dropped. A result
  without `raw` is carried by its use block's item;
- tool_use: a `function_call` item, in place;
- grounding: dropped (Gemini's; the Responses API has no such input).

Consecutive parts form one message item; an item between them splits it.
Every drop is a warning at the block's path (AgentScope's own "Unsupported
block type" text for the kinds AgentScope skips as well).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...results import copy_json
from .._documents import document
from .._tools import arguments_json
from .._turns import Handler, Turn, skipped_block

__all__ = ["PROVIDER_HANDLERS", "finish_provider_turn"]

Json = dict[str, Any]

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


def _skip(turn: Turn, index: int, kind: str) -> None:
    # AgentScope's own warning: a block dropped here is one it skips too.
    turn.ctx.warn(turn.msg, index, kind, skipped_block(kind))


def _text(turn: Turn, index: int, block: Json) -> None:
    assistant = turn.msg.role == "assistant"
    part: Json = {"type": "output_text" if assistant else "input_text", "text": block.get("text")}
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
    turn.parts.append(_Item(call))


def _document(turn: Turn, index: int, block: Json) -> None:
    # An `input_file` part: the PDF's data, or its URL as is.
    found = document(block, turn.ctx, keep_url=True)
    if found.url is not None:
        turn.parts.append({"type": "input_file", "file_url": found.url})
        return
    name = found.name or "document.pdf"
    turn.parts.append({"type": "input_file", "filename": name, "file_data": found.data_url()})


PROVIDER_HANDLERS: dict[str, Handler] = {
    "text": _text,
    "data": _document,
    "thinking": _thinking,
    "server_tool_use": _server_tool_use,
    "server_tool_result": _server_tool_result,
    "grounding": _grounding,
    "tool_use": _tool_use,
}


def finish_provider_turn(turn: Turn) -> None:
    """The turn's message parts and items, in block order; then what trails it
    (function call outputs)."""
    parts: list[Any] = []
    for segment in turn.parts:
        if not isinstance(segment, _Item):
            parts.append(segment)
            continue
        if parts:
            turn.out.append({"role": turn.msg.role, "content": parts})
            parts = []
        turn.out.append(segment.item)
    if parts:
        turn.out.append({"role": turn.msg.role, "content": parts})
    turn.out.extend(turn.trailing)
