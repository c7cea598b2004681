"""Gemini's tools as GeminiChatModel sends them: function declarations with
`$ref`s inlined, and the tool config of a tool choice."""

from __future__ import annotations

import copy
from typing import Any

from ..errors import FormatError
from ._context import FormatContext
from ._tools import validate_tool_choice

__all__ = ["function_declarations", "inline_refs", "tool_config"]

_CHOICE_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_DEFS_PREFIX = "#/$defs/"


def inline_refs(schema: Any, ctx: FormatContext, path: str) -> Any:
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


def function_declarations(tools: list[dict[str, Any]], ctx: FormatContext) -> list[dict[str, Any]]:
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
            function["parameters"] = inline_refs(
                function["parameters"], ctx, f"tools[{index}].function.parameters"
            )
        declarations.append(function)
    return [{"function_declarations": declarations}]


def tool_config(tool_choice: Any, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """ChatModelBase._validate_tool_choice plus GeminiChatModel._format_tool_choice."""
    if tool_choice == "any":
        tool_choice = "required"  # deprecated alias (a DeprecationWarning, not a log)
    choice = validate_tool_choice(tool_choice, tools)
    if choice in _CHOICE_MODES:
        return {"function_calling_config": {"mode": _CHOICE_MODES[choice]}}
    return {"function_calling_config": {"mode": "ANY", "allowed_function_names": [choice]}}
