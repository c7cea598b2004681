"""DashScope (native MultiModalConversation): what is DashScope's own in both
directions. Parity with AgentScope 1.0.21 as a whole is the golden tests'
(test_format_golden.py, test_parse_golden.py); these pin the quirks a reader
of dashscope.py should not have to rediscover, and provider fidelity."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import ParseError, ProviderError, UnsupportedMediaError
from agentscope_proto.formatting import format

from fidelity_helpers import call, msg, result

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def _texts(*texts: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text} for text in texts]


def test_all_text_content_is_one_string_and_empty_text_stays_a_list() -> None:
    body = format(
        "dashscope",
        [msg("Friday", "assistant", _texts("a", "", "b")), msg("user", "user", "")],
    )
    assert body["messages"] == [
        {"role": "assistant", "content": "a\nb"},
        {"role": "user", "content": [{"text": ""}]},
    ]


def test_media_are_bare_key_items_and_a_call_keeps_empty_content() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    msgs = [
        msg("user", "user", [*_texts("Look"), image]),
        msg("Friday", "assistant", [call("c1")]),
        result("c1", "Sunny"),
    ]
    messages = format("dashscope", msgs)["messages"]
    assert messages[0]["content"] == [{"text": "Look"}, {"image": f"data:image/png;base64,{PNG}"}]
    # DashScope refuses a missing or null content: a call alone keeps [].
    assert messages[1]["content"] == []
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Sunny",
        "name": "get_weather",
    }


@pytest.mark.parametrize("choice", ["required", "any"])
def test_a_forced_tool_choice_is_downgraded_to_auto(choice: str) -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    body = format("dashscope", [msg("user", "user", "Hi")], tools=tools, tool_choice=choice)
    assert body["tool_choice"] == "auto"


def test_a_stream_asks_for_incremental_output() -> None:
    body = format("dashscope", [msg("user", "user", "Hi")], request={"stream": True})
    assert body["stream"] is True
    assert body["incremental_output"] is True


def test_an_error_status_or_a_bare_error_body_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match=r"InvalidParameter.*bad"):
        parse("dashscope", {"status_code": 400, "code": "InvalidParameter", "message": "bad"})
    with pytest.raises(ProviderError, match=r"Throttling.*slow"):
        parse("dashscope", {"code": "Throttling", "message": "slow"})


def test_reasoning_is_read_from_streams_only_and_null_finish_reasons_are_ignored() -> None:
    message = {"role": "assistant", "content": [{"text": "Hi"}], "reasoning_content": "Plan."}
    complete = {"status_code": 200, "output": {"choices": [{"message": message}]}}
    assert parse("dashscope", complete).content == [{"type": "text", "text": "Hi"}]
    parser = StreamParser("dashscope")
    chunks = [
        ({"role": "assistant", "content": "", "reasoning_content": "Plan."}, "null"),
        ({"role": "assistant", "content": "Hi"}, "stop"),
    ]
    for delta, finish in chunks:
        snapshot = parser.feed(
            {"output": {"choices": [{"message": delta, "finish_reason": finish}]}}
        )
        assert snapshot is not None
    assert snapshot.raw_finish_reason == "stop"
    assert parser.finish().content == [
        {"type": "thinking", "thinking": "Plan."},
        {"type": "text", "text": "Hi"},
    ]


# -- provider fidelity -------------------------------------------------------------------


def test_a_message_without_content_is_dropped_with_a_warning() -> None:
    """A multi-agent system message without text is `content: null`, which the
    API refuses: provider fidelity drops it (AgentScope sends it)."""
    image = {"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}
    msgs = [msg("system", "system", [image]), msg("u", "user", "hi")]
    parity = format("dashscope", msgs, multi_agent=True)
    assert parity["messages"][0] == {"role": "system", "content": None}
    body = format("dashscope", msgs, multi_agent=True, fidelity="provider")
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert [(w.path, w.block_type) for w in body.warnings] == [("messages[0]", "system")]


def test_documents_are_refused_naming_the_provider() -> None:
    pdf = {
        "type": "data",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    }
    with pytest.raises(UnsupportedMediaError, match="dashscope cannot take application/pdf"):
        format("dashscope", [msg("u", "user", [pdf])], fidelity="provider")


def _text_format(text: str, finish: str = "stop") -> dict[str, Any]:
    # `result_format="text"`: the text and finish reason on `output`, no choices.
    return {
        "status_code": 200,
        "request_id": "req-1",
        "output": {"text": text, "finish_reason": finish, "choices": None},
        "usage": {"input_tokens": 8, "output_tokens": 3},
    }


def test_a_text_format_response_is_read_in_provider_fidelity_only() -> None:
    response = _text_format("Hangzhou.")
    with pytest.raises(ParseError, match=r"output\.choices"):
        parse("dashscope", response)  # AgentScope asks for "message" and fails on it
    result = parse("dashscope", response, fidelity="provider")
    assert result.content == [{"type": "text", "text": "Hangzhou."}]
    assert (result.raw_finish_reason, result.response_id) == ("stop", "req-1")
    assert result.usage is not None
    assert result.usage.output_tokens == 3
    # Without the null `choices` the SDK writes, as the HTTP body has it.
    del response["output"]["choices"]
    assert parse("dashscope", response, fidelity="provider").content == result.content


def test_a_text_format_stream_is_read_in_provider_fidelity() -> None:
    parser = StreamParser("dashscope", fidelity="provider")
    for piece, finish in (("Hang", "null"), ("zhou.", "stop")):
        parser.feed(_text_format(piece, finish))
    final = parser.finish()
    assert final.content == [{"type": "text", "text": "Hangzhou."}]
    assert final.raw_finish_reason == "stop"


def test_a_complete_responses_reasoning_is_kept_in_provider_fidelity() -> None:
    message = {"role": "assistant", "content": [{"text": "Hi"}], "reasoning_content": "Plan."}
    complete = {"status_code": 200, "output": {"choices": [{"message": message}]}}
    assert parse("dashscope", complete, fidelity="provider").content == [
        {"type": "thinking", "thinking": "Plan."},
        {"type": "text", "text": "Hi"},
    ]
