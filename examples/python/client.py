"""A Python client of the FormatterService, using the agentscope-proto package.

Builds a short tool-using conversation, formats it for three providers, parses
a provider response and a provider stream, and shows how a bad request is
reported. Prints the results as one JSON document.

Usage: python client.py [HOST:PORT]   (default: $AGENTSCOPE_TARGET or 127.0.0.1:50051)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from agentscope_proto import (
    FormatError,
    FormatterClient,
    ParseResult,
    new_msg,
    new_text_block,
    new_tool_result_block,
    new_tool_use_block,
)
from agentscope_proto.results import FinishReason

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

# What the provider's HTTP API would answer: an OpenAI chat completion...
OPENAI_RESPONSE = """{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
  "message": {"role": "assistant", "content": "Let me check.", "tool_calls": [{"id": "call_2",
  "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\":\\"Lyon\\"}"}}]},
  "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 42, "completion_tokens": 17}}"""

# ...and the events of a streamed one.
OPENAI_CHUNKS = [
    '{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is "}}]}',
    '{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"content": "sunny, 21 °C."}}]}',
    '{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],'
    ' "usage": {"prompt_tokens": 50, "completion_tokens": 6}}',
]


def conversation() -> list[Any]:
    """A user question, the assistant's tool call and the tool's result."""
    return [
        new_msg("user", "What is the weather in Paris?", "user"),
        new_msg(
            "Friday",
            [
                new_text_block("Let me check."),
                new_tool_use_block("call_1", "get_weather", {"city": "Paris"}),
            ],
            "assistant",
        ),
        new_msg("system", [new_tool_result_block("call_1", "get_weather", "Sunny, 21 °C")], "system"),
    ]


def summary(result: ParseResult) -> dict[str, Any]:
    """The parts of a parse result the examples compare."""
    return {
        "text": "".join(b["text"] for b in result.content if b["type"] == "text"),
        "tool_calls": [
            {"id": b["id"], "name": b["name"], "input": b["input"]}
            for b in result.content
            if b["type"] == "tool_use"
        ],
        "finish_reason": FinishReason.Name(result.finish_reason),
        "usage": {k: v for k, v in (result.usage or {}).items() if k.endswith("_tokens")},
    }


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENTSCOPE_TARGET", "127.0.0.1:50051")
    out: dict[str, Any] = {}
    with FormatterClient(target) as client:
        # Format: the reply is the provider's request body, already decoded from JSON.
        out["format"] = {
            provider: dict(client.format(conversation(), provider, tools=TOOLS, tool_choice="auto"))
            for provider in ("openai", "anthropic", "gemini")
        }

        out["parse"] = summary(client.parse("openai", OPENAI_RESPONSE))

        # ParseStream: every snapshot lists what changed (`deltas`); the last one is the result.
        snapshots = list(client.parse_stream("openai", OPENAI_CHUNKS))
        streamed = "".join(d.block.get("text", "") for s in snapshots for d in s.deltas)
        out["stream"] = {"responses": len(snapshots), "deltas_text": streamed, **summary(snapshots[-1])}

        # A tool_choice naming no given tool is INVALID_ARGUMENT; the status's
        # google.rpc.BadRequest field violation comes back as the exception's `path` and `reason`.
        try:
            client.format(conversation(), "openai", tools=TOOLS, tool_choice="get_time")
        except FormatError as error:
            out["error"] = {"field": error.path, "description": error.reason}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
    print()


if __name__ == "__main__":
    main()
