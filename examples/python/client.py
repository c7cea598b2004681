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
from typing import Any, Literal

from agentscope_proto import (
    FormatError,
    FormatterClient,
    Msg,
    ParsedResponse,
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
  "type": "function",
  "function": {"name": "get_weather", "arguments": "{\\"city\\":\\"Lyon\\"}"}}]},
  "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 42, "completion_tokens": 17}}"""

# ...and the events of a streamed one.
OPENAI_CHUNKS = [
    '{"id": "chatcmpl-2",'
    ' "choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is "}}]}',
    '{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"content": "sunny, 21 °C."}}]}',
    '{"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],'
    ' "usage": {"prompt_tokens": 50, "completion_tokens": 6}}',
]


def conversation() -> list[Msg]:
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
        new_msg(
            "system", [new_tool_result_block("call_1", "get_weather", "Sunny, 21 °C")], "system"
        ),
    ]


def summary(result: ParsedResponse) -> dict[str, Any]:
    """The parts of a parse result the examples compare."""
    usage = result.usage.to_dict() if result.usage else {}
    return {
        "text": "".join(b["text"] for b in result.content if b["type"] == "text"),
        "tool_calls": [
            {"id": b["id"], "name": b["name"], "input": b["input"]}
            for b in result.content
            if b["type"] == "tool_use"
        ],
        "finish_reason": FinishReason.Name(result.finish_reason),
        "usage": {k: usage[k] for k in ("input_tokens", "output_tokens") if k in usage},
    }


def main() -> None:
    target = (
        sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENTSCOPE_TARGET", "127.0.0.1:50051")
    )
    out: dict[str, Any] = {}
    with FormatterClient(target) as client:
        # Format: the reply is the provider's request body, already decoded from JSON.
        out["format"] = {
            provider: dict(client.format(provider, conversation(), tools=TOOLS, tool_choice="auto"))
            for provider in ("openai", "anthropic", "gemini")
        }

        out["parse"] = summary(client.parse("openai", OPENAI_RESPONSE))

        # ParseStream: every reply lists what changed (`deltas`); in "cumulative" mode it also
        # carries the result so far, in "deltas" mode only the last reply carries the result.
        modes: dict[str, Literal["cumulative", "deltas"]] = {
            "stream": "cumulative",
            "stream_deltas": "deltas",
        }
        for key, mode in modes.items():
            replies = list(client.parse_stream("openai", OPENAI_CHUNKS, mode=mode))
            streamed = "".join(d.block.get("text", "") for r in replies for d in r.deltas)
            out[key] = {
                "responses": len(replies),
                "first_text": summary(replies[0])["text"],  # "" in "deltas" mode: no message yet
                "deltas_text": streamed,
                **summary(replies[-1]),
            }

        # A tool_choice naming no given tool is INVALID_ARGUMENT; the status's
        # google.rpc.BadRequest field violation comes back as the exception's `path` and `reason`.
        try:
            client.format("openai", conversation(), tools=TOOLS, tool_choice="get_time")
        except FormatError as error:
            out["error"] = {"field": error.path, "description": error.reason}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
    print()


if __name__ == "__main__":
    main()
