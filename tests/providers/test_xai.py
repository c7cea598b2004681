"""xAI's Grok over REST Chat Completions (providers/xai.py): provider fidelity
only, by default; reasoning and search citations kept, no reasoning sent
back (the API takes none); the recorded Grok traffic in ../shared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import FormatError
from agentscope_proto.formatting import format
from transcripts import ROOT, Transcript, load_events, missing

from fidelity_helpers import call, msg, result

RECORDED = ROOT / "openai"
GROK = (
    sorted([*RECORDED.glob("vercel-xai-*"), *RECORDED.glob("vercel-openai-compatible-xai-*")])
    if RECORDED.is_dir()
    else []
)


def test_the_default_fidelity_is_the_providers() -> None:
    msgs = [msg("u", "user", "Hi")]
    assert dict(format("xai", msgs)) == dict(format("xai", msgs, fidelity="provider"))
    with pytest.raises(FormatError, match=r"^fidelity: AgentScope 1\.0\.21 has no xai"):
        format("xai", msgs, fidelity="agentscope")


def test_reasoning_is_kept_but_not_sent_back() -> None:
    response = {
        "id": "r-1",
        "object": "chat.completion",
        "model": "grok-3-mini",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "Call the tool.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 30,
            "completion_tokens": 8,
            "prompt_tokens_details": {"cached_tokens": 24},
            "completion_tokens_details": {"reasoning_tokens": 40},
        },
    }
    parsed = parse("xai", response)
    assert parsed.content[0] == {
        "type": "thinking",
        "thinking": "Call the tool.",
        "reasoning_field": "reasoning_content",
    }
    assert parsed.usage is not None
    assert (parsed.usage.cache_read_input_tokens, parsed.usage.reasoning_tokens) == (24, 40)
    msgs = [msg("u", "user", "Weather?"), parsed.msg, result("call_1", "cold")]
    body = format("xai", msgs)
    assert "reasoning_content" not in body["messages"][1]
    assert body["messages"][1]["tool_calls"][0]["id"] == "call_1"
    # (The tool message's `name` goes too: OpenAI's tool message has none.)
    assert [(w.path, w.block_type) for w in body.warnings] == [
        ("messages[1].content[0]", "thinking"),
        ("messages[2].name", "tool_result"),
    ]


def test_search_citations_become_the_texts() -> None:
    urls = ["https://example.org/a", "https://example.org/b"]
    response = {
        "id": "r-2",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "News."}}],
        "citations": urls,
    }
    (text,) = parse("xai", response).content
    assert text["citations"] == [{"type": "url_citation", "url_citation": {"url": u}} for u in urls]
    parser = StreamParser("xai")
    parser.feed({"id": "r", "choices": [{"index": 0, "delta": {"content": "Ne"}}]})
    parser.feed(
        {"id": "r", "choices": [{"index": 0, "delta": {"content": "ws."}}], "citations": urls}
    )
    assert parser.finish().content == [text]
    # Not sent back: request messages take no annotations.
    body = format("xai", [msg("u", "user", "News?"), msg("G", "assistant", [text])])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "News."}]
    assert body.warnings == []


def test_xais_own_usage_counts_are_kept_in_the_metadata() -> None:
    """`num_sources_used` and `cost_in_usd_ticks` (xAI's usage, beside
    OpenAI's counts), complete and streamed, verbatim in the metadata."""
    usage = {
        "prompt_tokens": 30,
        "completion_tokens": 12,
        "total_tokens": 42,
        "prompt_tokens_details": {"cached_tokens": 0},
        "num_sources_used": 4,
        "cost_in_usd_ticks": 2150000,
    }
    response = {
        "id": "r-3",
        "object": "chat.completion",
        "model": "grok-4",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny."}}],
        "usage": usage,
    }
    kept = {"usage": {"num_sources_used": 4, "cost_in_usd_ticks": 2150000}}
    parsed = parse("xai", response)
    assert parsed.metadata == kept
    assert json.loads(parsed.msg.metadata_json) == kept
    assert parsed.usage is not None
    assert parsed.usage.input_tokens == 30
    parser = StreamParser("xai")
    parser.feed({"id": "r", "choices": [{"index": 0, "delta": {"content": "Sunny."}}]})
    assert parser.feed({"id": "r", "choices": [], "usage": usage}).metadata == kept
    assert parser.finish().metadata == kept
    # Without them (an older response), no metadata.
    del usage["num_sources_used"], usage["cost_in_usd_ticks"]
    assert parse("xai", response).metadata is None
    # The family's parity parse (OpenAI) keeps none.
    assert parse("openai", {**response, "usage": {**usage, "num_sources_used": 1}}).metadata is None


def test_audio_and_files_are_not_xais() -> None:
    audio = {
        "type": "audio",
        "source": {"type": "base64", "media_type": "audio/mp3", "data": "SUQz"},
    }
    body = format("xai", [msg("u", "user", [{"type": "text", "text": "Hear"}, audio])])
    assert body["messages"][0]["content"] == [{"type": "text", "text": "Hear"}]
    assert [w.block_type for w in body.warnings] == ["audio"]
    loop = [msg("u", "user", "Hi"), msg("F", "assistant", [call("c1")]), result("c1", "ok")]
    assert [w.block_type for w in format("xai", loop).warnings] == ["tool_result"]


def test_request_parameters_are_openais() -> None:
    request = {"model": "grok-4", "max_output_tokens": 64, "seed": 3, "stop": ["END"]}
    body = format("xai", [msg("u", "user", "Hi")], request=request)
    assert (body["max_completion_tokens"], body["seed"], body["stop"]) == (64, 3, ["END"])


# -- the recorded Grok traffic (../shared) ------------------------------------------------


def _records(path: Path) -> list[dict[str, Any]]:
    return load_events(path) if path.name.endswith(".jsonl") else [json.loads(path.read_text())]


@pytest.mark.skipif(not GROK, reason=missing(RECORDED))
@pytest.mark.parametrize("path", GROK, ids=[path.name for path in GROK])
def test_recorded_grok_traffic_keeps_what_xai_reported(path: Path) -> None:
    """Reasoning, text, calls and every token count xAI reported, typed."""
    kind = "events" if path.name.endswith(".jsonl") else "json"
    parsed = Transcript("xai", path, kind).run("provider")
    records = _records(path)
    usage = next(r["usage"] for r in reversed(records) if r.get("usage"))
    assert parsed.usage is not None
    assert parsed.usage.input_tokens == usage["prompt_tokens"]
    assert parsed.usage.output_tokens == usage["completion_tokens"]
    assert parsed.usage.cache_read_input_tokens == usage["prompt_tokens_details"]["cached_tokens"]
    assert parsed.usage.reasoning_tokens == usage["completion_tokens_details"]["reasoning_tokens"]
    extras = {key: usage[key] for key in ("num_sources_used", "cost_in_usd_ticks")}
    assert parsed.metadata == {"usage": extras}
    parts = [
        choice.get("message") or choice.get("delta") or {}
        for r in records
        for choice in r["choices"]
    ]
    reasoning = "".join(part.get("reasoning_content") or "" for part in parts)
    text = "".join(part.get("content") or "" for part in parts)
    blocks = {block["type"]: block for block in parsed.content}
    assert blocks["thinking"]["thinking"] == reasoning
    assert blocks.get("text", {"text": ""})["text"] == text
    calls = {c["id"] for part in parts for c in part.get("tool_calls") or [] if c.get("id")}
    assert {b["id"] for b in parsed.content if b["type"] == "tool_use"} == calls
    answers = [result(b["id"], "ok", b["name"]) for b in parsed.content if b["type"] == "tool_use"]
    body = format("xai", [msg("u", "user", "Hi"), parsed.msg, *answers])
    assert [w.block_type for w in body.warnings] == ["thinking"] + ["tool_result"] * len(answers)
