"""Chat Completions (OpenAI, DeepSeek) beyond AgentScope 1.0.21.

Provider fidelity, parse:
- `message.annotations` (OpenAI's `url_citation`s, streamed in `delta`s too)
  become the text block's `citations`, each annotation verbatim.
- A thinking block records the key its reasoning came under in
  `reasoning_field`: `"reasoning_content"` (DeepSeek, Kimi, Qwen...) or
  `"reasoning"` (vLLM since it renamed the field, Groq).
- Structured output: the message content, JSON, is the structured output (what
  AgentScope gets from the SDK's `message.parsed` when it asks with
  `response_format`); without JSON content, the first tool call's arguments, as
  before. AgentScope fidelity keeps the parity result (the golden responses come
  from `create`, where `parsed` does not exist).

Provider fidelity, format:
- Thinking goes back on the assistant message under the key it came from
  (`reasoning_field`), so a server that wants its reasoning back in a tool loop
  (DeepSeek's thinking mode, Kimi, vLLM) gets it where it reads it. To OpenAI,
  thinking without `reasoning_field` (another provider's) is still dropped, as
  AgentScope does; DeepSeek sends it as `reasoning_content`, as AgentScope does.
- Citations are not sent back: Chat Completions request messages take no
  annotations (dropped silently by the pass, `_fidelity/chat.py`).
- Server-tool blocks (Anthropic, OpenAI Responses, Gemini code execution...)
  are dropped with a FormatWarning; grounding blocks silently (the text they
  ground is sent).

Structured output (`response_schema`), both fidelities, as OpenAIChatModel with
a `structured_model`: `response_format` json_schema (`strict`), tools and
tool_choice left out (a warning when there were some).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._context import FormatContext
from ._parse import expect
from ._tools import without_tools
from ._turns import Handler, Turn, foreign_block_handler, skipped_block

__all__ = [
    "add_citations",
    "deepseek_thinking",
    "message_annotations",
    "message_extras",
    "provider_handlers",
    "reasoning_field",
    "structured_output",
    "with_reasoning",
]

Block = dict[str, Any]
_REASONING_KEYS = ("reasoning_content", "reasoning")


# -- parse ------------------------------------------------------------------------------------


def reasoning_field(message: Block) -> str | None:
    """The key `_reasoning` in openai.py reads the reasoning from."""
    return next((key for key in _REASONING_KEYS if isinstance(message.get(key), str)), None)


def message_annotations(message: Block, path: str) -> list[Any]:
    value = message.get("annotations")
    return list(expect(value, list, f"{path}.annotations")) if value else []


def add_citations(content: list[Block], cited: list[Any], field: str | None) -> None:
    """Mark the thinking block's origin and put the citations on the message's
    text (the first text block: an audio transcript may follow it)."""
    for block in content:
        if block["type"] == "thinking" and field is not None:
            block["reasoning_field"] = field
    text = next((block for block in content if block["type"] == "text"), None)
    if text is not None and cited:
        text["citations"] = list(cited)


def message_extras(
    message: Block, path: str, content: list[Block], structured: Block | None
) -> Block | None:
    """A completion's message in provider fidelity: citations, reasoning origin,
    and the structured output AgentScope's `message.parsed` gives."""
    add_citations(content, message_annotations(message, path), reasoning_field(message))
    text = message.get("content")
    if isinstance(text, str):
        try:
            parsed = json.loads(text)
        except ValueError:
            return structured
        if isinstance(parsed, dict):
            return parsed
    return structured


# -- format -----------------------------------------------------------------------------------


def _reasoning(turn: Turn, index: int, block: Block) -> None:
    field = block.get("reasoning_field")
    if field not in _REASONING_KEYS:
        turn.ctx.warn(turn.msg, index, "thinking", skipped_block("thinking"))
        return
    turn.trailing.append({"field": field, "text": block.get("thinking", "")})


_foreign = foreign_block_handler("Chat Completions")


def provider_handlers(
    base: dict[str, Handler], *, thinking: Handler | None = None
) -> dict[str, Handler]:
    """`base` for provider fidelity: thinking back under its key, foreign kinds dropped."""
    return {
        **base,
        "thinking": thinking or _reasoning,
        "server_tool_use": _foreign,
        "server_tool_result": _foreign,
        "grounding": _foreign,
    }


def deepseek_thinking(base: Handler) -> Handler:
    """DeepSeek's thinking handler, sending reasoning that came as `reasoning` there."""

    def handle(turn: Turn, index: int, block: Block) -> None:
        if block.get("reasoning_field") == "reasoning":
            _reasoning(turn, index, block)
        else:
            base(turn, index, block)

    return handle


def with_reasoning(finish: Callable[[Turn], None]) -> Callable[[Turn], None]:
    """`finish`, then the turn's reasoning on the assistant message it made."""

    def done(turn: Turn) -> None:
        start = len(turn.out)
        finish(turn)
        if not turn.trailing or len(turn.out) == start:
            return
        message = turn.out[-1]
        for field in _REASONING_KEYS:
            texts = [item["text"] for item in turn.trailing if item["field"] == field]
            if texts:
                message[field] = "\n".join(texts)

    return done


# -- structured output --------------------------------------------------------------------------


def structured_output(body: Block, schema: Any, name: str | None, ctx: FormatContext) -> None:
    """OpenAIChatModel with a structured model: `response_format`, no tools."""
    if schema is None:
        return
    without_tools(body, "tool_choice", ctx)
    body["response_format"] = {
        "type": "json_schema",
        "json_schema": {"name": name or "response", "schema": schema, "strict": True},
    }
