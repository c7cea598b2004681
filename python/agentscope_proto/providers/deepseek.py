"""DeepSeek: requests as AgentScope's DeepSeekChatFormatter/DeepSeekMultiAgentFormatter +
OpenAIChatModel build them; responses as OpenAIChatModel parses them.

Only the message list is DeepSeek's own: text-only content strings and `reasoning_content`.
The body and both parsers are OpenAIChatModel's: the provider subclasses `openai.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_DEEPSEEK
from ._base import FormatContext, MsgView, tool_result_to_text
from ._shared import (
    block_handler,
    format_multi_agent,
    history_prompt,
    history_text,
    system_blocks,
    tool_call,
    tool_message,
)
from .openai import OpenAIChat

__all__ = ["PROVIDER"]

Block = dict[str, Any]


@dataclass(slots=True)
class _Turn:
    """One message on its way through the chat formatter."""

    msg: MsgView
    ctx: FormatContext
    out: list[Block]
    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    tool_calls: list[Block] = field(default_factory=list)


def _text(turn: _Turn, at: int, block: Block) -> None:
    turn.texts.append(block.get("text", ""))


def _thinking(turn: _Turn, at: int, block: Block) -> None:
    turn.thoughts.append(block.get("thinking", ""))


def _tool_use(turn: _Turn, at: int, block: Block) -> None:
    turn.tool_calls.append(tool_call(block))


def _tool_result(turn: _Turn, at: int, block: Block) -> None:
    turn.ctx.at(turn.msg, at)
    # Media in the result only leave their path in the text: no promotion here.
    text, _ = tool_result_to_text(block.get("output"), turn.ctx)
    turn.out.append(tool_message(block, text))


_CHAT_BLOCKS: dict[str, Callable[[_Turn, int, Block], None]] = {
    "text": _text,
    "thinking": _thinking,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
}


def _format_chat(msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
    """`DeepSeekChatFormatter._format`: one string of content per message."""
    out: list[Block] = []
    for msg in msgs:
        turn = _Turn(msg, ctx, out)
        for at, block in enumerate(msg.get_content_blocks()):
            handler = block_handler(_CHAT_BLOCKS, ctx, msg, at, block)
            if handler is not None:
                handler(turn, at, block)
        text = "\n".join(turn.texts)
        # Empty text is "" unless the message calls tools (then null); a message
        # with neither text nor calls is dropped, reasoning or not.
        message: Block = {"role": msg.role, "content": text or (None if turn.tool_calls else "")}
        reasoning = "\n".join(turn.thoughts)
        if reasoning:
            message["reasoning_content"] = reasoning
        if turn.tool_calls:
            message["tool_calls"] = turn.tool_calls
        if message["content"] or turn.tool_calls:
            out.append(message)
    return out


def _format_agent_message(group: list[MsgView], ctx: FormatContext, first: bool) -> list[Block]:
    """One user message with the history as a string; non-text blocks are ignored silently."""
    lines = [
        f"{msg.name}: {block['text']}" for msg in group for block in msg.get_content_blocks("text")
    ]
    if not lines:
        return []
    return [{"role": "user", "content": history_text(lines, history_prompt(ctx, first))}]


class _DeepSeek(OpenAIChat):
    name = "deepseek"
    enum = PROVIDER_DEEPSEEK
    options = frozenset({"conversation_history_prompt"})
    formatted_blocks = frozenset({"text", "thinking", "tool_use", "tool_result"})
    dropped_blocks = frozenset({"image", "audio", "video", "opaque"})

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            return format_multi_agent(msgs, ctx, system_blocks, _format_chat, _format_agent_message)
        return _format_chat(msgs, ctx)


PROVIDER = _DeepSeek()
