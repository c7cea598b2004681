"""MiniMax (providers/minimax.py): provider fidelity only, by default; the
reasoning split (`reasoning_details`) parsed from responses and streams and
given back unchanged, `<think>` text left where MiniMax put it, tool choice,
request parameters; recorded-style responses and streams written from
MiniMax's API reference."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import FormatError, ProviderError
from agentscope_proto.formatting import format
from provider_schemas import client
from provider_schemas.golden import REQUESTS

from fidelity_helpers import call, msg, result

DETAILS = [
    {
        "type": "reasoning.text",
        "id": "reasoning-text-1",
        "format": "MiniMax-response-v1",
        "index": 0,
        "text": "Need Shanghai's weather first.",
    }
]
USAGE = {
    "prompt_tokens": 300,
    "completion_tokens": 40,
    "total_tokens": 340,
    "prompt_tokens_details": {"cached_tokens": 256},
    "completion_tokens_details": {"reasoning_tokens": 22},
}
# MiniMax-M2.7 with `reasoning_split: true`, calling a tool.
RESPONSE: dict[str, Any] = {
    "id": "05f0b6c2a1d34e5f",
    "object": "chat.completion",
    "created": 1764210000,
    "model": "MiniMax-M2.7",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "name": "MiniMax AI",
                "content": "",
                "reasoning_details": DETAILS,
                "tool_calls": [
                    {
                        "id": "call_function_mm1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Shanghai"}'},
                    }
                ],
            },
        }
    ],
    "usage": USAGE,
}
# The same streamed: each reasoning delta's text is the new part only.
CHUNKS: list[dict[str, Any]] = [
    {
        "id": "s",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "reasoning_details": [{**DETAILS[0], "text": "Need Shanghai's"}],
                },
            }
        ],
    },
    {
        "id": "s",
        "choices": [
            {"index": 0, "delta": {"reasoning_details": [{"index": 0, "text": " weather first."}]}}
        ],
    },
    {
        "id": "s",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_function_mm1",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": '{"city": "Shanghai"}',
                            },
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": USAGE,
    },
]


def test_the_default_fidelity_is_the_providers() -> None:
    msgs = [msg("u", "user", "Hi")]
    assert dict(format("minimax", msgs)) == dict(format("minimax", msgs, fidelity="provider"))
    with pytest.raises(FormatError, match=r"^fidelity: AgentScope 1\.0\.21 has no minimax"):
        format("minimax", msgs, fidelity="agentscope")


def test_the_reasoning_split_is_one_thinking_block_in_responses_and_streams() -> None:
    parsed = parse("minimax", RESPONSE)
    assert parsed.content[0] == {
        "type": "thinking",
        "thinking": "Need Shanghai's weather first.",
        "reasoning_field": "reasoning_details",
        "reasoning_details": DETAILS,
    }
    assert parsed.usage is not None
    assert (parsed.usage.cache_read_input_tokens, parsed.usage.reasoning_tokens) == (256, 22)
    parser = StreamParser("minimax")
    for chunk in CHUNKS:
        parser.feed(chunk)
    streamed = parser.finish()
    assert [{k: v for k, v in b.items() if k != "raw_input"} for b in streamed.content] == (
        parsed.content
    )
    assert streamed.usage == parsed.usage


def test_reasoning_details_go_back_unchanged_in_a_tool_loop() -> None:
    parsed = parse("minimax", RESPONSE)
    msgs = [msg("u", "user", "Weather?"), parsed.msg, result("call_function_mm1", "Rain")]
    body = format(
        "minimax",
        msgs,
        request={
            "model": "MiniMax-M2.7",
            "max_output_tokens": 1024,
            "extra_body": {"reasoning_split": True},
        },
    )
    assistant = body["messages"][1]
    assert assistant["reasoning_details"] == DETAILS
    assert "reasoning_content" not in assistant
    assert body["reasoning_split"] is True
    assert body["max_completion_tokens"] == 1024
    # Another provider's reasoning is not MiniMax's.
    msgs[1] = msg(
        "F", "assistant", [{"type": "thinking", "thinking": "x"}, call("call_function_mm1")]
    )
    body = format("minimax", msgs)
    assert "reasoning_details" not in body["messages"][1]
    assert body.warnings[0].block_type == "thinking"


def test_think_tags_stay_in_the_text_without_the_split() -> None:
    response = {
        "id": "x",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "<think>\nShort.\n</think>\n\nHello!"},
            }
        ],
    }
    parsed = parse("minimax", response)
    assert parsed.content == [{"type": "text", "text": "<think>\nShort.\n</think>\n\nHello!"}]
    body = format("minimax", [msg("u", "user", "Hi"), parsed.msg, msg("u", "user", "Again")])
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "<think>\nShort.\n</think>\n\nHello!"}
    ]


def test_tool_choice_and_request_parameters() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    msgs = [msg("u", "user", "Weather?")]
    body = format("minimax", msgs, tools=tools, tool_choice="get_weather")
    assert body["tool_choice"] == "auto"
    assert [w.path for w in body.warnings] == ["tool_choice"]
    assert format("minimax", msgs, tools=tools, tool_choice="none")["tool_choice"] == "none"
    for name, value in (("stop", ["END"]), ("seed", 1)):
        with pytest.raises(FormatError, match=rf"^request\.{name}: the minimax API takes no"):
            format("minimax", msgs, request={name: value})


def test_a_failed_call_in_base_resp_is_a_provider_error() -> None:
    failed = {
        "id": "",
        "choices": [],
        "base_resp": {"status_code": 1008, "status_msg": "insufficient balance"},
    }
    with pytest.raises(ProviderError, match=r"minimax error \(1008\): insufficient balance"):
        parse("minimax", failed)
    with pytest.raises(ProviderError, match="1008"):
        StreamParser("minimax").feed(failed)
    fine = {**RESPONSE, "base_resp": {"status_code": 0, "status_msg": ""}}
    assert parse("minimax", fine).content == parse("minimax", RESPONSE).content


# -- structured output -----------------------------------------------------------------

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def test_structured_output_is_json_schema_with_a_warning_for_the_models_that_ignore_it() -> None:
    body = format("minimax", [msg("u", "user", "Where?")], response_schema=CITY)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": CITY, "strict": True},
    }
    assert [(w.path, w.block_type) for w in body.warnings] == [
        ("response_format", "response_format")
    ]
    assert "MiniMax-Text-01" in body.warnings[0].message
    if client.available():
        request = {"model": REQUESTS["minimax"]["model"], **dict(body)}
        assert client.validate("minimax", request) == []
    # Without a schema, nothing to say.
    assert format("minimax", [msg("u", "user", "Where?")]).warnings == []


def test_the_structured_output_is_the_json_after_the_thinking() -> None:
    answer = '<think>\nThe user asked for a city.\n</think>\n\n{"city": "Shanghai"}'
    response = {
        "id": "so-1",
        "object": "chat.completion",
        "model": "MiniMax-Text-01",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": "stop",
            }
        ],
    }
    parsed = parse("minimax", response, structured_output=True)
    assert parsed.structured_output == {"city": "Shanghai"}
    # The text stays as MiniMax wrote it (it goes back so).
    assert parsed.content == [{"type": "text", "text": answer}]
    assert parse("minimax", response).structured_output is None
    parser = StreamParser("minimax", structured_output=True)
    for piece in (
        "<think>\nThe user asked",
        " for a city.\n</think>\n\n",
        '{"city": ',
        '"Shanghai"}',
    ):
        parser.feed({"id": "so-1", "choices": [{"index": 0, "delta": {"content": piece}}]})
    assert parser.finish().structured_output == {"city": "Shanghai"}
    # With the reasoning split the content is the JSON alone, as the family reads it.
    alone = {"role": "assistant", "content": '{"city": "Hangzhou"}'}
    split = {**response, "choices": [{"index": 0, "message": alone}]}
    assert parse("minimax", split, structured_output=True).structured_output == {"city": "Hangzhou"}
