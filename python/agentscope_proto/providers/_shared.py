"""Helpers several provider modules share because AgentScope's formatters and
model classes share them: the same code there, one copy here.

Where AgentScope's providers differ on purpose, the difference stays in the
provider module (or is a parameter here, named for what it changes).
"""

from __future__ import annotations

import base64
import http.client
from typing import Any

import filetype

from ..errors import FormatError, MediaAccessError, ToolChoiceError
from ._base import FormatContext

__all__ = [
    "TOOL_CHOICE_MODES",
    "sniff_image",
    "tool_names",
    "validate_tool_choice",
    "web_body",
]

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


_DOWNLOAD_ATTEMPTS = 3


def web_body(url: str, ctx: FormatContext) -> str:
    """AgentScope's `_get_bytes_from_web_url` (Gemini's and Ollama's formatters):
    up to three tries; a body that is valid UTF-8 comes back as that text, not
    as base64 (its bug, reproduced)."""
    reason = ""
    for _ in range(_DOWNLOAD_ATTEMPTS):
        try:
            body = ctx.download(url)
        except FormatError:
            raise  # not allowed, or too large: trying again changes nothing
        except (OSError, ValueError, http.client.HTTPException) as exc:
            reason = str(exc)
            continue
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(body).decode("ascii")
    raise MediaAccessError(
        ctx.location, f"{url!r}: download failed {_DOWNLOAD_ATTEMPTS} times ({reason})"
    )


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
