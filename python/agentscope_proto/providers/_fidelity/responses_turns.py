"""Provider fidelity for the Responses chat formatter: what a parsed response
kept goes back as the input items the API expects, in the order it came.

AgentScope's formatter skips thinking and every block kind it does not know,
and puts a message's function calls after its text. In provider fidelity a
turn is walked in block order instead, and each block becomes:

- text: an input or output text part; an assistant's `citations` go back as
  the `output_text` part's `annotations` (Responses annotation types only,
  others are dropped with a warning);
- thinking with a `reasoning_id`: a `reasoning` input item (`id`, `summary`,
  `encrypted_content`), consecutive blocks of one id as one item; thinking
  without one (another provider's, or none) cannot go back and is dropped;
- server_tool_use, or server_tool_result holding the item in `raw`: the item
  verbatim, when it is one the Responses input takes; another provider's
  (Anthropic, Gemini) is dropped. A result without `raw` is carried by its
  use block's item;
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
from .._shared import arguments_json
from .._turns import Handler, Turn, skipped_block

__all__ = ["PROVIDER_HANDLERS", "finish_provider_turn"]

Json = dict[str, Any]

# The item types `ResponseInputItemParam` takes besides messages and function calls.
INPUT_ITEM_TYPES = frozenset(
    {
        "additional_tools",
        "apply_patch_call",
        "apply_patch_call_output",
        "code_interpreter_call",
        "compaction",
        "compaction_trigger",
        "computer_call",
        "computer_call_output",
        "configuration_update",
        "custom_tool_call",
        "custom_tool_call_output",
        "file_search_call",
        "image_generation_call",
        "item_reference",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "mcp_list_tools",
        "program",
        "program_output",
        "shell_call",
        "shell_call_output",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
    }
)
# `output_text` annotation types.
_ANNOTATIONS = frozenset({"url_citation", "file_citation", "container_file_citation", "file_path"})


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
        kept = [c for c in citations if isinstance(c, dict) and c.get("type") in _ANNOTATIONS]
        if len(kept) < len(citations):
            turn.ctx.warn(
                turn.msg,
                index,
                "text",
                "dropped citations that are not Responses annotations (another provider's)",
            )
        if kept:
            part["annotations"] = copy_json(kept)
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


def _own_item(block: Json) -> Json | None:
    """The block's `raw` item when it is a Responses input item of its kind."""
    raw = block.get("raw")
    kind = block.get("provider_type")
    if isinstance(raw, dict) and kind in INPUT_ITEM_TYPES and raw.get("type") == kind:
        return raw
    return None


def _server_tool_use(turn: Turn, index: int, block: Json) -> None:
    item = _own_item(block)
    if item is None:
        _skip(turn, index, "server_tool_use")
        return
    turn.parts.append(_Item(copy_json(item)))


def _server_tool_result(turn: Turn, index: int, block: Json) -> None:
    item = _own_item(block)
    if item is not None:
        turn.parts.append(_Item(copy_json(item)))
    elif "raw" in block or block.get("provider_type") not in INPUT_ITEM_TYPES:
        _skip(turn, index, "server_tool_result")
    # Otherwise its call's item (the use block's `raw`) already holds it.


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


PROVIDER_HANDLERS: dict[str, Handler] = {
    "text": _text,
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
