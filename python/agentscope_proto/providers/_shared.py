"""Helpers several provider modules share because AgentScope's formatters and
model classes share them: the same code there, one copy here.

Where AgentScope's providers differ on purpose, the difference stays in the
provider module (or is a parameter here, named for what it changes).
"""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Callable
from typing import Any, TypeVar

import filetype

from ..errors import FormatError, MediaAccessError, ToolChoiceError
from ..results import copy_json
from ._base import FormatContext, MsgView, group_messages
from ._repair import loads_streaming, loads_with_repair

__all__ = [
    "TOOL_CHOICE_MODES",
    "StreamedInputs",
    "arguments_json",
    "format_multi_agent",
    "history_prompt",
    "history_text",
    "promoted_message",
    "repair_tool_inputs",
    "sniff_image",
    "streamed_tool_use",
    "system_blocks",
    "system_text",
    "tool_call",
    "tool_message",
    "tool_names",
    "validate_tool_choice",
    "web_body",
    "wrap_history",
]

Block = dict[str, Any]
H = TypeVar("H")

# `ChatModelBase`'s tool choice modes; any other string must name a tool.
TOOL_CHOICE_MODES = ("auto", "none", "required")
# AgentScope's `_get_bytes_from_web_url` tries a download this often.
_DOWNLOAD_ATTEMPTS = 3


def without_tools(body: Block, choice_key: str, ctx: FormatContext) -> None:
    """Structured output: the model is asked for the schema's JSON, not for tool
    calls, so tools and the tool choice (under `choice_key`) leave the body,
    with a warning when there were any (AgentScope's structured model)."""
    tools, choice = body.pop("tools", None), body.pop(choice_key, None)
    if tools is not None or choice is not None:
        ctx.warn(None, None, "tool", "tools and tool_choice not sent with structured output")


# -- chat formatter pieces -------------------------------------------------------------


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


def promoted_message(
    source: MsgView,
    tool_name: str,
    media: list[tuple[str, Block]],
    ctx: FormatContext,
    *,
    kinds: tuple[str, ...] = ("image",),
    noun: str = "image",
) -> MsgView | None:
    """AgentScope's promotion of a tool result's media (`tool_result_to_text`'s
    pairs): the items of `kinds` whose `promote_tool_result_<kind>s` option is on,
    as the user message that follows `source` (None when nothing is promoted).

    Only DashScope promotes audio and video (and says "media" in the opening line).
    """
    promoted = [
        (where, item["type"])
        for where, item in media
        if item["type"] in kinds and ctx.settings.promotes(item["type"])
    ]
    if not promoted:
        return None
    content: list[Block] = [
        {
            "type": "text",
            "text": f"<system-info>The following are the {noun} contents from the tool "
            f"result of '{tool_name}':",
        }
    ]
    for where, kind in promoted:
        content.append({"type": "text", "text": f"\n- The {kind} from '{where}': "})
        content.append({"type": kind, "source": {"type": "url", "url": where}})
    content.append({"type": "text", "text": "</system-info>"})
    return MsgView("user", "user", content, source.index)


# -- multi-agent formatters ------------------------------------------------------------


def format_multi_agent(
    msgs: list[MsgView],
    ctx: FormatContext,
    system_message: Callable[[MsgView], Block],
    tool_sequence: Callable[[list[MsgView], FormatContext], list[Block]],
    agent_message: Callable[[list[MsgView], FormatContext, bool], list[Block]],
) -> list[Block]:
    """`TruncatedFormatterBase._format`: a leading system message, then each run of
    tool messages through the chat formatter and each run of agent messages folded
    into history (`agent_message` is told which run is the first: only that one
    carries the conversation history prompt)."""
    out: list[Block] = []
    rest = msgs
    if msgs and msgs[0].role == "system":
        out.append(system_message(msgs[0]))
        rest = msgs[1:]
    first = True
    for kind, group in group_messages(rest):
        if kind == "tool_sequence":
            # Messages a chat formatter promotes stay inside the run, as in
            # AgentScope (which formats each run on its own).
            out.extend(tool_sequence(group, ctx))
        else:
            out.extend(agent_message(group, ctx, first))
            first = False
    return out


def system_blocks(msg: MsgView) -> Block:
    """The leading system message with its text blocks as they are."""
    return {"role": "system", "content": msg.get_content_blocks("text")}


def system_text(msg: MsgView) -> Block:
    """The leading system message as one string (None when it has no text)."""
    return {"role": "system", "content": msg.get_text_content()}


def history_prompt(ctx: FormatContext, first: bool = True) -> str:
    """The conversation history prompt; only the first run of agent messages
    carries it ("" for the others)."""
    return ctx.settings.history_prompt if first else ""


def history_text(lines: list[str], prompt: str) -> str:
    """Agent-message lines wrapped in `<history>` tags behind the prompt ("" without lines)."""
    if not lines:
        return ""
    return f"{prompt}<history>\n" + "\n".join(lines) + "\n</history>"


def wrap_history(
    parts: list[Block],
    prompt: str,
    ctx: FormatContext,
    *,
    opening: str = "<history>\n",
    part_type: str | None = None,
) -> None:
    """Put the `<history>` tags around interleaved history parts, in place.

    The prompt and opening tag join the first part's text and the closing tag
    the last part's; a part without text (media) gets a text part of its own
    beside it. `opening` is Gemini's to change (no newline there), `part_type`
    Anthropic's (its text parts say `"type": "text"`).
    """

    def text_of(part: Block) -> str:
        text = part["text"]
        if not isinstance(text, str):
            # Only a media block's stray `text` key can be anything else.
            raise FormatError(ctx.location, "history block text must be a string")
        return text

    def text_part(text: str) -> Block:
        return {"type": part_type, "text": text} if part_type else {"text": text}

    if parts[0].get("text"):
        parts[0]["text"] = prompt + opening + text_of(parts[0])
    else:
        parts.insert(0, text_part(prompt + opening))
    if parts[-1].get("text"):
        parts[-1]["text"] = text_of(parts[-1]) + "\n</history>"
    else:
        parts.append(text_part("</history>"))


# -- media -----------------------------------------------------------------------------


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


# -- tool choice -----------------------------------------------------------------------


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


# -- streamed responses ----------------------------------------------------------------


class StreamedInputs:
    """The last input parsed per tool call *id* (AgentScope keys it so), and the
    argument text it was parsed from."""

    __slots__ = ("parsed", "raw")

    def __init__(self) -> None:
        self.parsed: dict[str, dict[str, Any]] = {}
        self.raw: dict[str, str] = {}


def streamed_tool_use(
    call_id: str,
    name: str,
    raw: str | None,
    last_inputs: StreamedInputs,
    parse: bool,
) -> Block:
    """A tool call in a stream snapshot, as AgentScope's chat models build it.

    With `parse` (`stream_tool_parsing`) the partial arguments are repaired,
    never shrinking below the last input parsed for the same call id (AgentScope
    keys them by id, so calls sharing an id share it); without, the input stays
    `{}` until the stream ends (see `repair_tool_inputs`).
    """
    parsed: dict[str, Any] = {}
    if parse:
        text = raw or ""
        last = last_inputs.parsed.get(call_id)
        if last is not None and last_inputs.raw.get(call_id) == text:
            # The same text against the input it gave: AgentScope's parse would
            # give that input again, so json_repair need not run. A copy, as a
            # fresh parse would be (callers may change the snapshot they get).
            parsed = copy_json(last)
        else:
            parsed = loads_streaming(text, last)
        last_inputs.parsed[call_id] = parsed
        last_inputs.raw[call_id] = text
    return {"type": "tool_use", "id": call_id, "name": name, "input": parsed, "raw_input": raw}


def repair_tool_inputs(content: list[Block]) -> dict[str, Any] | None:
    """AgentScope's extra final snapshot without `stream_tool_parsing`: every tool
    input parsed from its raw text at last, in place. Returns the last one (the
    structured output, when the request asked for one)."""
    last = None
    for block in content:
        if block["type"] == "tool_use":
            block["input"] = last = loads_with_repair(str(block.get("raw_input") or "{}"))
    return last
