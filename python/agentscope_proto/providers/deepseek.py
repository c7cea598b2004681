"""DeepSeek: requests as AgentScope's DeepSeekChatFormatter/DeepSeekMultiAgentFormatter +
OpenAIChatModel build them; responses as OpenAIChatModel parses them.

Only the message list is DeepSeek's own: text-only content strings and `reasoning_content`.
The body and both parsers are OpenAIChatModel's: the provider subclasses `openai.py`'s.
"""

from __future__ import annotations

from typing import Any

from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_DEEPSEEK
from ..request import RequestFields
from ._context import FormatContext
from ._history import format_multi_agent, history_prompt, history_text, system_blocks
from ._provider import UNKNOWN_TO_AGENTSCOPE
from ._tools import tool_call, tool_message
from ._turns import Handler, Turn, format_turns, tool_result_handler
from .chat_extras import deepseek_thinking, provider_handlers, with_reasoning
from .openai import OpenAIChat

__all__ = ["PROVIDER"]

Block = dict[str, Any]


def _text(turn: Turn, at: int, block: Block) -> None:
    turn.texts.append(block.get("text", ""))


def _thinking(turn: Turn, at: int, block: Block) -> None:
    # Reasoning goes out as `reasoning_content`.
    turn.parts.append(block.get("thinking", ""))


def _tool_use(turn: Turn, at: int, block: Block) -> None:
    turn.tool_calls.append(tool_call(block))


_CHAT_BLOCKS: dict[str, Handler] = {
    "text": _text,
    "thinking": _thinking,
    "tool_use": _tool_use,
    # Media in the result only leave their path in the text: no promotion here.
    "tool_result": tool_result_handler(tool_message, kinds=()),
}


def _finish_chat(turn: Turn) -> None:
    text = "\n".join(turn.texts)
    # Empty text is "" unless the message calls tools (then null); a message
    # with neither text nor calls is dropped, reasoning or not.
    message: Block = {"role": turn.msg.role, "content": text or (None if turn.tool_calls else "")}
    reasoning = "\n".join(turn.parts)
    if reasoning:
        message["reasoning_content"] = reasoning
    if turn.tool_calls:
        message["tool_calls"] = turn.tool_calls
    if message["content"] or turn.tool_calls:
        turn.out.append(message)


# Provider fidelity: reasoning that came as vLLM's `reasoning` goes back there;
# other providers' server-tool blocks are dropped (see chat_extras.py).
_PROVIDER_BLOCKS = provider_handlers(_CHAT_BLOCKS, thinking=deepseek_thinking(_thinking))
_finish_provider = with_reasoning(_finish_chat)


def _format_chat(msgs: list[MsgView], ctx: FormatContext) -> list[Block]:
    """`DeepSeekChatFormatter._format`: one string of content per message."""
    if ctx.settings.fidelity == "provider":
        return format_turns(msgs, ctx, _PROVIDER_BLOCKS, _finish_provider)
    return format_turns(msgs, ctx, _CHAT_BLOCKS, _finish_chat)


def _format_agent_message(group: list[MsgView], ctx: FormatContext, first: bool) -> list[Block]:
    """One user message with the history as a string; non-text blocks are ignored silently."""
    lines = [
        f"{msg.name}: {block['text']}" for msg in group for block in msg.get_content_blocks("text")
    ]
    if not lines:
        return []
    return [{"role": "user", "content": history_text(lines, history_prompt(ctx, first))}]


# Where DeepSeek's chat API takes each request parameter: the output budget
# as `max_tokens`; it documents no `seed`.
REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop",
    seed=None,
    stream="stream",
)


class _DeepSeek(OpenAIChat):
    name = "deepseek"
    enum = PROVIDER_DEEPSEEK
    options = frozenset({"conversation_history_prompt", "response_schema", "response_schema_name"})
    request_fields = REQUEST_FIELDS
    # Text only.
    document_types = frozenset[str]()
    formatted_blocks = frozenset({"text", "thinking", "tool_use", "tool_result"})
    dropped_blocks = frozenset({"image", "audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        if multi_agent:
            return format_multi_agent(msgs, ctx, system_blocks, _format_chat, _format_agent_message)
        return _format_chat(msgs, ctx)


PROVIDER = _DeepSeek()
