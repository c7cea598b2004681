"""AgentScope Python 2.x JSON (`Msg.model_dump(mode="json")`) reads correctly.

The files under tests/fixtures/agentscope2/ were written by AgentScope's own 2.x
message module (`agentscope.message` at `da00849`, v2.0.x) with deterministic
id and timestamp factories: `UserMsg`/`AssistantMsg`/`SystemMsg` holding every
2.x block kind, dumped with `model_dump(mode="json")`. 2.x is read-only: the
AgentScope dialect writes such a message in its 1.x form.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import (
    MessageFormatError,
    Msg,
    Role,
    ToolResultState,
    from_dict,
    get_content_blocks,
    get_text_content,
    has_content_blocks,
    to_dict,
)
from agentscope_proto._json import loads
from agentscope_proto.dialects import detect_dialect

from strict import assert_same

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agentscope2"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452")


def load(name: str) -> dict[str, Any]:
    with (FIXTURES / f"{name}.json").open(encoding="utf-8") as file:
        data: dict[str, Any] = json.load(file)
    return data


def read(name: str) -> Msg:
    return from_dict(load(name))


def test_enough_fixtures() -> None:
    assert len(NAMES) >= 6


@pytest.mark.parametrize("name", NAMES)
def test_detected_as_agentscope2(name: str) -> None:
    assert detect_dialect(load(name)) == "agentscope2"


@pytest.mark.parametrize("name", NAMES)
def test_common_envelope(name: str) -> None:
    data = load(name)
    msg = from_dict(data)
    assert msg == from_dict(data, dialect="agentscope2")
    assert msg.id == data["id"]
    assert msg.name == data["name"]
    assert to_dict(msg)["role"] == data["role"]
    # `created_at` is the timestamp, verbatim.
    assert msg.timestamp == data["created_at"]
    assert to_dict(msg)["metadata"] == data["metadata"]
    assert msg.HasField("metadata_json") is bool(data["metadata"])
    # Workflow fields are kept as top-level extras, in order.
    extras = loads(msg.extra_json)
    assert list(extras) == ["finished_at", "finished_reason", "structured_output", "error"]
    assert extras == {k: data[k] for k in extras}
    assert msg.HasField("usage") is (data["usage"] is not None)


@pytest.mark.parametrize("name", NAMES)
def test_agentscope_form_is_stable(name: str) -> None:
    """The 1.x form reads back (in the 1.x dialect) to the same blocks and dict."""
    msg = read(name)
    one_x = to_dict(msg)
    assert list(one_x) == ["id", "name", "role", "content", "metadata", "timestamp"]
    again = from_dict(one_x)
    assert list(again.blocks.items) == list(msg.blocks.items)
    assert_same(to_dict(again), one_x)
    assert_same(to_dict(Msg.FromString(msg.SerializeToString())), one_x)


@pytest.mark.parametrize("name", NAMES)
def test_java_form_is_stable(name: str) -> None:
    java = to_dict(read(name), dialect="java")
    assert_same(to_dict(from_dict(java), dialect="java"), java)


def test_user_text() -> None:
    msg = read("user_text")
    assert msg.role == Role.ROLE_USER
    assert get_text_content(msg) == "What's the weather in Paris?"
    (text,) = get_content_blocks(msg, "text")
    assert list(loads(text.extra_json)) == ["id", "created_at", "finished_at"]


def test_system_prompt() -> None:
    msg = read("system_prompt")
    assert msg.role == Role.ROLE_SYSTEM
    assert get_text_content(msg) == "You are a helpful assistant."


def test_user_multimodal_data_blocks_become_media() -> None:
    msg = read("user_multimodal")
    kinds = [b.WhichOneof("block") for b in msg.blocks.items]
    assert kinds == ["text", "image", "audio", "video", "opaque"]
    image = msg.blocks.items[1].image
    assert image.source.url == "https://example.com/images/cat.png"
    assert image.source.media_type == "image/png"
    assert loads(image.extra_json)["name"] == "cat.png"
    audio = msg.blocks.items[2].audio
    assert audio.source.media_type == "audio/wav"
    assert audio.source.data.startswith(b"RIFF")
    # A PDF has no 1.x block kind: it stays a `data` block.
    pdf = msg.blocks.items[4].opaque
    assert pdf.block_type == "data"
    assert loads(pdf.block_json) == load("user_multimodal")["content"][4]
    assert has_content_blocks(msg, ["image", "audio", "video"])


def test_user_multimodal_agentscope_form() -> None:
    blocks = to_dict(read("user_multimodal"))["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {
            "type": "url",
            "url": "https://example.com/images/cat.png",
            "media_type": "image/png",
        },
        "id": "00000000000000000000000000000004",
        "name": "cat.png",
        "created_at": "2026-05-30T14:00:02.209458",
        "finished_at": None,
    }
    # 1.x key order for base64 sources (2.x writes `data` first).
    assert list(blocks[2]["source"]) == ["type", "media_type", "data"]


def test_assistant_tool_calls() -> None:
    msg = read("assistant_tool_calls")
    assert msg.role == Role.ROLE_ASSISTANT
    thinking = get_content_blocks(msg, "thinking")[0]
    assert thinking.signature == "EqQBCkYIBRgCKkBsig"
    first, second = get_content_blocks(msg, "tool_use")
    assert (first.id, first.name) == ("call_1", "get_weather")
    assert loads(first.input_json) == {
        "city": "Paris",
        "days": 3,
        "detail": {"hourly": True, "precision": 0.5},
    }
    assert first.raw_input == load("assistant_tool_calls")["content"][2]["input"]
    assert loads(first.extra_json) == {
        "state": "pending",
        "suggested_rules": [],
        "created_at": "2026-05-30T14:00:09.942561",
        "finished_at": None,
    }
    # Partial (streaming) arguments: no object yet, the raw text is kept.
    assert loads(second.input_json) == {}
    assert second.raw_input == '{"command": "ls -la'
    assert loads(second.extra_json)["suggested_rules"][0]["tool_name"] == "Bash"
    # Usage: `cache_input_tokens` is the cache read count.
    assert msg.usage.input_tokens == 1200
    assert msg.usage.output_tokens == 85
    assert msg.usage.cache_read_input_tokens == 1024
    assert msg.usage.cache_creation_input_tokens == 0
    assert not msg.usage.HasField("time_seconds")


def test_assistant_tool_calls_agentscope_form() -> None:
    blocks = to_dict(read("assistant_tool_calls"))["content"]
    assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use", "tool_use"]
    assert list(blocks[0]) == ["type", "thinking", "signature", "id", "created_at", "finished_at"]
    assert list(blocks[2])[:5] == ["type", "id", "name", "input", "raw_input"]


def test_assistant_tool_results() -> None:
    msg = read("assistant_tool_results")
    # Tool results live in assistant messages in 2.x; the role is kept.
    assert msg.role == Role.ROLE_ASSISTANT
    text_result, media_result, denied = get_content_blocks(msg, "tool_result")
    assert text_result.text == "Sunny, 21°C"
    assert text_result.state == ToolResultState.TOOL_RESULT_STATE_SUCCESS
    kinds = [b.WhichOneof("block") for b in media_result.blocks.items]
    assert kinds == ["text", "image"]
    assert media_result.blocks.items[1].image.source.data.startswith(PNG)
    assert loads(media_result.extra_json)["metadata"] == {"elapsed_ms": 412}
    assert denied.state == ToolResultState.TOOL_RESULT_STATE_DENIED
    assert get_text_content(msg) is None


def test_assistant_structured_output_and_hint() -> None:
    msg = read("assistant_structured_output")
    hint = msg.blocks.items[0].opaque
    assert hint.block_type == "hint"
    assert loads(hint.block_json)["hint"] == "Keep the answer under 50 words."
    extras = loads(msg.extra_json)
    assert extras["finished_reason"] == "completed"
    assert extras["structured_output"] == {"city": "Paris", "temp_c": 21.5, "ok": True}
    assert get_text_content(msg) == "Done."


def test_assistant_error() -> None:
    msg = read("assistant_error")
    extras = loads(msg.extra_json)
    assert extras["finished_reason"] == "error"
    assert extras["error"] == {"type": "rate_limit", "message": "429 Too Many Requests"}
    assert get_text_content(msg) == ""


def test_tool_call_with_object_input_and_bad_input() -> None:
    data = load("assistant_tool_calls")
    data["content"][2]["input"] = {"city": "Paris"}
    call = get_content_blocks(from_dict(data), "tool_use")[0]
    assert loads(call.input_json) == {"city": "Paris"}
    assert not call.HasField("raw_input")
    data["content"][2]["input"] = 7
    with pytest.raises(MessageFormatError) as caught:
        from_dict(data)
    assert caught.value.path == "content[2].input"


def test_non_object_json_input_is_kept_raw() -> None:
    data = load("assistant_tool_calls")
    data["content"][2]["input"] = "[1, 2]"
    call = get_content_blocks(from_dict(data), "tool_use")[0]
    assert loads(call.input_json) == {}
    assert call.raw_input == "[1, 2]"


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"role": "tool"}, "role"),
        ({"content": 3}, "content"),
        ({"content": [3]}, "content[0]"),
        ({"usage": {"input_tokens": 1.5}}, "usage.input_tokens"),
        ({"metadata": []}, "metadata"),
        ({"created_at": 3}, "created_at"),
        ({"content": [{"type": "tool_call", "name": "f", "input": "{}"}]}, "content[0].id"),
        (
            {
                "content": [
                    {"type": "data", "source": {"type": "base64", "media_type": "image/png"}}
                ]
            },
            "content[0].source.data",
        ),
    ],
)
def test_bad_input_names_the_path(change: dict[str, Any], path: str) -> None:
    data = {**load("user_text"), **change}
    with pytest.raises(MessageFormatError) as caught:
        from_dict(data, dialect="agentscope2")
    assert caught.value.path == path


def test_missing_id_and_created_at_are_generated() -> None:
    data = load("user_text")
    del data["id"], data["created_at"]
    msg = from_dict(data, dialect="agentscope2")
    assert len(msg.id) == 32
    assert msg.timestamp
