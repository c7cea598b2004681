"""agentscope-java's Jackson JSON: read it, and write it back in the same shape.

Each file under tests/fixtures/java/ is hand-written from agentscope-java's
message classes (`io.agentscope.core.message` at `c2d43f86e`, after v2.0.2) in
the form Jackson writes them, one per difference between the dialects (the
numbered list in docs/dialects.md) and named after it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_proto import (
    MessageFormatError,
    Msg,
    Role,
    ToolCallState,
    ToolResultState,
    Usage,
    from_dict,
    from_json,
    get_content_blocks,
    get_text_content,
    new_msg,
    new_text_block,
    new_tool_result_block,
    new_tool_use_block,
    to_dict,
    to_json,
)
from agentscope_proto._json import loads
from agentscope_proto.dialects import _java_rules as rules
from agentscope_proto.dialects import detect_dialect

from strict import assert_same

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "java"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    with (FIXTURES / f"{name}.json").open(encoding="utf-8") as file:
        data: dict[str, Any] = json.load(file)
    return data


def read(name: str) -> Msg:
    return from_dict(load(name))


def test_one_fixture_per_difference() -> None:
    assert len(NAMES) == 21
    assert [int(name[:2]) for name in NAMES] == list(range(1, 22))


@pytest.mark.parametrize("name", NAMES)
def test_detected_as_java(name: str) -> None:
    assert detect_dialect(load(name)) == "java"


@pytest.mark.parametrize("name", NAMES)
def test_writes_back_unchanged(name: str) -> None:
    data = load(name)
    assert_same(to_dict(from_dict(data), dialect="java"), data)
    assert_same(to_dict(from_dict(data, dialect="java"), dialect="java"), data)


@pytest.mark.parametrize("name", NAMES)
def test_writes_back_unchanged_after_binary_round_trip(name: str) -> None:
    data = load(name)
    wire = from_dict(data).SerializeToString()
    assert_same(to_dict(Msg.FromString(wire), dialect="java"), data)


@pytest.mark.parametrize("name", NAMES)
def test_json_text_round_trip(name: str) -> None:
    text = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
    assert_same(json.loads(to_json(from_json(text), dialect="java")), json.loads(text))


@pytest.mark.parametrize("name", NAMES)
def test_agentscope_form_reads_back_the_same(name: str) -> None:
    """The 1.x form of a Java message is a valid 1.x message with the same content."""
    msg = read(name)
    data = to_dict(msg)
    again = from_dict(data)
    assert_same(to_dict(again), data)
    assert list(msg.blocks.items) == list(again.blocks.items)


# --- One test per difference (schema-anchors §1.6) ---------------------------


def test_01_role_casing() -> None:
    msg = read("01_role_casing")
    assert msg.role == Role.ROLE_USER
    assert to_dict(msg)["role"] == "user"
    # Java refuses any other spelling of a MsgRole name.
    for spelling in ("user", "User", "uSeR"):
        with pytest.raises(MessageFormatError, match=r"^role: expected one of 'USER'"):
            from_dict({**load("01_role_casing"), "role": spelling}, dialect="java")
    # Detected, a lower-case role is AgentScope 1.x, which has no Java traces to keep.
    data = {**load("01_role_casing"), "role": "user"}
    assert detect_dialect(data) == "agentscope"
    assert to_dict(from_dict(data), dialect="java")["role"] == "USER"


def test_02_tool_result_role() -> None:
    msg = read("02_tool_result_role")
    assert msg.role == Role.ROLE_TOOL
    # AgentScope 1.x carries tool results in system messages.
    assert to_dict(msg)["role"] == "system"
    assert from_dict(to_dict(msg)).role == Role.ROLE_SYSTEM
    assert to_dict(from_dict(to_dict(msg)), dialect="java")["role"] == "TOOL"
    with pytest.raises(MessageFormatError, match=r"^role: "):
        from_dict({**load("02_tool_result_role"), "role": "tool"})


def test_02_system_message_with_tool_result_is_written_as_tool() -> None:
    result = new_tool_result_block("call_1", "get_weather", "Sunny")
    assert to_dict(new_msg("system", [result], "system"), dialect="java")["role"] == "TOOL"
    assert to_dict(new_msg("system", "Be brief.", "system"), dialect="java")["role"] == "SYSTEM"


def test_03_content_array() -> None:
    msg = read("03_content_array")
    assert msg.WhichOneof("content") == "blocks"
    assert get_text_content(msg) == "Paris is sunny today.\nExpect 21°C in the afternoon."
    # Java refuses a plain string; AgentScope 1.x's string is written as one text block.
    data = {**load("01_role_casing"), "content": "hi"}
    with pytest.raises(MessageFormatError, match=r"^content: agentscope-java refuses this"):
        from_dict(data, dialect="java")
    msg = new_msg("user", "hi", "user")
    assert to_dict(msg, dialect="java")["content"] == [{"type": "text", "text": "hi"}]
    # Null content is an empty list, as in Java; null blocks are dropped.
    assert to_dict(from_dict({**data, "content": None}, dialect="java"), "java")["content"] == []
    msg = from_dict({**data, "content": [None, {"type": "text", "text": "x"}]}, dialect="java")
    assert to_dict(msg, dialect="java")["content"] == [{"type": "text", "text": "x"}]


def test_04_name_null() -> None:
    msg = read("04_name_null")
    assert not msg.HasField("name")
    assert to_dict(msg)["name"] is None
    data = load("04_name_null")
    del data["name"]
    assert not from_dict(data).HasField("name")
    assert to_dict(from_dict(data), dialect="java")["name"] is None


def test_05_uuid_id() -> None:
    msg = read("05_uuid_id")
    assert msg.id == "123e4567-e89b-12d3-a456-426614174000"
    assert msg.role == Role.ROLE_SYSTEM
    data = {**load("05_uuid_id"), "id": None}
    assert not from_dict(data).HasField("id")
    assert to_dict(from_dict(data), dialect="java")["id"] is None


def test_06_timestamp_iso8601() -> None:
    msg = read("06_timestamp_iso8601")
    assert msg.timestamp == "2024-01-15T10:30:00Z"
    assert to_dict(msg)["timestamp"] == "2024-01-15T10:30:00Z"
    assert read("01_role_casing").timestamp == "2026-03-14 09:26:53.589"


def test_06_seed_example_reads_and_writes_in_jackson_order() -> None:
    """The serialization example of the design documents, in its own key order."""
    seed = {
        "name": "user",
        "role": "USER",
        "content": [
            {"type": "text", "text": "What is this image?"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/photo.jpg"}},
        ],
        "metadata": {},
        "id": "msg_001",
        "timestamp": "2024-01-15T10:30:00Z",
    }
    assert_same(to_dict(from_dict(seed), dialect="java"), load("06_timestamp_iso8601"))


def test_07_usage_camel_case() -> None:
    msg = read("07_usage_camel_case")
    assert msg.usage.input_tokens == 100
    assert msg.usage.output_tokens == 50
    assert msg.usage.cache_read_input_tokens == 30
    assert msg.usage.time_seconds == 1.5
    assert not msg.usage.HasField("cache_creation_input_tokens")
    # The older copy stays in the metadata, where agentscope-java's
    # getChatUsage() falls back to it.
    assert loads(msg.metadata_json)["_chat_usage"]["inputTokens"] == 100
    assert "usage" not in to_dict(msg)


def test_07_usage_defaults_and_errors() -> None:
    data = {**load("01_role_casing"), "usage": {"inputTokens": 7}}
    msg = from_dict(data)
    assert msg.usage.input_tokens == 7
    assert not msg.usage.HasField("output_tokens")
    assert to_dict(msg, dialect="java")["usage"] == {
        "inputTokens": 7,
        "outputTokens": 0,
        "cachedTokens": 0,
        "time": 0.0,
        "totalTokens": 7,
    }
    # Jackson truncates a float count; `totalTokens` and unknown keys are derived or ignored.
    msg = from_dict({**data, "usage": {"inputTokens": -2.9, "totalTokens": 5, "x": 1}})
    assert msg.usage == Usage(input_tokens=-2)
    assert from_dict({**data, "usage": {}}).HasField("usage")
    refused = r"^usage\.inputTokens: agentscope-java refuses this: "
    with pytest.raises(MessageFormatError, match=refused + "expected a 32-bit integer, got str"):
        from_dict({**data, "usage": {"inputTokens": "7"}})
    with pytest.raises(MessageFormatError, match=refused + "2147483648 does not fit"):
        from_dict({**data, "usage": {"inputTokens": 2**31}})
    with pytest.raises(MessageFormatError, match=r"^usage\.time: .*expected a number"):
        from_dict({**data, "usage": {"time": True}})
    with pytest.raises(MessageFormatError, match=r"^usage: expected an object"):
        from_dict({**data, "usage": [1]})


def test_08_no_invocation_id() -> None:
    msg = read("08_no_invocation_id")
    assert not msg.HasField("invocation_id")
    one_x = new_msg("Friday", "Checking now.", "assistant", invocation_id="chatcmpl-1")
    written = to_dict(one_x, dialect="java")
    assert list(written) == ["id", "name", "role", "content", "metadata", "timestamp", "usage"]


def test_09_metadata_generate_reason() -> None:
    msg = read("09_metadata_generate_reason")
    metadata = loads(msg.metadata_json)
    assert metadata["agentscope_generate_reason"] == "STRUCTURED_OUTPUT"
    assert metadata["_structured_output"] == {"city": "Paris", "temp_c": 21.5}
    assert to_dict(msg)["metadata"] == metadata


def test_10_explicit_nulls() -> None:
    msg = read("10_explicit_nulls")
    thinking, tool_use = unwrap_all(msg)
    assert thinking.thinking == "Look it up first."
    assert not thinking.extra_json
    assert not tool_use.HasField("raw_input")
    assert not msg.HasField("usage")
    # Nulls mean "not set": the 1.x form has no such keys.
    blocks = to_dict(msg)["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "Look it up first."}
    assert "content" not in blocks[1]


def test_11_data_block_is_typed() -> None:
    msg = read("11_data_block")
    data = msg.blocks.items[1].data
    # Java's `mime_type` is the source's media type.
    assert data.source.media_type == "application/pdf"
    assert (data.id, data.name) == ("5b8e1c2d9f4a4e6b8d0c3a7f1e2b9c4d", "report.pdf")
    assert to_dict(msg)["content"][1] == {
        "type": "data",
        "source": {
            "type": "url",
            "url": "https://example.com/report.pdf",
            "media_type": "application/pdf",
        },
        "id": "5b8e1c2d9f4a4e6b8d0c3a7f1e2b9c4d",
        "name": "report.pdf",
    }


def test_12_thinking_metadata() -> None:
    msg = read("12_thinking_metadata")
    (thinking,) = get_content_blocks(msg, "thinking")
    assert thinking.thinking == "The user wants a forecast."
    assert list(loads(thinking.extra_json)) == ["metadata"]
    assert "reasoningDetails" in loads(thinking.extra_json)["metadata"]


def test_13_tool_use_raw_content() -> None:
    msg = read("13_tool_use_raw_content")
    (call,) = get_content_blocks(msg, "tool_use")
    assert call.raw_input == '{"city":"Paris","days":3}'
    assert loads(call.input_json) == {"city": "Paris", "days": 3}
    block = to_dict(msg)["content"][0]
    assert block["raw_input"] == '{"city":"Paris","days":3}'
    assert "content" not in block


def test_14_tool_use_metadata_state() -> None:
    msg = read("14_tool_use_metadata_state")
    first, second = get_content_blocks(msg, "tool_use")
    # Gemini's signature, which agentscope-java keeps in metadata.
    assert first.thought_signature == bytes.fromhex("0a2401d1ed8a6f5a579d")
    assert first.state == ToolCallState.TOOL_CALL_STATE_ALLOWED
    assert not first.extra_json
    assert second.state == ToolCallState.TOOL_CALL_STATE_ASKING
    assert loads(second.extra_json) == {"metadata": {"approvedBy": "alice"}}
    assert to_dict(msg)["content"][0] == {
        "type": "tool_use",
        "id": "call_9",
        "name": "get_weather",
        "input": {"city": "Paris"},
        "thought_signature": "CiQB0e2Kb1pXnQ==",
        "state": "allowed",
    }


def test_14_invalid_thought_signature_stays_in_metadata() -> None:
    data = load("14_tool_use_metadata_state")
    data["content"][0]["metadata"] = {"thoughtSignature": "not base64!"}
    msg = from_dict(data)
    first = get_content_blocks(msg, "tool_use")[0]
    assert not first.HasField("thought_signature")
    assert_same(to_dict(msg, dialect="java"), data)


def test_15_tool_result_output_list() -> None:
    msg = read("15_tool_result_output_list")
    (result,) = get_content_blocks(msg, "tool_result")
    kinds = [b.WhichOneof("block") for b in result.blocks.items]
    assert kinds == ["text", "image"]
    assert result.blocks.items[1].image.source.media_type == "image/png"
    assert result.blocks.items[1].image.source.data.startswith(b"\x89PNG")


def test_15_any_block_kind_in_output_and_string_output() -> None:
    data = load("15_tool_result_output_list")
    output = data["content"][0]["output"]
    output.append({"type": "thinking", "thinking": "x", "metadata": None})
    output.append({"type": "hint", "id": "h", "hint": "y", "source": None})
    msg = from_dict(data)
    kinds = [b.WhichOneof("block") for b in msg.blocks.items[0].tool_result.blocks.items]
    assert kinds == ["text", "image", "thinking", "hint"]
    assert_same(to_dict(msg, dialect="java"), data)
    # Java refuses a string output; AgentScope 1.x's string output becomes a list.
    data["content"][0]["output"] = "Sunny"
    with pytest.raises(MessageFormatError, match=r"^content\[0\]\.output: agentscope-java"):
        from_dict(data)
    msg = new_msg("system", [new_tool_result_block("c", "f", "Sunny")], "system")
    assert to_dict(msg, dialect="java")["content"][0]["output"] == [
        {"type": "text", "text": "Sunny"}
    ]


def test_16_tool_result_metadata_state() -> None:
    msg = read("16_tool_result_metadata_state")
    suspended, failed = get_content_blocks(msg, "tool_result")
    assert suspended.state == ToolResultState.TOOL_RESULT_STATE_RUNNING
    assert loads(suspended.metadata_json) == {"agentscope_suspended": True}
    assert failed.state == ToolResultState.TOOL_RESULT_STATE_ERROR
    assert loads(failed.metadata_json) == {}
    assert to_dict(msg)["content"][1]["state"] == "error"


def test_17_media_pixel_knobs() -> None:
    msg = read("17_media_pixel_knobs")
    image, video = msg.blocks.items[0].image, msg.blocks.items[1].video
    assert loads(image.extra_json) == {"minPixels": 3136, "maxPixels": 1003520}
    assert loads(video.extra_json)["fps"] == 2.0
    assert list(loads(video.extra_json)) == [
        "fps",
        "maxFrames",
        "minPixels",
        "maxPixels",
        "totalPixels",
    ]


def test_17_knobs_in_either_spelling_are_written_in_camel_case() -> None:
    data = load("17_media_pixel_knobs")
    image = data["content"][0]
    # Java reads both spellings, camelCase winning, and writes camelCase.
    data["content"][0] = {
        "type": "image",
        "min_pixels": 1,
        "source": image["source"],
        "minPixels": 2,
        "max_pixels": 7.9,
    }
    written = to_dict(from_dict(data), dialect="java")["content"][0]
    assert_same(
        written, {"type": "image", "source": image["source"], "minPixels": 2, "maxPixels": 7}
    )
    # A 1.x message's snake_case settings go to Java in camelCase; fps is a double.
    one_x = from_dict(
        {
            "name": "u",
            "role": "user",
            "content": [{"type": "video", "source": image["source"], "fps": 2, "max_frames": 8}],
        }
    )
    assert_same(
        to_dict(one_x, dialect="java")["content"][0],
        {"type": "video", "source": image["source"], "fps": 2.0, "maxFrames": 8},
    )


def test_18_url_mime_type() -> None:
    msg = read("18_url_mime_type")
    image, audio = msg.blocks.items[0].image, msg.blocks.items[1].audio
    assert image.source.url == "https://example.com/images/cat"
    assert image.source.media_type == "image/webp"
    assert audio.source.media_type == "audio/mpeg"
    assert not image.source.extra_json
    # Java HEAD writes `mime_type`; a 1.x URL source has no media type.
    one_x = to_dict(msg)["content"][0]["source"]
    assert one_x == {
        "type": "url",
        "url": "https://example.com/images/cat",
        "media_type": "image/webp",
    }


def test_19_local_url_is_kept_verbatim() -> None:
    msg = read("19_local_url")
    assert msg.blocks.items[0].image.source.url == "file:///tmp/agentscope/sample.png"
    assert msg.blocks.items[1].video.source.url == "media/demo.mp4"


def test_20_state_casing() -> None:
    data = load("20_state_casing")
    msg = from_dict(data)
    assert msg.blocks.items[1].tool_result.state == ToolResultState.TOOL_RESULT_STATE_DENIED
    call = msg.blocks.items[0].tool_use
    assert call.state == ToolCallState.TOOL_CALL_STATE_FINISHED
    assert loads(call.extra_json) == {"metadata": {}}
    # Java refuses other spellings of its states...
    loud = copy.deepcopy(data)
    loud["content"][0]["state"] = "FINISHED"
    with pytest.raises(MessageFormatError, match=r"^content\[0\]\.state: agentscope-java"):
        from_dict(loud)
    # ...so a 1.x message holding one gets it in lower case.
    one_x = to_dict(msg)
    one_x["content"][0]["state"] = "FINISHED"
    one_x["content"][1]["state"] = "Denied"
    assert_same(to_dict(from_dict(one_x), dialect="java"), data)


def test_21_hint_block_is_typed() -> None:
    msg = read("21_hint_block")
    hints = get_content_blocks(msg, "hint")
    assert [h.WhichOneof("hint") for h in hints] == ["text", "text"]
    assert hints[0].source
    # A null source is no source; Java's `null` comes back.
    assert not hints[1].HasField("source")
    assert to_dict(msg, dialect="java")["content"][1]["source"] is None
    assert get_text_content(msg) == "Sunny, 21°C."


# --- Writing AgentScope 1.x messages as agentscope-java ----------------------


def unwrap_all(msg: Msg) -> list[Any]:
    return [getattr(b, str(b.WhichOneof("block"))) for b in msg.blocks.items]


def test_one_x_message_in_java_shape() -> None:
    one_x = {
        "id": "6hGaqqUXRucCDyXt4tbeDw",
        "name": "Friday",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "f",
                "input": {"a": 1},
                "raw_input": '{"a": 1}',
                "thought_signature": "c2ln",
            },
            {"type": "tool_result", "id": "call_1", "name": "f", "output": None},
            {
                "source": {"data": "AAEC", "type": "base64", "media_type": "audio/wav"},
                "type": "audio",
            },
            {"type": "video", "source": {"type": "url", "url": "https://x/v.mp4"}, "fps": None},
        ],
        "metadata": {"keep": 1, "dropped": None},
        "timestamp": "2025-03-14 09:26:53.589",
        "invocation_id": "inv-1",
    }
    assert_same(
        to_dict(from_dict(one_x), dialect="java"),
        {
            "id": "6hGaqqUXRucCDyXt4tbeDw",
            "name": "Friday",
            "role": "ASSISTANT",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "thinking", "thinking": "hmm", "metadata": None},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "f",
                    "input": {"a": 1},
                    "content": '{"a": 1}',
                    "metadata": {"thoughtSignature": "c2ln"},
                    "state": "pending",
                },
                {
                    "type": "tool_result",
                    "id": "call_1",
                    "name": "f",
                    "output": [],
                    "metadata": {},
                    "state": "running",
                },
                {
                    "type": "audio",
                    "source": {"type": "base64", "media_type": "audio/wav", "data": "AAEC"},
                },
                {"type": "video", "source": {"type": "url", "url": "https://x/v.mp4"}},
            ],
            "metadata": {"keep": 1},
            "timestamp": "2025-03-14 09:26:53.589",
            "usage": None,
        },
    )


def test_string_content_and_constructed_messages() -> None:
    msg = new_msg(
        "Friday",
        [new_text_block("a"), new_tool_use_block("c", "f", {"x": [1, 2.5]})],
        "assistant",
        timestamp="2025-01-01 00:00:00.000",
        id="m1",
    )
    assert to_dict(msg, dialect="java")["content"] == [
        {"type": "text", "text": "a"},
        {
            "type": "tool_use",
            "id": "c",
            "name": "f",
            "input": {"x": [1, 2.5]},
            "content": None,
            "metadata": {},
            "state": "pending",
        },
    ]


def test_java_needs_object_metadata() -> None:
    msg = from_dict({"name": "a", "role": "user", "content": "x", "metadata": [1]})
    with pytest.raises(MessageFormatError, match=r"^metadata: agentscope-java refuses this"):
        to_dict(msg, dialect="java")


def test_unset_role_is_written_as_java_null_role() -> None:
    # Java writes `"role": null` for a message built without a role; the 1.x
    # writer and the formatters refuse such a message.
    assert to_dict(Msg(), dialect="java")["role"] is None
    with pytest.raises(MessageFormatError, match=r"^role: unset"):
        to_dict(Msg())


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"role": "robot"}, "role"),
        ({"name": 1.5}, "name"),
        ({"id": [3]}, "id"),
        ({"timestamp": {}}, "timestamp"),
        ({"metadata": "x"}, "metadata"),
        ({"content": {"type": "text"}}, "content"),
        ({"content": [{"type": "text", "text": 1}]}, "content[0].text"),
        ({"content": [{"type": "image", "source": {"type": "url"}}]}, "content[0].source.url"),
        ({"content": [{"type": "thinking", "thinking": "x"}]}, "content[0].type"),
        (
            {"content": [{"type": "image", "source": {"type": "url", "url": "u", "mime_type": 3}}]},
            "content[0].source.mime_type",
        ),
        (
            {"role": "TOOL", "content": [{"type": "tool_result", "output": [7]}]},
            "content[0].output[0]",
        ),
        (
            {"role": "TOOL", "content": [{"type": "tool_result", "metadata": {"a": None}}]},
            "content[0].metadata.a",
        ),
        ({"role": "ASSISTANT", "content": [{"type": "tool_use", "input": []}]}, "content[0].input"),
        ({"content": [{"type": "hint", "hint": ["x"]}]}, "content[0].type"),
        ({"role": "TOOL", "content": [{"type": "hint", "hint": ["x"]}]}, "content[0].hint"),
        ({"content": ["text"]}, "content[0]"),
    ],
)
def test_bad_java_input_names_the_path(change: dict[str, Any], path: str) -> None:
    data = {**load("01_role_casing"), **change}
    with pytest.raises(MessageFormatError) as caught:
        from_dict(data, dialect="java")
    assert caught.value.path == path


def test_integer_ids_read_as_their_digits() -> None:
    """Jackson reads a number into a String field as its text."""
    msg = from_dict({**load("01_role_casing"), "id": 12345, "name": 7, "timestamp": 1700000000})
    assert (msg.id, msg.name, msg.timestamp) == ("12345", "7", "1700000000")


def test_java_without_role_reads_unset_and_writes_null() -> None:
    data = load("01_role_casing")
    del data["role"]
    msg = from_dict(data, dialect="java")
    assert msg.role == Role.ROLE_UNSPECIFIED
    written = to_dict(msg, dialect="java")
    assert written["role"] is None
    assert from_dict(written, dialect="java") == msg
    assert from_dict({**data, "role": None}, dialect="java") == msg
    # Detection goes by the role, so without `dialect=` such a dict reads as
    # 1.x, which needs a role.
    with pytest.raises(MessageFormatError, match=r"^role: missing"):
        from_dict(data)


def test_java_role_of_another_type_is_an_error() -> None:
    data = {**load("01_role_casing"), "role": 1}
    with pytest.raises(MessageFormatError, match=r"^role: expected one of"):
        from_dict(data, dialect="java")


def test_unknown_top_level_keys_are_kept_but_not_written() -> None:
    data = {**load("01_role_casing"), "traceId": "t-1"}
    msg = from_dict(data)
    assert loads(msg.extra_json) == {"traceId": "t-1"}
    assert_same(to_dict(msg, dialect="java"), load("01_role_casing"))


# --- Detection ---------------------------------------------------------------


def _neutral() -> dict[str, Any]:
    """A dict that reads the same in every dialect: no trace of any of them."""
    return {
        "id": "x",
        "name": "Friday",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "metadata": {},
        "timestamp": "2025-03-14 09:26:53.589",
    }


@pytest.mark.parametrize("role", ["USER", "ASSISTANT", "SYSTEM", "TOOL"])
def test_java_is_a_msg_role_name(role: str) -> None:
    assert detect_dialect(_neutral()) == "agentscope"
    assert detect_dialect({**_neutral(), "role": role}) == "java"


@pytest.mark.parametrize(
    "change",
    [
        # Java's reader refuses every other role spelling, so whatever else a
        # dict with a lower-case role holds, only 1.x can read it (keeping the
        # unknown keys as extras).
        {"usage": None},
        {"name": None},
        {"timestamp": "2024-01-15T10:30:00Z"},
        {"content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}, "content": None}]},
        {"content": [{"type": "thinking", "thinking": "t", "metadata": None}]},
        {"content": [{"type": "image", "source": {"type": "url", "url": "u"}, "minPixels": 1}]},
        {"role": "User"},
        # String content and invocation_id exist only in AgentScope 1.x.
        {"content": "hi", "timestamp": "2024-01-15T10:30:00Z"},
        {"invocation_id": "inv", "usage": None},
        {"metadata": None},
        {"id": None},
        {"timestamp": None},
        {"content": [{"type": "tool_call", "id": "c", "name": "f", "input": "{}"}]},
        {"content": [{"type": "hint", "hint": "be brief"}]},
    ],
)
def test_agentscope_despite_traces(change: dict[str, Any]) -> None:
    assert detect_dialect({**_neutral(), **change}) == "agentscope"


def test_java_traces_in_a_one_x_dict_are_kept() -> None:
    data = {
        **_neutral(),
        "name": None,
        "usage": None,
        "content": [{"type": "image", "source": {"type": "url", "url": "u"}, "minPixels": 1}],
    }
    msg = from_dict(data)
    assert_same(to_dict(msg), {k: v for k, v in data.items() if k != "usage"})
    assert to_dict(msg, dialect="java")["content"][0]["minPixels"] == 1


def test_detection_survives_garbage() -> None:
    for data in ([], "x", None, {}, {"role": 1}, {"content": [1, None, "x", {"type": []}]}):
        assert detect_dialect(data) == "agentscope"


def test_unknown_dialects() -> None:
    msg = read("01_role_casing")
    with pytest.raises(ValueError, match="unknown dialect 'jackson'"):
        to_dict(msg, dialect="jackson")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown dialect 'jackson'"):
        from_dict(load("01_role_casing"), dialect="jackson")  # type: ignore[arg-type]


# --- 1.x messages written for Java: mapped, or refused naming the rule ---------
# One test per kind of message agentscope-java refuses (docs/dialects.md has
# the table). Every refusal is a MessageFormatError naming the path.

THINK = {"type": "thinking", "thinking": "hmm"}
CALL = {"type": "tool_use", "id": "c", "name": "f", "input": {"x": 1}}
RESULT = {"type": "tool_result", "id": "c", "name": "f", "output": "ok"}
IMAGE_URL = {"type": "image", "source": {"type": "url", "url": "https://e.com/i.png"}}


def one_x(role: str, *blocks: dict[str, Any], **more: Any) -> Msg:
    data = {"name": "n", "role": role, "content": list(blocks), **more}
    return from_dict(data, dialect="agentscope")


def refusal(msg: Msg) -> MessageFormatError:
    with pytest.raises(MessageFormatError) as caught:
        to_dict(msg, dialect="java")
    assert caught.value.reason.startswith("agentscope-java refuses this: ")
    return caught.value


def test_user_messages_hold_only_text_data_and_media() -> None:
    written = to_dict(one_x("user", {"type": "text", "text": "x"}, IMAGE_URL), dialect="java")
    assert written["role"] == "USER"
    for block in (THINK, CALL, {"type": "hint", "hint": "h"}):
        error = refusal(one_x("user", {"type": "text", "text": "x"}, block))
        assert error.path == "content[1].type"
        assert f"{block['type']!r} is not allowed in a USER message" in error.reason
    # A user message of tool results only (Anthropic's convention) is a TOOL message.
    assert to_dict(one_x("user", RESULT, RESULT), dialect="java")["role"] == "TOOL"
    assert refusal(one_x("user", RESULT, {"type": "text", "text": "x"})).path == "content[0].type"


def test_system_messages_hold_only_text() -> None:
    assert to_dict(one_x("system", {"type": "text", "text": "x"}), dialect="java")["role"] == (
        "SYSTEM"
    )
    # AgentScope 1.x carries tool results in system messages: TOOL in Java.
    assert to_dict(one_x("system", RESULT), dialect="java")["role"] == "TOOL"
    for block in (THINK, CALL, IMAGE_URL, RESULT):
        error = refusal(one_x("system", {"type": "text", "text": "x"}, block))
        assert error.path == "content[1].type"
        assert "a SYSTEM message holds only text blocks" in error.reason
    # Assistant and tool messages hold anything.
    for role in (Role.ROLE_ASSISTANT, Role.ROLE_TOOL):
        msg = one_x("assistant", THINK, CALL, RESULT, IMAGE_URL)
        msg.role = role
        assert len(to_dict(msg, dialect="java")["content"]) == 4


def test_unknown_block_types_are_refused() -> None:
    for kind in ("tool_call", "TEXT", "reasoning"):
        error = refusal(one_x("assistant", {"type": kind, "x": 1}))
        assert error.path == "content[0].type"
        assert f"unknown block type {kind!r}" in error.reason
    # Also inside a tool result.
    nested = from_dict(
        {
            "role": "TOOL",
            "content": [{"type": "tool_result", "id": "c", "name": "f", "output": []}],
        }
    )
    nested.blocks.items[0].tool_result.blocks.items.add().opaque.block_type = "x"
    nested.blocks.items[0].tool_result.blocks.items[0].opaque.block_json = '{"type":"x"}'
    assert refusal(nested).path == "content[0].output[0].type"
    # hint and data are Java's own kinds, written in Java's shape.
    msg = one_x(
        "assistant",
        {"type": "hint", "hint": "be brief", "created_at": "t"},
        {"type": "data", "source": {"type": "url", "url": "u", "media_type": "text/csv"}},
    )
    assert to_dict(msg, dialect="java")["content"] == [
        {"type": "hint", "id": None, "hint": "be brief", "source": None},
        {"type": "data", "source": {"type": "url", "url": "u", "mime_type": "text/csv"}},
    ]
    bad_hint = one_x("assistant", {"type": "hint", "hint": [{"type": "text", "text": "x"}]})
    assert refusal(bad_hint).path == "content[0].hint"
    # A data block needs a source in every dialect.
    with pytest.raises(MessageFormatError, match=r"^content\[0\]\.source: expected an object"):
        one_x("assistant", {"type": "data", "source": None})


def test_nulls_in_tool_result_metadata_are_dropped() -> None:
    """Java's Map.copyOf refuses a null value; an absent key means the same to Java."""
    msg = one_x("system", {**RESULT, "metadata": {"a": None, "b": 1}})
    assert to_dict(msg, dialect="java")["content"][0]["metadata"] == {"b": 1}
    # Message metadata: Msg drops null values itself.
    msg = one_x("user", {"type": "text", "text": "x"}, metadata={"a": None, "b": [None]})
    assert to_dict(msg, dialect="java")["metadata"] == {"b": [None]}
    assert refusal(one_x("system", {**RESULT, "metadata": [1]})).path == "content[0].metadata"


def test_counts_beyond_32_bits_are_refused() -> None:
    msg = one_x("assistant", {"type": "text", "text": "x"})
    msg.usage.input_tokens = 2**31 - 1
    msg.usage.output_tokens = 1
    # ChatUsage.getTotalTokens() is an int sum: it wraps as in Java.
    assert to_dict(msg, dialect="java")["usage"]["totalTokens"] == -(2**31)
    msg.usage.output_tokens = 2**31
    error = refusal(msg)
    assert (error.path, error.reason) == (
        "usage.output_tokens",
        "agentscope-java refuses this: 2147483648 does not fit in a 32-bit int",
    )
    # Java has no cache-creation or reasoning counts: they are not written.
    msg = one_x("assistant", {"type": "text", "text": "x"})
    msg.usage.cache_creation_input_tokens = 2**40
    msg.usage.reasoning_tokens = 5
    assert to_dict(msg, dialect="java")["usage"] == {
        "inputTokens": 0,
        "outputTokens": 0,
        "cachedTokens": 0,
        "time": 0.0,
        "totalTokens": 0,
    }
    big = {**IMAGE_URL, "max_pixels": 2**31}
    assert refusal(one_x("user", big)).path == "content[0].max_pixels"
    assert refusal(one_x("user", {**IMAGE_URL, "minPixels": "9"})).path == "content[0].minPixels"


def test_tool_use_input_must_be_an_object() -> None:
    for value in ([1, 2], "{}", 3, None):
        error = refusal(one_x("assistant", {**CALL, "input": value}))
        assert error.path == "content[0].input"
        assert "a tool call's input is an object" in error.reason


def test_states_java_does_not_know_are_refused() -> None:
    msg = one_x("assistant", {**CALL, "state": "Allowed"}, {**RESULT, "state": "SUCCESS"})
    content = to_dict(msg, dialect="java")["content"]
    assert [block["state"] for block in content] == ["allowed", "success"]
    assert refusal(one_x("assistant", {**CALL, "state": "done"})).path == "content[0].state"
    assert refusal(one_x("assistant", {**RESULT, "state": 3})).path == "content[0].state"


def test_values_past_jacksons_limits_are_refused() -> None:
    long_text = "x" * 20_000_001
    error = refusal(one_x("user", {"type": "text", "text": long_text}))
    assert error.path == "content[0].text"
    assert to_dict(one_x("user", {"type": "text", "text": long_text[1:]}), dialect="java")
    error = refusal(one_x("assistant", {**CALL, "input": {"n": 10**1000}}))
    assert error.path == "content[0].input.n"
    # Java's reader refuses them too.
    java = {"role": "ASSISTANT", "content": [{**CALL, "input": {"n": -(10**1000)}}]}
    with pytest.raises(MessageFormatError, match=r"^content\[0\]\.input\.n: agentscope-java"):
        from_dict(java)
    assert to_dict(one_x("assistant", {**CALL, "input": {"n": 10**1000 - 1}}), dialect="java")


def test_thinking_metadata_must_be_an_object() -> None:
    assert refusal(one_x("assistant", {**THINK, "metadata": "x"})).path == "content[0].metadata"


# --- What the Java reader takes, the Java writer gives back --------------------

ODD: list[Any] = [None, 0, -1, 1.5, True, "", "x", "USER", "SUCCESS", [], {}, [None], [1]]
ODD += [{"type": "text"}, {"type": "hint", "hint": 1}, 2**31, -(2**31) - 1, 10**1000]


def _locations(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _locations(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _locations(item, (*path, index))
    return found


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_what_the_java_reader_takes_writes_back(data: st.DataObject) -> None:
    """Any value of a Java message replaced or removed: the Java reader refuses
    it, or the message writes back in the Java dialect and reads back the same."""
    sample = copy.deepcopy(load(data.draw(st.sampled_from(NAMES))))
    where = data.draw(st.sampled_from(_locations(sample)[1:]))
    parent = sample
    for key in where[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        del parent[where[-1]]
    else:
        parent[where[-1]] = copy.deepcopy(data.draw(st.sampled_from(ODD)))
    try:
        msg = from_dict(sample, dialect="java")
    except MessageFormatError:
        return
    written = to_dict(msg, dialect="java")
    assert_same(to_dict(from_dict(written, dialect="java"), dialect="java"), written)


# --- Java's edges: UTF-16 lengths, name lengths, Float, int ranges ---------------

VIDEO_URL = {"type": "video", "source": {"type": "url", "url": "https://e.com/v.mp4"}}


def java_msg(*blocks: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": "n", "role": "ASSISTANT", "content": list(blocks), "metadata": {}, **more}


def java_refusal(data: dict[str, Any]) -> MessageFormatError:
    with pytest.raises(MessageFormatError) as caught:
        from_dict(data, dialect="java")
    assert caught.value.reason.startswith("agentscope-java refuses this: ")
    return caught.value


def test_jacksons_string_limit_counts_utf16_units() -> None:
    # 10,000,001 emoji are 20,000,002 UTF-16 units: past Jackson's 20,000,000.
    emoji = "\U0001f600" * 10_000_001
    error = java_refusal(java_msg({"type": "text", "text": emoji}))
    assert error.path == "content[0].text"
    assert "20,000,000 UTF-16 units" in error.reason
    assert refusal(one_x("user", {"type": "text", "text": emoji})).path == "content[0].text"
    # 10,000,000 of them are exactly the limit.
    rules.check_limits({"text": emoji[1:]})


def test_jacksons_name_limit_refuses_keys_over_50000_utf16_units() -> None:
    # Jackson 2.16+ (agentscope-java ships it) refuses longer property names.
    for key, refused in (
        ("k" * 50_000, False),
        ("k" * 50_001, True),
        ("\U0001f600" * 25_001, True),
    ):
        data = java_msg({**CALL, "input": {key: 1}}, metadata={"m": {key: 2}})
        written = one_x("assistant", {**CALL, "input": {key: 1}})
        if not refused:
            assert from_dict(data, dialect="java").name == "n"
            assert to_dict(written, dialect="java")["content"][0]["input"] == {key: 1}
            continue
        error = java_refusal(data)
        assert error.path == "content[0].input"
        assert "a name (key) longer than 50,000 UTF-16 units" in error.reason
        assert refusal(written).path == "content[0].input"
        metadata_only = java_msg({"type": "text", "text": "x"}, metadata={"m": {key: 2}})
        assert java_refusal(metadata_only).path == "metadata.m"


@pytest.mark.parametrize(
    ("given", "java_writes"),
    [
        (0.123456789, 0.12345679),  # a Java Float: 24-bit mantissa, printed shortest
        (29.97, 29.97),
        (2, 2.0),
        (1e-50, 0.0),  # below Float's range: zero
        (-1e-50, -0.0),
        (3.4028235e38, 3.4028235e38),  # Float.MAX_VALUE
        (1.4e-45, 1.4e-45),  # Float.MIN_VALUE, printed with two digits as Java does
    ],
)
def test_fps_is_a_java_float(given: float, java_writes: float) -> None:
    msg = from_dict(java_msg({**VIDEO_URL, "fps": given}), dialect="java")
    written = to_dict(msg, dialect="java")["content"][0]["fps"]
    assert (written, str(written)) == (java_writes, str(java_writes))
    one = one_x("assistant", {**VIDEO_URL, "fps": given})
    assert str(to_dict(one, dialect="java")["content"][0]["fps"]) == str(java_writes)


@pytest.mark.parametrize("given", [1e39, -1e39, 3.4028236e38])
def test_fps_past_a_java_float_is_refused(given: float) -> None:
    # Java would write Float infinity, which is not a JSON number.
    error = java_refusal(java_msg({**VIDEO_URL, "fps": given}))
    assert error.path == "content[0].fps"
    assert "does not fit in a Java Float" in error.reason
    assert refusal(one_x("assistant", {**VIDEO_URL, "fps": given})).path == "content[0].fps"


@pytest.mark.parametrize(
    ("count", "accepted"),
    [
        (2147483647.0, True),
        (2147483647.5, False),  # Jackson checks the range before it truncates
        (2147483647.000001, False),
        (-2147483648.0, True),
        (-2147483648.5, False),
        (-2.9, True),
    ],
)
def test_a_float_count_is_range_checked_before_truncation(count: float, accepted: bool) -> None:
    data = java_msg({"type": "text", "text": "x"}, usage={"inputTokens": count})
    pixels = java_msg({**VIDEO_URL, "maxFrames": count})
    if accepted:
        assert from_dict(data, dialect="java").usage.input_tokens == int(count)
        assert to_dict(from_dict(pixels, dialect="java"), dialect="java")["content"][0][
            "maxFrames"
        ] == int(count)
    else:
        assert java_refusal(data).path == "usage.inputTokens"
        assert java_refusal(pixels).path == "content[0].maxFrames"
        assert refusal(one_x("assistant", {**VIDEO_URL, "max_frames": count})).path == (
            "content[0].max_frames"
        )
