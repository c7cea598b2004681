"""DeepSeek: requests as AgentScope's DeepSeekChatFormatter/DeepSeekMultiAgentFormatter +
OpenAIChatModel build them; responses as OpenAIChatModel parses them.

Only the message list is DeepSeek's own: text-only content strings and
`reasoning_content`. The body and both parsers are the Chat Completions
family's (`openai.py`), in both fidelities; in provider fidelity, reasoning
that came as vLLM's `reasoning` goes back there, and other providers'
server-tool blocks are dropped.
"""

from __future__ import annotations

from typing import Any

from .._core import DEEPSEEK
from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_DEEPSEEK
from ..request import RequestFields
from ._context import FormatContext
from ._history import history_prompt, history_text
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider
from ._tools import tool_call, tool_message
from ._turns import Handler, Turn, TurnTable, tool_result_handler
from .openai import (
    ChatCompletions,
    ChatCompletionsParity,
    native_handlers,
    reasoning_back_as,
    with_reasoning,
)

__all__ = ["PROVIDER", "DeepSeek", "DeepSeekParity"]

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


def _format_agent_message(group: list[MsgView], ctx: FormatContext, first: bool) -> list[Block]:
    """One user message with the history as a string; non-text blocks are ignored silently."""
    lines = [
        f"{msg.name}: {block['text']}" for msg in group for block in msg.get_content_blocks("text")
    ]
    if not lines:
        return []
    return [{"role": "user", "content": history_text(lines, history_prompt(ctx, first))}]


class DeepSeekParity(ChatCompletionsParity):
    """`DeepSeekChatFormatter._format`: one string of content per message."""

    turns = TurnTable(_CHAT_BLOCKS, _finish_chat)
    agent_message = staticmethod(_format_agent_message)


class DeepSeek(ChatCompletions):
    """Provider fidelity: reasoning that came as vLLM's `reasoning` goes back
    there (the rest as `reasoning_content`, as in parity)."""

    turns = TurnTable(
        native_handlers(_CHAT_BLOCKS, thinking=reasoning_back_as("reasoning", _thinking)),
        with_reasoning(_finish_chat),
    )
    agent_message = staticmethod(_format_agent_message)


# Where DeepSeek's chat API takes each request parameter: the output budget
# as `max_tokens`; it documents no `seed`.
_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop",
    seed=None,
    stream="stream",
)

PROVIDER = Provider(
    enum=PROVIDER_DEEPSEEK,
    options=frozenset({"conversation_history_prompt", "response_schema", "response_schema_name"}),
    formatted_blocks=frozenset({"text", "thinking", "tool_use", "tool_result"}),
    dropped_blocks=frozenset({"image", "audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # Text only.
    document_types=frozenset(),
    agentscope=DeepSeekParity,
    provider=DeepSeek,
    compiled=DEEPSEEK,
)
