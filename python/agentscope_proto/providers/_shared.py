"""Helpers several provider modules share because AgentScope's formatters and
model classes share them: the same code there, one copy here.

Where AgentScope's providers differ on purpose, the difference stays in the
provider module (or is a parameter here, named for what it changes).
"""

from __future__ import annotations

from typing import Any

import filetype

from ..errors import FormatError, ToolChoiceError

__all__ = ["TOOL_CHOICE_MODES", "sniff_image", "tool_names", "validate_tool_choice"]

Block = dict[str, Any]

# `ChatModelBase`'s tool choice modes; any other string must name a tool.
TOOL_CHOICE_MODES = ("auto", "none", "required")


def sniff_image(data: bytes) -> str | None:
    """The image MIME type `filetype.guess` finds in `data`, else None.

    AgentScope types local images without a known extension this way; a match
    that is not an image (DICOM sits among filetype's image matchers) is None.
    """
    kind = filetype.guess(data)
    if kind is None:
        return None
    mime: str = kind.mime
    return mime if mime.startswith("image/") else None


# -- tool choice -------------------------------------------------------------------


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
