"""AgentScope Python 2.x JSON (`Msg.model_dump(mode="json")`) read and written exactly.

The files under tests/fixtures/agentscope2/ were written by AgentScope's own 2.x
message module (v2.0.x) with deterministic id and timestamp factories:
`UserMsg`/`AssistantMsg`/`SystemMsg` holding every 2.x block kind, dumped with
`model_dump(mode="json")`. The golden corpus of tests/golden/agentscope2/ is
checked in tests/test_dialects_agentscope2_golden.py; here, what each field
becomes and what the writer does with messages from the other dialects.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_proto import (
    ErrorType,
    FinishedReason,
    MessageFormatError,
    Msg,
    PermissionBehavior,
    Role,
    ToolCallState,
    ToolResultState,
    from_dict,
    get_content_blocks,
    get_text_content,
    has_content_blocks,
    new_data_block,
    new_hint_block,
    new_image_block,
    new_msg,
    new_text_block,
    new_thinking_block,
    new_tool_result_block,
    new_tool_use_block,
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


def refusal(data: dict[str, Any]) -> MessageFormatError:
    with pytest.raises(MessageFormatError) as caught:
        from_dict(data, dialect="agentscope2")
    return caught.value


def write_refusal(msg: Msg) -> MessageFormatError:
    with pytest.raises(MessageFormatError) as caught:
        to_dict(msg, dialect="agentscope2")
    return caught.value


def test_enough_fixtures() -> None:
    assert len(NAMES) >= 6


@pytest.mark.parametrize("name", NAMES)
def test_detected_as_agentscope2(name: str) -> None:
    assert detect_dialect(load(name)) == "agentscope2"


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_is_exact(name: str) -> None:
    data = load(name)
    msg = from_dict(data)
    assert msg == from_dict(data, dialect="agentscope2")
    assert_same(to_dict(msg, dialect="agentscope2"), data)
    assert_same(to_dict(Msg.FromString(msg.SerializeToString()), dialect="agentscope2"), data)


@pytest.mark.parametrize("name", NAMES)
def test_envelope(name: str) -> None:
    data = load(name)
    msg = from_dict(data)
    assert (msg.id, msg.name) == (data["id"], data["name"])
    # `created_at` is the timestamp, verbatim.
    assert msg.timestamp == data["created_at"]
    assert msg.HasField("metadata_json") is bool(data["metadata"])
    assert msg.HasField("usage") is (data["usage"] is not None)
    assert msg.HasField("finished_at") is (data["finished_at"] is not None)
    assert msg.HasField("structured_output_json") is (data["structured_output"] is not None)
    assert msg.HasField("error") is (data["error"] is not None)
    # Every key 2.x writes has a typed place: nothing is left over.
    assert not msg.extra_json


@pytest.mark.parametrize("name", NAMES)
def test_agentscope_form_is_stable(name: str) -> None:
    """The 1.x form reads back (in the 1.x dialect) to the same blocks and dict."""
    msg = read(name)
    one_x = to_dict(msg)
    assert list(one_x) == ["id", "name", "role", "content", "metadata", "timestamp"]
    again = from_dict(one_x, dialect="agentscope")
    assert list(again.blocks.items) == list(msg.blocks.items)
    assert_same(to_dict(again), one_x)


def test_user_text() -> None:
    msg = read("user_text")
    assert msg.role == Role.ROLE_USER
    assert get_text_content(msg) == "What's the weather in Paris?"
    (text,) = get_content_blocks(msg, "text")
    data = load("user_text")["content"][0]
    assert (text.id, text.created_at) == (data["id"], data["created_at"])
    assert data["finished_at"] is None
    assert not text.HasField("finished_at")
    assert not text.extra_json


def test_system_prompt() -> None:
    msg = read("system_prompt")
    assert msg.role == Role.ROLE_SYSTEM
    assert get_text_content(msg) == "You are a helpful assistant."


def test_user_multimodal_data_blocks() -> None:
    msg = read("user_multimodal")
    kinds = [b.WhichOneof("block") for b in msg.blocks.items]
    # Images, audio and video are where every reader finds them; a PDF is data.
    assert kinds == ["text", "image", "audio", "video", "data"]
    image = msg.blocks.items[1].image
    assert image.source.url == "https://example.com/images/cat.png"
    assert image.source.media_type == "image/png"
    assert image.name == "cat.png"
    audio = msg.blocks.items[2].audio
    assert audio.source.media_type == "audio/wav"
    assert audio.source.data.startswith(b"RIFF")
    pdf = msg.blocks.items[4].data
    assert pdf.source.media_type == "application/pdf"
    assert has_content_blocks(msg, ["image", "audio", "video", "data"])


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
    }
    # 1.x key order for base64 sources (2.x writes `data` first).
    assert list(blocks[2]["source"]) == ["type", "media_type", "data"]
    assert blocks[4]["type"] == "data"


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
    # The input text exactly as 2.x held it.
    assert first.raw_input == load("assistant_tool_calls")["content"][2]["input"]
    assert first.state == ToolCallState.TOOL_CALL_STATE_PENDING
    assert not first.suggested_rules
    assert first.created_at == "2026-05-30T14:00:09.942561"
    assert not first.HasField("finished_at")
    # Partial (streaming) arguments: no object yet, the raw text is kept.
    assert loads(second.input_json) == {}
    assert second.raw_input == '{"command": "ls -la'
    (rule,) = second.suggested_rules
    assert rule.tool_name == "Bash"
    assert rule.behavior in set(PermissionBehavior.values()) - {0}
    # Usage: `cache_input_tokens` is the cache read count.
    assert msg.usage.input_tokens == 1200
    assert msg.usage.output_tokens == 85
    assert msg.usage.cache_read_input_tokens == 1024
    assert msg.usage.cache_creation_input_tokens == 0
    assert not msg.usage.HasField("time_seconds")


def test_assistant_tool_calls_agentscope_form() -> None:
    blocks = to_dict(read("assistant_tool_calls"))["content"]
    assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use", "tool_use"]
    assert list(blocks[0]) == ["type", "thinking", "id", "created_at", "signature"]
    assert list(blocks[2])[:5] == ["type", "id", "name", "input", "raw_input"]


def test_assistant_tool_results() -> None:
    msg = read("assistant_tool_results")
    assert msg.role == Role.ROLE_ASSISTANT
    text_result, media_result, denied = get_content_blocks(msg, "tool_result")
    assert text_result.text == "Sunny, 21°C"
    assert text_result.state == ToolResultState.TOOL_RESULT_STATE_SUCCESS
    assert loads(text_result.metadata_json) == {}
    kinds = [b.WhichOneof("block") for b in media_result.blocks.items]
    assert kinds == ["text", "image"]
    assert media_result.blocks.items[1].image.source.data.startswith(PNG)
    assert loads(media_result.metadata_json) == {"elapsed_ms": 412}
    assert denied.state == ToolResultState.TOOL_RESULT_STATE_DENIED
    assert get_text_content(msg) is None


def test_assistant_structured_output_and_hint() -> None:
    msg = read("assistant_structured_output")
    (hint,) = get_content_blocks(msg, "hint")
    assert hint.text == "Keep the answer under 50 words."
    assert msg.finished_reason == FinishedReason.FINISHED_REASON_COMPLETED
    assert loads(msg.structured_output_json) == {"city": "Paris", "temp_c": 21.5, "ok": True}
    assert get_text_content(msg) == "Done."


def test_assistant_error() -> None:
    msg = read("assistant_error")
    assert msg.finished_reason == FinishedReason.FINISHED_REASON_ERROR
    assert msg.error.type == ErrorType.ERROR_TYPE_RATE_LIMIT
    assert msg.error.message == "429 Too Many Requests"
    assert get_text_content(msg) == ""


def test_tool_call_input_is_the_raw_string() -> None:
    data = load("assistant_tool_calls")
    # A number JSON cannot hold as a float, invalid JSON, a list: the text is
    # kept exactly; the 1.x `input` is {} when it is no object the schema holds.
    for text in ('{"n": 1e400}', '{"a": 1, "a": 2}', "[1, 2]", "", "not json"):
        data["content"][2]["input"] = text
        msg = from_dict(data)
        call = get_content_blocks(msg, "tool_use")[0]
        assert call.raw_input == text
        assert loads(call.input_json) == {}
        assert_same(to_dict(msg, dialect="agentscope2"), data)
    # 2.x refuses an object: its input is the text the model streamed.
    data["content"][2]["input"] = {"city": "Paris"}
    assert refusal(data).path == "content[2].input"


def test_non_canonical_base64_is_kept_as_given() -> None:
    data = load("user_multimodal")
    for text in ("UklGR", "UklG\nRg==", "!!not base64!!"):
        data["content"][2]["source"]["data"] = text
        msg = from_dict(data)
        assert msg.blocks.items[2].audio.source.base64_text == text
        assert_same(to_dict(msg, dialect="agentscope2"), data)


def test_thinking_extras_in_their_order() -> None:
    data = load("assistant_tool_calls")
    thinking = data["content"][0]
    thinking.pop("signature")
    thinking.update(
        {"reasoning_item_raw": {"id": "rs_1"}, "redacted_thinking_data": "abc", "x": [1]}
    )
    thinking["reasoning_item_id"] = "rs_1"
    msg = from_dict(data)
    block = get_content_blocks(msg, "thinking")[0]
    assert (block.redacted_data, block.reasoning_id) == ("abc", "rs_1")
    assert_same(to_dict(msg, dialect="agentscope2"), data)
    # A key named like the typed field stays what it was.
    thinking["redacted_data"] = "other"
    assert_same(to_dict(from_dict(data), dialect="agentscope2"), data)


def test_unknown_keys_are_kept_but_not_written() -> None:
    data = load("user_text")
    with_extras = {**data, "timestamp_x": 1, "content": [{**data["content"][0], "cache": 1}]}
    msg = from_dict(with_extras, dialect="agentscope2")
    assert loads(msg.extra_json) == {"timestamp_x": 1}
    # 2.x drops them when it validates: so does its dump.
    assert_same(to_dict(msg, dialect="agentscope2"), data)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"role": "tool"}, "role"),
        ({"role": "User"}, "role"),
        ({"content": "hi"}, "content"),
        ({"content": None}, "content"),
        ({"content": [3]}, "content[0]"),
        ({"usage": {"input_tokens": 1.5, "output_tokens": 1}}, "usage.input_tokens"),
        ({"usage": {"input_tokens": 1}}, "usage.output_tokens"),
        ({"metadata": []}, "metadata"),
        ({"metadata": None}, "metadata"),
        ({"created_at": 3}, "created_at"),
        ({"finished_reason": "COMPLETED"}, "finished_reason"),
        ({"error": {"type": "rate_limit"}}, "error.message"),
        ({"content": [{"type": "tool_call", "name": "f", "input": "{}"}]}, "content[0].id"),
        ({"content": [{"type": "image", "source": {}}]}, "content[0].type"),
        ({"content": [{"type": "thinking", "thinking": "x"}]}, "content[0].type"),
        (
            {"content": [{"type": "data", "source": {"type": "base64", "media_type": "a/b"}}]},
            "content[0].source.data",
        ),
        (
            {"content": [{"type": "data", "source": {"type": "url", "url": "https://a.b/c"}}]},
            "content[0].source.media_type",
        ),
    ],
)
def test_refusals_name_the_path(change: dict[str, Any], path: str) -> None:
    error = refusal({**load("user_text"), **change})
    assert error.path == path
    assert error.reason.startswith("AgentScope 2.x refuses this: ")


def test_missing_ids_and_times_are_generated() -> None:
    data = load("user_text")
    del data["id"], data["created_at"], data["content"][0]["id"]
    msg = from_dict(data, dialect="agentscope2")
    assert len(msg.id) == 32
    assert msg.timestamp
    assert len(msg.blocks.items[0].text.id) == 32


# --- Writing messages of the other dialects as 2.x ---------------------------


def one_x(role: str, *blocks: Any, **fields: Any) -> Msg:
    return new_msg(
        "agent", list(blocks), role, id="m1", timestamp="2026-01-01 00:00:00.000", **fields
    )


def test_string_content_and_derived_ids() -> None:
    msg = new_msg("user", "Hi", "user", id="m1", timestamp="2026-01-01 00:00:00.000")
    out = to_dict(msg, dialect="agentscope2")
    (text,) = out["content"]
    assert list(text) == ["type", "text", "id", "created_at", "finished_at"]
    assert text["created_at"] == "2026-01-01 00:00:00.000"
    # Derived from the message id and the block's place: the same every time.
    assert len(text["id"]) == 32
    assert to_dict(msg, dialect="agentscope2") == out
    assert list(out) == [
        "name",
        "content",
        "role",
        "id",
        "metadata",
        "created_at",
        "usage",
        "finished_at",
        "finished_reason",
        "structured_output",
        "error",
    ]
    # Reading it back keeps the derived ids: it is a 2.x message now.
    assert_same(to_dict(from_dict(out), dialect="agentscope2"), out)


def test_tool_use_becomes_tool_call() -> None:
    msg = one_x(
        "assistant",
        new_tool_use_block("c1", "get_weather", {"city": "Zürich", "n": 2**70}),
        new_tool_use_block("c2", "f", {}, raw_input='{"a": 1'),
    )
    first, second = to_dict(msg, dialect="agentscope2")["content"]
    assert first["input"] == '{"city": "Zürich", "n": 1180591620717411303424}'
    assert (first["state"], first["suggested_rules"]) == ("pending", [])
    # The raw text the model produced wins: it is what 2.x keeps.
    assert second["input"] == '{"a": 1'


def test_tool_results_of_1x_and_java_are_assistant_messages() -> None:
    for role in ("system", "user", "tool"):
        msg = one_x(role, new_tool_result_block("c1", "f", None))
        out = to_dict(msg, dialect="agentscope2")
        assert out["role"] == "assistant"
        (result,) = out["content"]
        assert (result["output"], result["state"], result["metadata"]) == ("", "running", {})


def test_media_become_data_blocks() -> None:
    msg = one_x(
        "user",
        new_image_block("https://Example.com/cat.PNG?x=1"),
        new_image_block(data=PNG, media_type="image/png"),
        new_data_block(data=b"%PDF-1.7", media_type="application/pdf", name="r.pdf"),
    )
    url, inline, pdf = to_dict(msg, dialect="agentscope2")["content"]
    # The media type follows from the extension; the URL as 2.x normalizes it.
    assert url["source"]["media_type"] == "image/png"
    assert [b["type"] for b in (url, inline, pdf)] == ["data", "data", "data"]
    assert list(inline["source"]) == ["type", "data", "media_type"]
    assert pdf["name"] == "r.pdf"
    unknown = one_x("user", new_image_block("https://example.com/picture"))
    assert write_refusal(unknown).path == "content[0].source.media_type"


def test_hint_blocks() -> None:
    msg = one_x("assistant", new_hint_block("be brief", source="system"))
    (hint,) = to_dict(msg, dialect="agentscope2")["content"]
    assert hint["hint"] == "be brief"
    assert hint["source"] == "system"
    # 2.x stamps a hint finished when it is made.
    assert hint["finished_at"] == hint["created_at"]


def test_what_2x_cannot_hold_is_refused() -> None:
    cases = [
        (one_x("user", new_thinking_block("hmm")), "content[0].type"),
        (one_x("user", new_tool_use_block("c", "f", {})), "content[0].type"),
        (one_x("system", new_text_block("x"), new_hint_block("h")), "content[1].type"),
        (new_msg("a", "x", "user", id="m"), None),
    ]
    for msg, path in cases[:3]:
        error = write_refusal(msg)
        assert error.path == path
        assert error.reason.startswith("AgentScope 2.x refuses this: ")
    no_id = cases[3][0]
    no_id.ClearField("id")
    assert write_refusal(no_id).path == "id"
    opaque = from_dict(
        {
            "id": "1",
            "name": "a",
            "role": "assistant",
            "content": [{"type": "reasoning"}],
            "metadata": {},
            "timestamp": "t",
        },
        dialect="agentscope",
    )
    assert write_refusal(opaque).path == "content[0].type"


def test_envelope_fields_written() -> None:
    msg = one_x("assistant", new_text_block("x"))
    msg.finished_at = "2026-01-01T00:00:01"
    msg.finished_reason = FinishedReason.FINISHED_REASON_ERROR
    msg.error.type = ErrorType.ERROR_TYPE_UNSPECIFIED
    msg.error.message = "boom"
    msg.structured_output_json = '{"b":1,"a":[0.1,-0.0]}'
    msg.usage.input_tokens = 3
    out = to_dict(msg, dialect="agentscope2")
    assert out["finished_reason"] == "error"
    assert out["error"] == {"type": "unknown", "message": "boom"}
    assert list(out["structured_output"]) == ["b", "a"]
    assert out["usage"] == {
        "input_tokens": 3,
        "output_tokens": 0,
        "cache_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


# --- Generated 2.x dumps round-trip exactly ------------------------------------


_S = st.text(max_size=8)
_OPT = st.none() | _S
_ID = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _S,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_S, inner, max_size=3),
    max_leaves=6,
)
_B64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode()) | _S


def _times(finished: Any = _OPT) -> dict[str, Any]:
    return {"created_at": _S, "finished_at": finished}


def _block(kind: str, fields: dict[str, Any], finished: Any = _OPT) -> Any:
    return st.fixed_dictionaries({"type": st.just(kind), **fields, **_times(finished)})


_SOURCE = st.fixed_dictionaries(
    {
        "type": st.just("base64"),
        "data": _B64,
        "media_type": st.sampled_from(
            ["image/png", "application/pdf", "audio/wav", "text/plain; charset=utf-8"]
        ),
    }
) | st.fixed_dictionaries(
    {
        "type": st.just("url"),
        "url": st.sampled_from(["https://example.com/a.png", "file:///tmp/r.pdf", "x-y:z"]),
        "media_type": st.sampled_from(["video/mp4", "application/pdf"]),
    }
)
_TEXT = _block("text", {"text": _S, "id": _ID})
_DATA = st.fixed_dictionaries(
    {"type": st.just("data"), "id": _ID, "source": _SOURCE, "name": _OPT, **_times()}
)
_PARTS = _S | st.lists(_TEXT | _DATA, max_size=3)
_RULE = st.fixed_dictionaries(
    {
        "tool_name": _S,
        "rule_content": _OPT,
        "behavior": st.sampled_from(["allow", "deny", "ask", "passthrough"]),
        "source": _S,
    }
)
_THINKING = _block("thinking", {"thinking": _S, "id": _ID}).flatmap(
    lambda b: st.dictionaries(
        st.sampled_from(["signature", "redacted_thinking_data", "reasoning_item_id", "x"]),
        _JSON,
        max_size=3,
    ).map(lambda extra: {**b, **extra})
)
_BLOCKS = {
    "user": _TEXT | _DATA,
    "system": _TEXT,
    "assistant": _TEXT
    | _DATA
    | _THINKING
    | _block("hint", {"hint": _PARTS, "id": _ID, "source": _OPT})
    | _block(
        "tool_call",
        {
            "id": _S,
            "name": _S,
            "input": _S,
            "state": st.sampled_from(["pending", "asking", "allowed", "submitted", "finished"]),
            "suggested_rules": st.lists(_RULE, max_size=2),
        },
    )
    | _block(
        "tool_result",
        {
            "id": _S,
            "name": _S,
            "output": _PARTS,
            "state": st.sampled_from(["running", "success", "error", "interrupted", "denied"]),
            "metadata": st.dictionaries(_S, _JSON, max_size=3),
        },
    ),
}
_COUNT = st.integers(min_value=0, max_value=2**62)


@st.composite
def _dumps(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "system"]))
    return {
        "name": draw(_S),
        "content": draw(st.lists(_BLOCKS[role], max_size=4)),
        "role": role,
        "id": draw(_ID),
        "metadata": draw(st.dictionaries(_S, _JSON, max_size=3)),
        "created_at": draw(_S),
        "usage": draw(
            st.none()
            | st.fixed_dictionaries(
                dict.fromkeys(
                    (
                        "input_tokens",
                        "output_tokens",
                        "cache_input_tokens",
                        "cache_creation_input_tokens",
                    ),
                    _COUNT,
                )
            )
        ),
        "finished_at": draw(_OPT),
        "finished_reason": draw(
            st.none() | st.sampled_from(["completed", "interrupted", "exceed_max_iters", "error"])
        ),
        "structured_output": draw(st.none() | st.dictionaries(_S, _JSON, max_size=3)),
        "error": draw(
            st.none()
            | st.fixed_dictionaries(
                {"type": st.sampled_from(["unknown", "rate_limit", "setup"]), "message": _S}
            )
        ),
    }


@settings(max_examples=300, deadline=None)
@given(_dumps())
def test_generated_dumps_round_trip_exactly(dump: dict[str, Any]) -> None:
    msg = from_dict(dump, dialect="agentscope2")
    assert to_dict(msg, dialect="agentscope2") == dump
    assert to_dict(Msg.FromString(msg.SerializeToString()), dialect="agentscope2") == dump


def test_an_unset_hint_is_refused_naming_it() -> None:
    """Found by the agent fuzz target: a hint block with neither text nor
    blocks reached 2.x's writer as null (a TypeError, not a refusal)."""
    from agentscope_proto import to_dict as _to_dict
    from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
        ContentBlock,
        ContentBlocks,
        HintBlock,
    )
    from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg as PbMsg
    from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Role as PbRole
    from agentscope_proto.errors import MessageFormatError as _Refused

    blocks = ContentBlocks(items=[ContentBlock(hint=HintBlock())])
    msg = PbMsg(
        id="m", timestamp="2026-01-01 00:00:00.000", name="u", role=PbRole.ROLE_USER, blocks=blocks
    )
    with pytest.raises(_Refused) as info:
        _to_dict(msg, dialect="agentscope2")
    assert info.value.path == "content[0].hint"
