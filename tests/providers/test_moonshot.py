"""Moonshot AI's Kimi (providers/moonshot.py): provider fidelity only, by
default; reasoning back as `reasoning_content`, partial mode, builtin
functions, Kimi's usage fields; the recorded Kimi traffic in ../shared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import FormatError, UnsupportedMediaError
from agentscope_proto.formatting import format
from transcripts import ROOT, Transcript, load_events, missing

from fidelity_helpers import call, msg, result

RECORDED = ROOT / "openai"
KIMI = sorted(RECORDED.glob("vercel-moonshotai-*")) if RECORDED.is_dir() else []

SEARCH = {"type": "function", "function": {"name": "$web_search"}}


def _complete(message: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": "chatcmpl-kimi-1",
        "object": "chat.completion",
        "model": "kimi-k2.5",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage is not None:
        response["usage"] = usage
    return response


def test_the_default_fidelity_is_the_providers() -> None:
    msgs = [msg("u", "user", "Hi")]
    assert dict(format("moonshot", msgs)) == dict(format("moonshot", msgs, fidelity="provider"))
    with pytest.raises(FormatError, match=r"^fidelity: AgentScope 1\.0\.21 has no moonshot"):
        format("moonshot", msgs, fidelity="agentscope")


def test_a_last_assistant_turn_is_a_partial_prefix() -> None:
    msgs = [msg("user", "user", "Introduce yourself."), msg("Kelsey", "assistant", "Doctor")]
    body = format("moonshot", msgs)
    assert body["messages"][-1] == {
        "role": "assistant",
        "name": "Kelsey",
        "content": [{"type": "text", "text": "Doctor"}],
        "partial": True,
    }
    assert body.warnings == []
    # Not a prefix: a conversation ending with the user, or with a tool call.
    assert "partial" not in format("moonshot", msgs[:1])["messages"][-1]
    loop = [msg("u", "user", "Hi"), msg("F", "assistant", [call("c1")])]
    assert all("partial" not in m for m in format("moonshot", loop)["messages"])


def test_reasoning_without_text_is_no_partial_prefix() -> None:
    """Kimi continues the prefix's `content`: a last turn with only
    reasoning has none, so it is not marked partial (Kimi would refuse it)."""
    thought = {"type": "thinking", "thinking": "Hmm.", "reasoning_field": "reasoning_content"}
    # A reply cut off after its reasoning: its text block is empty.
    cut = [thought, {"type": "text", "text": ""}]
    msgs = [msg("user", "user", "Introduce yourself."), msg("Kelsey", "assistant", cut)]
    body = format("moonshot", msgs)
    last = body["messages"][-1]
    assert last["reasoning_content"] == "Hmm."
    assert last["content"] == []
    assert "partial" not in last
    assert [w.message for w in body.warnings] == ["dropped an empty text part"]
    # With text beside the reasoning, the text is the prefix.
    text = {"type": "text", "text": "Doctor"}
    msgs[-1] = msg("Kelsey", "assistant", [thought, text])
    last = format("moonshot", msgs)["messages"][-1]
    assert last["partial"] is True
    assert last["content"] == [text]


def test_builtin_functions_go_as_kimis_and_come_back() -> None:
    """`$web_search`: the tool, Kimi's call of it, and its result."""
    body = format("moonshot", [msg("u", "user", "News?")], tools=[SEARCH])
    assert body["tools"] == [{"type": "builtin_function", "function": {"name": "$web_search"}}]
    arguments = '{"search_result":{"search_id":"s-1"},"usage":{"total_tokens":1200}}'
    response = _complete(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "web_search:0",
                    "type": "builtin_function",
                    "function": {"name": "$web_search", "arguments": arguments},
                }
            ],
        }
    )
    parsed = parse("moonshot", response)
    (use,) = parsed.content
    assert use == {
        "type": "tool_use",
        "id": "web_search:0",
        "name": "$web_search",
        "input": json.loads(arguments),
    }
    answer = {
        "type": "tool_result",
        "id": "web_search:0",
        "name": "$web_search",
        "output": [{"type": "text", "text": arguments}],
    }
    msgs = [
        msg("u", "user", "News?"),
        parsed.msg,
        msg("system", "system", [answer]),
    ]
    body = format("moonshot", msgs, tools=[SEARCH])
    assistant, tool = body["messages"][1:]
    assert assistant["tool_calls"][0]["type"] == "builtin_function"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == json.loads(arguments)
    assert tool == {
        "role": "tool",
        "tool_call_id": "web_search:0",
        "content": arguments,
        "name": "$web_search",
    }
    assert body.warnings == []


def test_reasoning_goes_back_as_reasoning_content_and_only_kimis() -> None:
    response = _complete(
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "Need the weather.",
            "tool_calls": [
                {
                    "id": "get_weather:0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        }
    )
    parsed = parse("moonshot", response)
    assert parsed.content[0] == {
        "type": "thinking",
        "thinking": "Need the weather.",
        "reasoning_field": "reasoning_content",
    }
    answer = {"type": "tool_result", "id": "get_weather:0", "name": "get_weather", "output": "9C"}
    msgs = [msg("u", "user", "Weather?"), parsed.msg, msg("system", "system", [answer])]
    body = format("moonshot", msgs)
    assert body["messages"][1]["reasoning_content"] == "Need the weather."
    # Another provider's thinking (a signed Anthropic block) is not Kimi's to read.
    foreign = {"type": "thinking", "thinking": "Hm.", "signature": "sig"}
    msgs[1] = msg("F", "assistant", [foreign, call("get_weather:0")])
    body = format("moonshot", msgs)
    assert "reasoning_content" not in body["messages"][1]
    assert [(w.path, w.block_type) for w in body.warnings] == [
        ("messages[1].content[0]", "thinking")
    ]


def test_audio_is_dropped_and_documents_refused() -> None:
    audio = {
        "type": "audio",
        "source": {"type": "base64", "media_type": "audio/wav", "data": "UklGRg=="},
    }
    body = format("moonshot", [msg("u", "user", [{"type": "text", "text": "Hear"}, audio])])
    assert body["messages"][0]["content"] == [{"type": "text", "text": "Hear"}]
    assert [(w.path, w.block_type) for w in body.warnings] == [("messages[0].content[1]", "audio")]
    history = format(
        "moonshot", [msg("u", "user", [audio]), msg("a", "user", "x")], multi_agent=True
    )
    parts = history["messages"][0]["content"]
    assert [part["type"] for part in parts] == ["text", "text"]
    assert any(w.block_type == "input_audio" for w in history.warnings)
    pdf = {
        "type": "data",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    }
    with pytest.raises(UnsupportedMediaError, match="moonshot cannot take application/pdf"):
        format("moonshot", [msg("u", "user", [pdf])])


def test_request_parameters_and_kimis_own() -> None:
    request = {
        "model": "kimi-k2.5",
        "max_output_tokens": 64,
        "extra_body": {"thinking": {"type": "disabled"}},
    }
    body = format("moonshot", [msg("u", "user", "Hi")], request=request)
    assert (body["model"], body["max_tokens"], body["thinking"]) == (
        "kimi-k2.5",
        64,
        {"type": "disabled"},
    )
    with pytest.raises(FormatError, match=r"^request\.seed: the moonshot API takes no seed"):
        format("moonshot", [msg("u", "user", "Hi")], request={"seed": 1})


def test_kimis_cached_tokens_come_back_from_responses_and_streams() -> None:
    usage = {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45, "cached_tokens": 32}
    parsed = parse("moonshot", _complete({"role": "assistant", "content": "Hi"}, usage))
    assert parsed.usage is not None
    assert (parsed.usage.input_tokens, parsed.usage.cache_read_input_tokens) == (40, 32)
    # Streaming, Kimi puts the usage in the last chunk's choice.
    parser = StreamParser("moonshot")
    parser.feed({"id": "c", "choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    last_choice = {"index": 0, "delta": {}, "finish_reason": "stop", "usage": usage}
    parser.feed({"id": "c", "choices": [last_choice]})
    final = parser.finish()
    assert final.usage is not None
    assert (final.usage.output_tokens, final.usage.cache_read_input_tokens) == (5, 32)
    assert final.content == [{"type": "text", "text": "Hi"}]


# -- the recorded Kimi traffic (../shared) ------------------------------------------------


def _transcript(path: Path) -> Transcript:
    return Transcript("moonshot", path, "events" if path.name.endswith(".jsonl") else "json")


@pytest.mark.skipif(not KIMI, reason=missing(RECORDED))
@pytest.mark.parametrize("path", KIMI, ids=[path.name for path in KIMI])
def test_recorded_kimi_traffic_keeps_what_kimi_reported(path: Path) -> None:
    """Typed blocks and usage equal to the raw records' (Kimi's top-level
    `cached_tokens` included), nothing reported left behind."""
    parsed = _transcript(path).run("provider")
    records = load_events(path) if path.name.endswith(".jsonl") else [json.loads(path.read_text())]
    usage = next(r["usage"] for r in reversed(records) if r.get("usage"))
    assert parsed.usage is not None
    assert parsed.usage.input_tokens == usage["prompt_tokens"]
    assert parsed.usage.output_tokens == usage["completion_tokens"]
    assert parsed.usage.cache_read_input_tokens == usage.get("cached_tokens")
    details = usage.get("completion_tokens_details") or {}
    assert parsed.usage.reasoning_tokens == details.get("reasoning_tokens")
    kinds = [block["type"] for block in parsed.content]
    reasoning = "".join(
        (choice.get("message") or choice.get("delta") or {}).get("reasoning_content") or ""
        for record in records
        for choice in record["choices"]
    )
    if reasoning:
        assert parsed.content[0]["thinking"] == reasoning
        assert parsed.content[0]["reasoning_field"] == "reasoning_content"
    calls = [
        call
        for record in records
        for choice in record["choices"]
        for call in (choice.get("message") or choice.get("delta") or {}).get("tool_calls") or []
    ]
    assert kinds.count("tool_use") == len({c.get("id") for c in calls if c.get("id")})
    # What it parsed formats back for Kimi, reasoning and calls included.
    answers = [
        result(block["id"], "ok", block["name"])
        for block in parsed.content
        if block["type"] == "tool_use"
    ]
    body = format("moonshot", [msg("u", "user", "Hi"), parsed.msg, *answers])
    if reasoning:
        assert body["messages"][1]["reasoning_content"] == reasoning
