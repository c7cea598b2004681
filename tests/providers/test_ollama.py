"""Ollama `/api/chat`: what is Ollama's own in both directions. Parity with
AgentScope 1.0.21 as a whole is the golden tests'; these pin the quirks a
reader of ollama.py should not have to rediscover, and provider fidelity."""

from __future__ import annotations

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import ParseError
from agentscope_proto.formatting import format

from fidelity_helpers import TOOL_LOOP, call, msg, result

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def test_text_is_one_string_images_go_beside_it_and_arguments_stay_objects() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    text = [{"type": "text", "text": "Look"}, image, {"type": "text", "text": "here"}]
    msgs = [msg("user", "user", text), msg("Friday", "assistant", [call("c1")]), result("c1", "ok")]
    messages = format("ollama", msgs)["messages"]
    assert messages[0] == {"role": "user", "content": "Look\nhere", "images": [PNG]}
    assert messages[1]["content"] is None
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}


def test_a_tool_choice_is_ignored_with_agentscopes_warning() -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    body = format("ollama", [msg("u", "user", "Hi")], tools=tools, tool_choice="auto")
    assert "tool_choice" not in body
    assert [(w.block_type, w.message) for w in body.warnings] == [
        ("tool_choice", "Ollama does not support tool_choice yet, ignored.")
    ]


def test_sampling_and_the_output_budget_go_in_options() -> None:
    request = {"model": "llama3.2", "max_output_tokens": 5, "temperature": 0.1}
    body = format("ollama", [msg("u", "user", "Hi")], request=request)
    assert body["options"] == {"num_predict": 5, "temperature": 0.1}


def test_calls_are_named_by_position_and_their_arguments_must_be_objects() -> None:
    line = {
        "model": "m",
        "message": {
            "role": "assistant",
            "content": "",
            "thinking": "hmm",
            "tool_calls": [{"function": {"name": "f", "arguments": {"n": 1}}}],
        },
        "done": True,
        "prompt_eval_count": 3,
        "eval_count": 2,
    }
    parsed = parse("ollama", line)
    assert parsed.content == [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "tool_use", "id": "0_f", "name": "f", "input": {"n": 1}, "raw_input": '{"n": 1}'},
    ]
    line["message"]["tool_calls"][0]["function"]["arguments"] = "{}"
    with pytest.raises(ParseError, match=r"function\.arguments: expected dict"):
        parse("ollama", line)


def test_a_stream_counts_usage_only_on_the_lines_that_report_it() -> None:
    parser = StreamParser("ollama")
    first = parser.feed({"model": "m", "message": {"role": "assistant", "content": "He"}})
    assert first is not None
    assert (first.usage.input_tokens, first.usage.output_tokens) == (0, 0)
    last = {"model": "m", "message": {"role": "assistant", "content": "llo"}, "done": True}
    done = parser.feed({**last, "prompt_eval_count": 3, "eval_count": 2})
    assert done is not None
    assert done.content == [{"type": "text", "text": "Hello"}]
    assert (done.usage.input_tokens, done.usage.output_tokens) == (3, 2)


# -- provider fidelity -------------------------------------------------------------------


def test_schema_keywords_ollama_does_not_take_are_dropped() -> None:
    parameters = {
        "type": "object",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {"n": {"type": "integer", "minimum": 1, "description": "How many."}},
        "additionalProperties": False,
    }
    tools = [{"type": "function", "function": {"name": "f", "parameters": parameters}}]
    body = format("ollama", [msg("u", "user", "Hi")], tools=tools, fidelity="provider")
    assert body["tools"][0]["function"]["parameters"] == {
        "type": "object",
        "properties": {"n": {"type": "integer", "description": "How many."}},
    }
    assert sorted(w.path for w in body.warnings) == [
        "tools[0].function.parameters.$schema",
        "tools[0].function.parameters.additionalProperties",
        "tools[0].function.parameters.properties.n.minimum",
    ]


def test_ollama_tool_name() -> None:
    body = format("ollama", TOOL_LOOP, fidelity="provider")
    call = body["messages"][1]["tool_calls"][0]
    assert list(call) == ["function"]
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    assert [m.get("tool_name") for m in tools] == ["get_weather", "get_weather"]
    assert all("tool_call_id" not in m and "name" not in m for m in tools)
