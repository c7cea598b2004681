"""AgentScope's multi-agent formatters (`TruncatedFormatterBase._format`): a
leading system message, runs of tool messages through the chat formatter,
and runs of agent messages folded into one `<history>` user message each.
What differs per provider (the system message, the history message) comes in
as functions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from .._engine.views import MsgView
from ..errors import FormatError
from ._context import FormatContext

__all__ = [
    "format_multi_agent",
    "group_messages",
    "history_prompt",
    "history_text",
    "system_blocks",
    "system_text",
    "wrap_history",
]

Block = dict[str, Any]
GroupKind = Literal["tool_sequence", "agent_message"]


def group_messages(msgs: Sequence[MsgView]) -> Iterator[tuple[GroupKind, list[MsgView]]]:
    """AgentScope's `_group_messages`: runs of tool messages and of agent messages."""
    group: list[MsgView] = []
    kind: GroupKind | None = None
    for msg in msgs:
        this: GroupKind = "tool_sequence" if msg.has_tool_blocks() else "agent_message"
        if kind is not None and this != kind:
            yield kind, group
            group = []
        kind = this
        group.append(msg)
    if kind is not None:
        yield kind, group


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
