"""`parse()` and `StreamParser` beyond AgentScope parity: errors, finish reasons, results."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto import (
    ParsedResponse,
    ParseError,
    ProviderError,
    StreamParser,
    get_text_content,
    parse,
)
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.providers import PROVIDERS

from conftest import default_options, load_golden

ERROR_BODIES: dict[str, dict[str, Any]] = {
    "openai": {"error": {"message": "Rate limit", "type": "rate_limit_exceeded", "code": None}},
    "deepseek": {"error": {"message": "Insufficient Balance", "type": "unknown_error"}},
    "openai_responses": {"error": {"message": "bad model", "type": "invalid_request_error"}},
    "anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    "gemini": {
        "error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}
    },
    "dashscope": {
        "status_code": 400,
        "request_id": "r1",
        "code": "InvalidParameter",
        "message": "bad",
    },
    "ollama": {"error": "model 'qwen9' not found"},
    "moonshot": {
        "error": {"message": "Invalid Authentication", "type": "invalid_authentication_error"}
    },
    "xai": {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}},
    "volcengine": {
        "error": {
            "code": "InvalidEndpointOrModel.NotFound",
            "message": "not found",
            "type": "NotFound",
        }
    },
    "zhipu": {"error": {"code": "1261", "message": "Prompt too long"}},
    "minimax": {"base_resp": {"status_code": 1004, "status_msg": "authorization failed"}},
}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_error_bodies_raise_provider_error(provider: str) -> None:
    with pytest.raises(ProviderError) as caught:
        parse(provider, ERROR_BODIES[provider])
    assert caught.value.provider == provider
    assert caught.value.message


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_error_events_in_streams_raise_provider_error(provider: str) -> None:
    with pytest.raises(ProviderError):
        StreamParser(provider).feed(ERROR_BODIES[provider])


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("response", [b"{", b"[1, 2]", b'"text"', b"\xff\xfe", b"null"])
def test_malformed_responses_raise_parse_error(provider: str, response: bytes) -> None:
    with pytest.raises(ParseError):
        parse(provider, response)


def _first_plain(provider: str) -> dict[str, Any]:
    return next(
        c
        for c in load_golden(f"parsers/{provider}.json")["cases"]
        if not c["stream"] and "error" not in c["expected"] and default_options(c)
    )


@pytest.mark.parametrize(
    "provider", sorted(p for p in PROVIDERS if "agentscope" in PROVIDERS[p].variants)
)
def test_result_as_msg_and_proto(provider: str) -> None:
    case = _first_plain(provider)
    result = parse(provider, case["response"])
    msg = result.msg
    assert msg.role == 2  # ROLE_ASSISTANT
    assert len(msg.blocks.items) == len(result.content)
    if result.response_id:
        assert msg.invocation_id == result.response_id
    proto = result.to_proto()
    assert isinstance(proto, pb.ParseResult)
    assert proto.response_id == result.response_id
    if result.usage is not None:
        assert proto.usage.input_tokens == result.usage["input_tokens"]


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("stop", pb.FINISH_REASON_STOP),
        ("end_turn", pb.FINISH_REASON_STOP),
        ("length", pb.FINISH_REASON_LENGTH),
        ("MAX_TOKENS", pb.FINISH_REASON_LENGTH),
        ("tool_calls", pb.FINISH_REASON_TOOL_CALLS),
        ("tool_use", pb.FINISH_REASON_TOOL_CALLS),
        ("SAFETY", pb.FINISH_REASON_CONTENT_FILTER),
        ("pause_turn", pb.FINISH_REASON_OTHER),
        ("", pb.FINISH_REASON_UNSPECIFIED),
    ],
)
def test_finish_reasons_are_normalised(raw: str, normalised: int) -> None:
    assert ParsedResponse(content=[], raw_finish_reason=raw).finish_reason == normalised


def test_providers_report_their_finish_reason() -> None:
    response = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi"},
                "finish_reason": "length",
            }
        ],
    }
    result = parse("openai", response)
    assert result.raw_finish_reason == "length"
    assert result.finish_reason == pb.FINISH_REASON_LENGTH
    assert get_text_content(result.msg) == "Hi"


def test_stream_snapshots_share_one_message_id() -> None:
    parser = StreamParser("openai")
    ids = set()
    for piece in ("Hel", "lo"):
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
        }
        snapshot = parser.feed(chunk)
        if snapshot is not None:
            ids.add(snapshot.msg.id)
    ids.add(parser.finish().msg.id)
    assert len(ids) == 1
