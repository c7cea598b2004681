"""A Python client of the FormatterService, the HubService and a served agent,
using the agentscope-proto package.

Builds a short tool-using conversation, formats it for three providers, parses
a provider response and a provider stream, and shows how a bad request is
reported; publishes the conversation to a hub topic and reads it back from a
subscription; given an agent's address, asks the agent the conversation's
question, printing the type of each event of its reply on stderr as it
arrives, and confirms the tool call the agent asks about. Prints the results
as one JSON document on stdout.

Usage: python client.py [HOST:PORT [AGENT_HOST:PORT]]
  HOST:PORT: `agentscope-proto serve` (default: $AGENTSCOPE_TARGET or 127.0.0.1:50051)
  AGENT_HOST:PORT: `agentscope-proto serve-agent` (default: $AGENTSCOPE_AGENT_TARGET;
  neither: no agent part)
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any, Literal

from agentscope_proto import (
    FinishedReason,
    FormatError,
    FormatterClient,
    Msg,
    ParsedResponse,
    RemoteError,
    Role,
    new_msg,
    new_text_block,
    new_tool_result_block,
    new_tool_use_block,
)
from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as events
from agentscope_proto.agents import AgentClient
from agentscope_proto.hub import HubClient
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


# The hub topic the conversation is published to.
TOPIC = "examples/weather"


def hub_round_trip(target: str) -> dict[str, Any]:
    """Publish the conversation to TOPIC and read it back: the question first, then a
    subscription after its offset (a gap-free start over any protocol), then the other
    messages, which reach the subscription with the offsets Publish returned."""
    question, *rest = conversation()
    with HubClient(target) as hub:
        after = hub.publish(TOPIC, question)
        with hub.subscribe(TOPIC, after=after) as subscription:
            offsets = [hub.publish(TOPIC, msg) for msg in rest]
            received = [next(subscription) for _ in rest]
    return {
        "received": [
            {
                "offset_matches": event.offset == offset,
                "msg_matches": event.msg == msg,
                "name": event.msg.name,
                "role": Role.Name(event.msg.role),
                "blocks": [block.WhichOneof("block") for block in event.msg.blocks.items],
            }
            for event, offset, msg in zip(received, offsets, rest, strict=True)
        ]
    }


def msg_text(msg: Msg) -> str:
    """A message's text: its text, or its text blocks joined."""
    if msg.WhichOneof("content") == "text":
        return msg.text
    return "".join(block.text.text for block in msg.blocks.items if block.HasField("text"))


def confirm(asked: events.RequireUserConfirmEvent) -> events.UserConfirmResultEvent:
    """Allow every tool call the agent asks about, as it asked for it."""
    return events.UserConfirmResultEvent(
        reply_id=asked.reply_id,
        confirm_results=[
            events.ConfirmResult(confirmed=True, tool_call=call) for call in asked.tool_calls
        ],
    )


# How many times in a row a reply is taken up (`Resume`) after its connection dropped
# ($AGENTSCOPE_RESUME_ATTEMPTS, default 5, as RemoteAgent's), with a growing wait.
_ATTEMPTS = os.environ.get("AGENTSCOPE_RESUME_ATTEMPTS", "")
RESUME_ATTEMPTS = int(_ATTEMPTS) if _ATTEMPTS.isdigit() else 5


def ask_agent(target: str) -> dict[str, Any]:
    """Ask the agent the conversation's question; while its reply stops to ask for a
    confirmation, answer it (in the reply's session) and go on until the reply ends.
    A reply whose connection drops is taken up where it stopped (`resume_attempts`)."""
    question = conversation()[0]
    replies: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []
    session = ended_in = ""
    msg = Msg()
    with AgentClient(target) as agent:
        stream: Iterator[events.AgentEvent | Msg] | None = agent.reply_stream(
            question, timeout=30, resume_attempts=RESUME_ATTEMPTS
        )
        while stream is not None:
            answer = None
            reply: dict[str, Any] = {"events": [], "text": "", "tool_result": ""}
            for item in stream:
                if isinstance(item, Msg):  # the `done` response's message: the reply so far
                    msg = item
                    continue
                kind = item.WhichOneof("event")
                if kind is None:  # an event kind newer than this schema
                    continue
                print(kind.upper(), file=sys.stderr, flush=True)  # as it arrives
                reply["events"].append(kind.upper())
                if kind == "reply_start":
                    session = item.reply_start.session_id
                elif kind == "text_block_delta":
                    reply["text"] += item.text_block_delta.delta
                elif kind == "tool_result_text_delta":
                    reply["tool_result"] += item.tool_result_text_delta.delta
                elif kind == "require_user_confirm":
                    calls = item.require_user_confirm.tool_calls
                    asked += [{"name": c.name, "input": json.loads(c.input_json)} for c in calls]
                    answer = confirm(item.require_user_confirm)
                elif kind == "reply_end":
                    ended_in = item.reply_end.session_id
            replies.append(reply)
            # The answer goes on with the same reply, in the session that asked.
            stream = (
                agent.reply_stream(
                    answer=answer,
                    session_id=session,
                    timeout=30,
                    resume_attempts=RESUME_ATTEMPTS,
                )
                if answer is not None
                else None
            )
    return {
        "replies": replies,
        "asked": asked,
        "same_session": bool(session) and ended_in == session,
        "reply": {
            "name": msg.name,
            "role": Role.Name(msg.role),
            "text": msg_text(msg),
            "finished_reason": FinishedReason.Name(msg.finished_reason),
        },
    }


def main() -> None:
    target = (
        sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENTSCOPE_TARGET", "127.0.0.1:50051")
    )
    agent_target = (
        sys.argv[2] if len(sys.argv) > 2 else os.environ.get("AGENTSCOPE_AGENT_TARGET", "")
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

    out["hub"] = hub_round_trip(target)
    if agent_target:
        try:
            out["agent"] = ask_agent(agent_target)
        except RemoteError as error:  # e.g. the reply could not be taken up: one line, exit 1
            sys.exit(str(error))
    json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
    print()


if __name__ == "__main__":
    main()
