"""Zhipu GLM (providers/zhipu.py): provider fidelity only, by default;
`thinking` as a request parameter, reasoning back with tool results, GLM's
message shapes, tool choice and response format; recorded-style responses and
streams written from GLM's API reference."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import FormatError, UnsupportedMediaError
from agentscope_proto.formatting import format
from provider_schemas import client
from provider_schemas.golden import REQUESTS

from fidelity_helpers import TOOL_LOOP, call, msg, result

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
USAGE = {
    "prompt_tokens": 210,
    "completion_tokens": 75,
    "total_tokens": 285,
    "prompt_tokens_details": {"cached_tokens": 128},
    "completion_tokens_details": {"reasoning_tokens": 52},
}
# GLM-4.6 reasoning, then calling a tool (its `Completion`).
RESPONSE: dict[str, Any] = {
    "id": "20251127091500abcdef",
    "request_id": "req-glm-1",
    "created": 1764206100,
    "model": "glm-4.6",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "",
                "reasoning_content": "Beijing's weather needs the tool.",
                "tool_calls": [
                    {
                        "id": "call_-8f1c",
                        "index": 0,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Beijing"}'},
                    }
                ],
            },
        }
    ],
    "usage": USAGE,
}
CHUNKS: list[dict[str, Any]] = [
    {
        "id": "s",
        "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Beijing's"}}],
    },
    {
        "id": "s",
        "choices": [{"index": 0, "delta": {"reasoning_content": " weather needs the tool."}}],
    },
    {
        "id": "s",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "id": "call_-8f1c",
                            "index": 0,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Beijing"}'},
                        }
                    ]
                },
            }
        ],
    },
    {
        "id": "s",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {}}],
        "usage": USAGE,
    },
]


def test_the_default_fidelity_is_the_providers() -> None:
    msgs = [msg("u", "user", "Hi")]
    assert dict(format("zhipu", msgs)) == dict(format("zhipu", msgs, fidelity="provider"))
    with pytest.raises(FormatError, match=r"^fidelity: AgentScope 1\.0\.21 has no zhipu"):
        format("zhipu", msgs, fidelity="agentscope")


def test_responses_and_streams_parse_alike() -> None:
    parsed = parse("zhipu", RESPONSE)
    assert parsed.content[0] == {
        "type": "thinking",
        "thinking": "Beijing's weather needs the tool.",
        "reasoning_field": "reasoning_content",
    }
    assert parsed.content[1]["input"] == {"city": "Beijing"}
    assert parsed.usage is not None
    assert (parsed.usage.cache_read_input_tokens, parsed.usage.reasoning_tokens) == (128, 52)
    parser = StreamParser("zhipu")
    for chunk in CHUNKS:
        parser.feed(chunk)
    streamed = parser.finish()
    assert [{k: v for k, v in b.items() if k != "raw_input"} for b in streamed.content] == (
        parsed.content
    )
    assert streamed.usage == parsed.usage
    assert streamed.raw_finish_reason == "tool_calls"


def test_reasoning_goes_back_with_the_tool_results_in_glms_shapes() -> None:
    parsed = parse("zhipu", RESPONSE)
    msgs = [
        msg("system", "system", "Be brief."),
        msg("user", "user", "Weather in Beijing?"),
        parsed.msg,
        result("call_-8f1c", "Clear, 3C"),
    ]
    body = format(
        "zhipu",
        msgs,
        tools=TOOLS,
        request={
            "model": "glm-4.6",
            "max_output_tokens": 256,
            "extra_body": {"thinking": {"type": "enabled", "clear_thinking": False}},
        },
    )
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Beijing?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_-8f1c",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Beijing"}'},
                }
            ],
            "reasoning_content": "Beijing's weather needs the tool.",
        },
        {"role": "tool", "tool_call_id": "call_-8f1c", "content": "Clear, 3C"},
    ]
    assert body["thinking"] == {"type": "enabled", "clear_thinking": False}
    assert body["max_tokens"] == 256


def test_tool_choice_is_auto_or_no_tools() -> None:
    msgs = [msg("u", "user", "Weather?")]
    body = format("zhipu", msgs, tools=TOOLS, tool_choice="required")
    assert body["tool_choice"] == "auto"
    assert [w.path for w in body.warnings] == ["tool_choice"]
    body = format("zhipu", msgs, tools=TOOLS, tool_choice="get_weather")
    assert body["tool_choice"] == "auto"
    body = format("zhipu", msgs, tools=TOOLS, tool_choice="none")
    assert "tools" not in body
    assert "tool_choice" not in body
    assert format("zhipu", msgs, tools=TOOLS, tool_choice="auto").warnings == []


def test_structured_output_is_json_object() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    body = format("zhipu", [msg("u", "user", "City?")], response_schema=schema)
    assert body["response_format"] == {"type": "json_object"}
    assert [w.block_type for w in body.warnings] == ["response_format"]
    response = {
        "id": "x",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": '{"city": "Xi\'an"}'}}
        ],
    }
    assert parse("zhipu", response, structured_output=True).structured_output == {"city": "Xi'an"}


def test_another_providers_thinking_and_audio_are_dropped() -> None:
    body = format("zhipu", TOOL_LOOP)
    assert all("name" not in message for message in body["messages"])
    foreign = [
        msg("u", "user", "Hi"),
        msg(
            "F", "assistant", [{"type": "thinking", "thinking": "x", "signature": "s"}, call("c1")]
        ),
        result("c1", "ok"),
    ]
    body = format("zhipu", foreign)
    assert "reasoning_content" not in body["messages"][1]
    assert [w.block_type for w in body.warnings] == ["thinking"]
    audio = {
        "type": "audio",
        "source": {"type": "base64", "media_type": "audio/wav", "data": "UklGRg=="},
    }
    body = format("zhipu", [msg("u", "user", [{"type": "text", "text": "Hear"}, audio])])
    assert [w.block_type for w in body.warnings] == ["audio"]


# -- video and documents by URL (GLM-4.5V / 4.6V) ------------------------------------


def _valid(body: Any) -> None:
    """The body validates on GLM's request (when .venv-schemas is there)."""
    if client.available():
        assert client.validate("zhipu", {"model": REQUESTS["zhipu"]["model"], **body}) == []


def _data(url: str, media_type: str) -> dict[str, Any]:
    return {"type": "data", "source": {"type": "url", "url": url, "media_type": media_type}}


def test_video_and_documents_by_url_go_as_glms_parts() -> None:
    ask = {"type": "text", "text": "Summarise both."}
    report = _data("https://example.com/report.pdf", "application/pdf")
    sheet_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    sheet = _data("https://example.com/q3.xlsx", sheet_type)
    clip = _data("https://example.com/demo.mp4", "video/mp4")
    body = format("zhipu", [msg("u", "user", [ask, report, sheet, clip])])
    assert body["messages"][0]["content"][1:] == [
        {"type": "file_url", "file_url": {"url": "https://example.com/report.pdf"}},
        {"type": "file_url", "file_url": {"url": "https://example.com/q3.xlsx"}},
        {"type": "video_url", "video_url": {"url": "https://example.com/demo.mp4"}},
    ]
    assert [w.block_type for w in body.warnings if w.block_type != "text"] == []
    _valid(dict(body))
    # AgentScope 1.x's video block too.
    video = {"type": "video", "source": {"type": "url", "url": "https://example.com/demo.mp4"}}
    body = format("zhipu", [msg("u", "user", [{"type": "text", "text": "What happens?"}, video])])
    assert body["messages"][0]["content"][1] == {
        "type": "video_url",
        "video_url": {"url": "https://example.com/demo.mp4"},
    }
    assert body.warnings == []
    _valid(dict(body))


def test_inline_or_local_video_and_documents_are_dropped_with_a_warning(tmp_path: Any) -> None:
    """GLM documents `video_url` and `file_url` by URL only."""
    (tmp_path / "clip.mp4").write_bytes(b"....")
    local = {"type": "video", "source": {"type": "url", "url": "clip.mp4"}}
    inline = {
        "type": "video",
        "source": {"type": "base64", "media_type": "video/mp4", "data": "AAAA"},
    }
    ask = {"type": "text", "text": "See"}
    body = format("zhipu", [msg("u", "user", [ask, local, inline])], media_root=tmp_path)
    assert body["messages"][0]["content"] == [ask]
    assert [(w.path, w.block_type) for w in body.warnings] == [
        ("messages[0].content[1]", "video"),
        ("messages[0].content[2]", "video"),
    ]
    assert all("takes a web URL" in w.message for w in body.warnings)
    pdf = {
        "type": "data",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    }
    body = format("zhipu", [msg("u", "user", [ask, pdf])])
    assert [w.block_type for w in body.warnings if w.block_type == "data"] == ["data"]
    assert all(part["type"] == "text" for part in body["messages"][0]["content"])


def test_documents_glm_does_not_read_are_refused() -> None:
    csv = _data("https://example.com/t.csv", "text/csv")
    with pytest.raises(UnsupportedMediaError, match="zhipu cannot take text/csv"):
        format("zhipu", [msg("u", "user", [csv])])
