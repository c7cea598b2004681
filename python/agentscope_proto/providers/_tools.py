"""Tool calls and tool choice as AgentScope's formatters and model classes
write them: call arguments as `json.dumps` writes them, Chat-Completions-style
tool calls and tool messages, the tool choice checked against the tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import FormatError, ToolChoiceError
from ._context import FormatContext

__all__ = [
    "TOOL_CHOICE_MODES",
    "arguments_json",
    "tool_call",
    "tool_message",
    "tool_names",
    "validate_tool_choice",
    "without_tools",
]

Block = dict[str, Any]

# `ChatModelBase`'s tool choice modes; any other string must name a tool.
TOOL_CHOICE_MODES = ("auto", "none", "required")

# `json.dumps(value, ensure_ascii=False)` builds this same encoder on every call.
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False)


def _arguments_encoder() -> Callable[[Any], str]:
    """`_ARGUMENTS.encode`; on CPython its C encoder, made once (`encode`
    makes one per call, most of the cost for a small object). Without the
    circular-reference check: arguments come from JSON, which has no cycles."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _ARGUMENTS.encode
    encoder = make(
        None,  # no circular-reference markers
        _ARGUMENTS.default,
        json.encoder.encode_basestring,  # ensure_ascii=False
        None,  # no indent
        _ARGUMENTS.key_separator,
        _ARGUMENTS.item_separator,
        False,  # sort_keys
        False,  # skipkeys
        True,  # allow_nan
    )

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


_ENCODE_ARGUMENTS = _arguments_encoder()


def arguments_json(value: Any) -> str:
    """Tool-call arguments as AgentScope writes them: `json.dumps(value,
    ensure_ascii=False)`, Python's default separators."""
    return _ENCODE_ARGUMENTS(value)


def tool_call(block: Block) -> Block:
    """A tool_use block as a Chat Completions `tool_calls` entry."""
    return {
        "id": block.get("id"),
        "type": "function",
        "function": {
            "name": block.get("name"),
            "arguments": arguments_json(block.get("input", {})),
        },
    }


def tool_message(block: Block, text: str) -> Block:
    """The `role: tool` message carrying one tool result's text."""
    return {
        "role": "tool",
        "tool_call_id": block.get("id"),
        "content": text,
        "name": block.get("name"),
    }


def without_tools(body: Block, choice_key: str, ctx: FormatContext) -> None:
    """Structured output: the model is asked for the schema's JSON, not for tool
    calls, so tools and the tool choice (under `choice_key`) leave the body,
    with a warning when there were any (AgentScope's structured model)."""
    tools, choice = body.pop("tools", None), body.pop(choice_key, None)
    if tools is not None or choice is not None:
        ctx.warn(None, None, "tool", "tools and tool_choice not sent with structured output")


def tool_names(tools: list[Block]) -> list[Any]:
    """The function names of OpenAI-style tool schemas, as AgentScope reads them
    (`tool["function"]["name"]`) to check a tool choice."""
    names = []
    for index, tool in enumerate(tools):
        function = tool.get("function")
        if not isinstance(function, dict):
            raise FormatError(f"tools[{index}].function", "expected an object with a 'name'")
        if "name" not in function:
            raise FormatError(f"tools[{index}].function.name", "missing")
        names.append(function["name"])
    return names


def validate_tool_choice(choice: Any, tools: list[Block] | None) -> str:
    """`ChatModelBase._validate_tool_choice`: `choice` if it is a mode or the name
    of one of `tools`.

    Aliases ("any") are the model classes' business: they map them first.
    """
    if not isinstance(choice, str):
        raise ToolChoiceError("tool_choice", f"must be str, got {type(choice).__name__}")
    if choice in TOOL_CHOICE_MODES:
        return choice
    if tools is None:
        # AgentScope iterates the missing tools and fails with a TypeError.
        raise ToolChoiceError("tool_choice", f"names the tool '{choice}' but no tools were given")
    names = tool_names(tools)
    if choice not in names:
        options = ", ".join(sorted([*TOOL_CHOICE_MODES, *map(str, names)]))
        raise FormatError(
            "tool_choice", f"Invalid tool_choice '{choice}'. Available options: {options}"
        )
    return choice
