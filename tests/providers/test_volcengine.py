"""Volcengine Ark (providers/volcengine.py): provider fidelity only, by
default; `thinking` as a request parameter, reasoning back as
`reasoning_content`, Ark's encrypted reasoning kept under its own key and
never sent, usage; recorded-style responses and streams written from Ark's
API reference and SDK response types."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import FormatError, UnsupportedMediaError
from agentscope_proto.formatting import format
from agentscope_proto.providers.volcengine import ENCRYPTED
from provider_schemas import client
from provider_schemas.golden import REQUESTS

from fidelity_helpers import msg, result

USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 60,
    "total_tokens": 180,
    "prompt_tokens_details": {"cached_tokens": 96},
    "completion_tokens_details": {"reasoning_tokens": 41},
}
# A Doubao answer that reasoned, then called a tool (Ark's ChatCompletion).
RESPONSE: dict[str, Any] = {
    "id": "021764000000000abc",
    "object": "chat.completion",
    "created": 1764000000,
    "model": "doubao-seed-1-6-250615",
    "service_tier": "default",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": "",
                "reasoning_content": "The user wants Hangzhou's weather.",
                "tool_calls": [
                    {
                        "id": "call_ark_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Hangzhou"}'},
                    }
                ],
            },
        }
    ],
    "usage": USAGE,
}
# The same answer streamed (Ark's ChatCompletionChunk), usage on the last chunk.
CHUNKS: list[dict[str, Any]] = [
    {
        "id": "s",
        "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "The "}}],
    },
    {"id": "s", "choices": [{"index": 0, "delta": {"reasoning_content": "user wants Hangzhou's"}}]},
    {"id": "s", "choices": [{"index": 0, "delta": {"reasoning_content": " weather."}}]},
    {
        "id": "s",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_ark_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": '},
                        }
                    ]
                },
            }
        ],
    },
    {
        "id": "s",
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"Hangzhou"}'}}]},
                "finish_reason": "tool_calls",
            }
        ],
    },
    {"id": "s", "choices": [], "usage": USAGE},
]


def test_the_default_fidelity_is_the_providers() -> None:
    msgs = [msg("u", "user", "Hi")]
    assert dict(format("volcengine", msgs)) == dict(format("volcengine", msgs, fidelity="provider"))
    with pytest.raises(FormatError, match=r"^fidelity: AgentScope 1\.0\.21 has no volcengine"):
        format("volcengine", msgs, fidelity="agentscope")


def test_responses_and_streams_parse_alike_with_reasoning_and_usage() -> None:
    parsed = parse("volcengine", RESPONSE)
    assert parsed.content == [
        {
            "type": "thinking",
            "thinking": "The user wants Hangzhou's weather.",
            "reasoning_field": "reasoning_content",
        },
        {
            "type": "tool_use",
            "id": "call_ark_1",
            "name": "get_weather",
            "input": {"city": "Hangzhou"},
        },
    ]
    assert parsed.usage is not None
    assert parsed.usage.to_dict() == {
        "input_tokens": 120,
        "output_tokens": 60,
        "cache_read_input_tokens": 96,
        "reasoning_tokens": 41,
    }
    parser = StreamParser("volcengine")
    for chunk in CHUNKS:
        parser.feed(chunk)
    streamed = parser.finish()
    assert [{k: v for k, v in b.items() if k != "raw_input"} for b in streamed.content] == (
        parsed.content
    )
    assert streamed.usage == parsed.usage


def test_reasoning_goes_back_and_thinking_is_a_request_parameter() -> None:
    parsed = parse("volcengine", RESPONSE)
    msgs = [msg("u", "user", "Weather?"), parsed.msg, result("call_ark_1", "Sunny")]
    body = format(
        "volcengine",
        msgs,
        request={
            "model": "doubao-seed-1-6-250615",
            "max_output_tokens": 512,
            "extra_body": {"thinking": {"type": "auto"}},
        },
    )
    assert body["thinking"] == {"type": "auto"}
    assert body["max_tokens"] == 512
    assert body["messages"][1]["reasoning_content"] == "The user wants Hangzhou's weather."
    # The tool message keeps its name: Ark's type has one.
    assert body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_ark_1",
        "content": "Sunny",
        "name": "get_weather",
    }
    assert body.warnings == []
    with pytest.raises(FormatError, match=r"^request\.seed: the volcengine API takes no seed"):
        format("volcengine", msgs, request={"seed": 1})


def test_encrypted_reasoning_is_kept_but_never_sent() -> None:
    message = {**RESPONSE["choices"][0]["message"], "encrypted_content": "gAAAAB-ark"}
    response = {**RESPONSE, "choices": [{**RESPONSE["choices"][0], "message": message}]}
    thinking = parse("volcengine", response).content[0]
    assert thinking[ENCRYPTED] == "gAAAAB-ark"
    parser = StreamParser("volcengine")
    parser.feed({"id": "s", "choices": [{"index": 0, "delta": {"encrypted_content": "gAAAAB"}}]})
    parser.feed({"id": "s", "choices": [{"index": 0, "delta": {"encrypted_content": "-ark"}}]})
    parser.feed({"id": "s", "choices": [{"index": 0, "delta": {"content": "Done."}}]})
    assert parser.finish().content[0][ENCRYPTED] == "gAAAAB-ark"
    msgs = [
        msg("u", "user", "Hi"),
        msg("D", "assistant", [thinking, {"type": "text", "text": "x"}]),
    ]
    for provider in ("volcengine", "openai", "openai_responses", "anthropic"):
        body = format(provider, msgs, fidelity="provider")
        assert "gAAAAB-ark" not in str(dict(body)), provider
    assert [w.block_type for w in format("volcengine", msgs).warnings] == ["thinking"]


def test_media_arks_chat_takes_and_what_it_does_not() -> None:
    audio = {
        "type": "audio",
        "source": {"type": "base64", "media_type": "audio/wav", "data": "UklGRg=="},
    }
    body = format("volcengine", [msg("u", "user", [{"type": "text", "text": "Hear"}, audio])])
    assert body["messages"][0]["content"][1] == {
        "type": "input_audio",
        "input_audio": {"data": "UklGRg==", "format": "wav"},
    }
    pdf = {
        "type": "data",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    }
    with pytest.raises(UnsupportedMediaError, match="volcengine cannot take application/pdf"):
        format("volcengine", [msg("u", "user", [pdf])])


# -- video and audio by URL (Ark's `video_url`, `input_audio.url`) ---------------------


def _valid(body: Any) -> None:
    """The body validates on Ark's SDK types (when .venv-schemas is there)."""
    if client.available():
        assert (
            client.validate("volcengine", {"model": REQUESTS["volcengine"]["model"], **body}) == []
        )


def test_video_goes_as_a_video_url_part_with_its_fps(tmp_path: Any) -> None:
    web = {
        "type": "video",
        "source": {"type": "url", "url": "https://example.com/clip.mp4"},
        "fps": 0.5,
    }
    inline = {
        "type": "video",
        "source": {"type": "base64", "media_type": "video/webm", "data": "GkXf"},
    }
    (tmp_path / "local.mov").write_bytes(b"moov")
    local = {"type": "video", "source": {"type": "url", "url": "local.mov"}}
    content = [{"type": "text", "text": "What happens?"}, web, inline, local]
    body = format("volcengine", [msg("u", "user", content)], media_root=tmp_path)
    assert body["messages"][0]["content"][1:] == [
        {"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4", "fps": 0.5}},
        {"type": "video_url", "video_url": {"url": "data:video/webm;base64,GkXf"}},
        {"type": "video_url", "video_url": {"url": "data:video/quicktime;base64,bW9vdg=="}},
    ]
    assert body.warnings == []
    _valid(dict(body))


def test_a_videos_fps_must_be_a_positive_number() -> None:
    video = {"type": "video", "source": {"type": "url", "url": "https://example.com/v.mp4"}}
    with pytest.raises(FormatError, match=r"content\[0\]\.fps: expected a positive number"):
        format("volcengine", [msg("u", "user", [{**video, "fps": "fast"}])])


def test_audio_by_url_goes_as_arks_url_without_a_download() -> None:
    """Ark's `input_audio` takes a URL: a web URL goes as it is, with no
    download allowed or needed (OpenAI's chat downloads it)."""
    audio = {"type": "audio", "source": {"type": "url", "url": "https://example.com/q.mp3"}}
    body = format("volcengine", [msg("u", "user", [{"type": "text", "text": "Hear"}, audio])])
    assert body["messages"][0]["content"][1] == {
        "type": "input_audio",
        "input_audio": {"url": "https://example.com/q.mp3", "format": "mp3"},
    }
    assert body.warnings == []
    _valid(dict(body))
    # A format OpenAI's field does not name goes without one (Ark reads the file).
    ogg = {"type": "audio", "source": {"type": "url", "url": "https://example.com/q.ogg"}}
    part = format("volcengine", [msg("u", "user", [ogg])])["messages"][0]["content"][0]
    assert part == {"type": "input_audio", "input_audio": {"url": "https://example.com/q.ogg"}}
    # OpenAI's chat still needs the bytes: without permission to download, a clear error.
    with pytest.raises(FormatError, match="download"):
        format("openai", [msg("u", "user", [audio])], fidelity="provider")
