"""Moonshot AI's Kimi: its Chat Completions API (`POST /v1/chat/completions` at
api.moonshot.ai or api.moonshot.cn). AgentScope 1.0.21 has no Kimi formatter,
so there is only the provider variant, `Moonshot`, the family's
`ChatCompletions` (openai.py) with Kimi's quirks:

- reasoning: Kimi's thinking models return `reasoning_content`, and want it
  back on the assistant turns of a tool loop (preserved thinking): it goes
  back under that key, as the family does; another provider's thinking is
  dropped with a warning.
- partial mode: a conversation that ends with an assistant turn (text, no
  tool calls) asks Kimi to continue that text, which Kimi does only when the
  turn says `"partial": true`; provider fidelity marks it so (with its `name`,
  which Kimi reads as part of the prefix in role play). The prefix is the
  turn's `content` (Kimi's partial-mode docs): a last assistant turn with
  reasoning but no text is no prefix, and is not marked.
- builtin functions: a function tool named with a leading `$` (`$web_search`)
  is one of Kimi's builtin functions, sent as `{"type": "builtin_function",
  "function": {"name": "$web_search"}}`; Kimi calls it as a tool call of type
  `builtin_function`, parsed as any tool call (its arguments are what the
  caller returns as the result) and formatted back with that type; tool
  messages keep their `name` (Kimi's docs name the function there).
- usage: Kimi reports cached prompt tokens as a top-level `usage.cached_tokens`
  (and, streaming, the usage inside `choices[0]`); both are read where the
  family reads OpenAI's (`cache_read_input_tokens`).
- what Kimi's chat API does not take: audio input (dropped with a warning;
  a multi-agent history's audio becomes a text note), documents (`data`
  blocks are refused: Kimi reads files through its file API, not in a
  message).

Request parameters: `max_tokens` for the output budget, no `seed`; Kimi's own
(`thinking`, `reasoning_effort`, ...) go in `extra_body`.
"""

from __future__ import annotations

from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_MOONSHOT
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse
from ._adapt import Notes
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider
from ._tools import tool_call
from ._turns import Turn, TurnTable, skipped_block
from .openai import (
    CHAT_OPTIONS,
    CHAT_TOOL_MESSAGE,
    ChatCompletions,
    KeptChatCompletionStream,
)

__all__ = ["PROVIDER", "Moonshot"]

Block = dict[str, Any]
_BUILTIN = "builtin_function"
# Kimi's content parts: text, and images for its vision models.
_PARTS = frozenset({"text", "image_url"})
# Kimi's tool messages name the function.
_TOOL_MESSAGE = CHAT_TOOL_MESSAGE | {"name"}


def is_builtin(name: object) -> bool:
    """Whether a tool name is one of Kimi's builtin functions (`$web_search`)."""
    return isinstance(name, str) and name.startswith("$")


def _tool_use(turn: Turn, index: int, block: Block) -> None:
    call = tool_call(block)
    if is_builtin(block.get("name")):
        call["type"] = _BUILTIN
    turn.tool_calls.append(call)


def _no_audio(turn: Turn, index: int, block: Block) -> None:
    turn.ctx.warn(turn.msg, index, "audio", skipped_block("audio") + " Kimi takes no audio input.")


_HANDLERS = {
    kind: handler
    for kind, handler in ChatCompletions.turns.handlers.items()
    # Kimi's messages take no file parts.
    if kind != "data"
}
_TURNS = TurnTable(
    {**_HANDLERS, "tool_use": _tool_use, "audio": _no_audio}, ChatCompletions.turns.finish
)


def _builtin_tools(body: Block, note: Notes) -> None:
    """`$name` function tools as Kimi's builtin functions (which take no schema)."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and is_builtin(function.get("name")):
            if function.keys() - {"name"}:
                note(f"tools[{index}].function", "tool", "a builtin function takes only its name")
            tools[index] = {"type": _BUILTIN, "function": {"name": function["name"]}}


def _has_text(content: Any) -> bool:
    if isinstance(content, list):
        return any(isinstance(part, dict) and part.get("text") for part in content)
    return bool(content)


def _partial(messages: list[Any]) -> None:
    """Partial mode: a last assistant turn with text and no tool calls is a
    prefix to continue (its text is the prefix: reasoning alone is none)."""
    last = messages[-1] if messages else None
    if (
        isinstance(last, dict)
        and last.get("role") == "assistant"
        and not last.get("tool_calls")
        and _has_text(last.get("content"))
    ):
        # A copy: the message may be one an incremental caller keeps.
        messages[-1] = {**last, "partial": True}


def _kimi_usage(usage: Any) -> Any:
    """Kimi's top-level `cached_tokens` where OpenAI puts them."""
    if not isinstance(usage, dict) or "cached_tokens" not in usage:
        return usage
    details = usage.get("prompt_tokens_details")
    details = dict(details) if isinstance(details, dict) else {}
    details.setdefault("cached_tokens", usage["cached_tokens"])
    return {**usage, "prompt_tokens_details": details}


def _normalised(record: Block) -> Block:
    """A response or chunk with its usage where the family reads it: a
    chunk's `choices[0].usage` hoisted, Kimi's cached tokens moved."""
    usage = record.get("usage")
    choices = record.get("choices")
    if usage is None and isinstance(choices, list) and choices and isinstance(choices[0], dict):
        usage = choices[0].get("usage")
    if usage is None:
        return record
    return {**record, "usage": _kimi_usage(usage)}


class _MoonshotStream(KeptChatCompletionStream):
    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        return super().feed(_normalised(event) if isinstance(event, dict) else event)


class Moonshot(ChatCompletions):
    """Kimi's Chat Completions (see the module's docstring)."""

    turns = _TURNS
    stream_state = _MoonshotStream

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        return super().parse(_normalised(response), options)

    chat_parts = _PARTS
    chat_tool_message = _TOOL_MESSAGE

    def pass_rest(self, body: Block, note: Notes) -> None:
        super().pass_rest(body, note)
        _builtin_tools(body, note)
        messages = body.get("messages")
        if isinstance(messages, list):
            _partial(messages)


# Kimi's chat API: `max_tokens`, and no `seed`.
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
    enum=PROVIDER_MOONSHOT,
    options=CHAT_OPTIONS,
    formatted_blocks=frozenset({"text", "thinking", "tool_use", "tool_result", "image"}),
    dropped_blocks=frozenset({"audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # Kimi's messages take no documents.
    document_types=frozenset(),
    agentscope=None,
    provider=Moonshot,
)
