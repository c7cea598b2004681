"""Helpers several provider modules share because AgentScope's formatters and
model classes share them: the same code there, one copy here.

Where AgentScope's providers differ on purpose, the difference stays in the
provider module (or is a parameter here, named for what it changes).
"""

from __future__ import annotations

import base64
import http.client
import json
from typing import Any

import filetype

from ..errors import FormatError, MediaAccessError, ToolChoiceError
from ._base import FormatContext, MsgView

__all__ = [
    "TOOL_CHOICE_MODES",
    "promote_media",
    "sniff_image",
    "tool_call",
    "tool_message",
    "tool_names",
    "validate_tool_choice",
    "web_body",
]

Block = dict[str, Any]

# `ChatModelBase`'s tool choice modes; any other string must name a tool.
TOOL_CHOICE_MODES = ("auto", "none", "required")


# -- chat formatter pieces -----------------------------------------------------------


def tool_call(block: Block) -> Block:
    """A tool_use block as a Chat Completions `tool_calls` entry (arguments as
    `json.dumps(..., ensure_ascii=False)` text, Python's default separators)."""
    return {
        "id": block.get("id"),
        "type": "function",
        "function": {
            "name": block.get("name"),
            "arguments": json.dumps(block.get("input", {}), ensure_ascii=False),
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


def promote_media(
    msgs: list[MsgView],
    position: int,
    tool_name: str,
    media: list[tuple[str, str]],
    noun: str = "image",
) -> None:
    """AgentScope's promotion of tool-result media (`(url or path, kind)` pairs):
    a user message listing them, inserted into `msgs` right after the message at
    `position` (so several promoting results of one message end up reversed).

    `noun` names the media in the opening line: DashScope says "media".
    """
    if not media:
        return
    content: list[Block] = [
        {
            "type": "text",
            "text": f"<system-info>The following are the {noun} contents from the tool "
            f"result of '{tool_name}':",
        }
    ]
    for where, kind in media:
        content.append({"type": "text", "text": f"\n- The {kind} from '{where}': "})
        content.append({"type": kind, "source": {"type": "url", "url": where}})
    content.append({"type": "text", "text": "</system-info>"})
    msgs.insert(position + 1, MsgView("user", "user", content, msgs[position].index))


# -- media --------------------------------------------------------------------------


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
