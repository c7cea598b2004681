"""The server's wire-keyed format cache: message bytes sliced from the request,
turns stored with their JSON, bodies written from it (see FormatterServicer.Format)."""

from __future__ import annotations

import json

import pytest

from agentscope_proto import FormatCache, from_dict
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.cache import EncodedMessage
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.providers import PROVIDERS
from agentscope_proto.service._rpc import field_slices

_MESSAGES = pb.FormatRequest.DESCRIPTOR.fields_by_name["messages"].number


def _conversation() -> list[dict[str, object]]:
    return [
        {"name": "system", "role": "system", "content": "Be brief."},
        {"name": "user", "role": "user", "content": "What is the weather? ünïcödé"},
        {
            "name": "Friday",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "name": "system",
            "role": "system",
            "content": [
                {"type": "tool_result", "id": "c1", "name": "weather", "output": "sunny"},
            ],
        },
        {"name": "Friday", "role": "assistant", "content": [{"type": "text", "text": "Sunny."}]},
    ]


def test_field_slices_are_the_messages_as_encoded() -> None:
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, tools_json="[]", tool_choice="auto")
    request.messages.extend(from_dict(d) for d in _conversation())
    request.options.max_tokens = 300  # a field after the messages
    slices = field_slices(request.SerializeToString(), _MESSAGES)
    assert slices == [m.SerializeToString() for m in request.messages]


@pytest.mark.parametrize("data", [b"\x1a\x05ab", b"\x1a", b"\x0b", b"\x08\x80"])
def test_field_slices_refuse_what_does_not_walk(data: bytes) -> None:
    assert field_slices(data, _MESSAGES) is None


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_wire_keyed_turns_give_the_uncached_body(provider: str) -> None:
    msgs = [from_dict(d) for d in _conversation()]
    wire = [m.SerializeToString() for m in msgs]
    plain = format(provider, msgs)
    cache = FormatCache()
    for _ in range(3):  # cold, then every turn from the cache
        for end in range(1, len(msgs) + 1):
            try:
                expected = format(provider, msgs[:end])
            except Exception as exc:  # the same refusal either way
                with pytest.raises(type(exc)):
                    format(provider, msgs[:end], cache=cache, _wire=wire[:end])
                continue
            body = format(provider, msgs[:end], cache=cache, _wire=wire[:end])
            assert body_to_json(body) == body_to_json(expected)
            assert json.loads(body_to_json(body)) == dict(expected)
            assert list(body.warnings) == list(expected.warnings)
    assert cache.hits
    assert body_to_json(format(provider, msgs, cache=cache, _wire=wire)) == body_to_json(plain)


def test_cached_turns_go_out_as_their_json() -> None:
    msgs = [from_dict(d) for d in _conversation()]
    wire = [m.SerializeToString() for m in msgs]
    cache = FormatCache()
    format("openai", msgs, cache=cache, _wire=wire)
    body = format("openai", msgs, cache=cache, _wire=wire)
    encoded = [m for m in body["messages"] if type(m) is EncodedMessage]
    assert encoded, "the second call replays the stored turns"
    # The stored JSON is what is written, not the dict: proven by a mismatch.
    forged = EncodedMessage({"role": "user"}, b'{"role":"forged"}')
    assert json.loads(body_to_json({"messages": [forged]})) == {"messages": [{"role": "forged"}]}


def test_edited_message_bytes_miss() -> None:
    msgs = [from_dict(d) for d in _conversation()]
    cache = FormatCache()
    wire = [m.SerializeToString() for m in msgs]
    format("anthropic", msgs, cache=cache, _wire=wire)
    msgs[1].text = "Something else entirely"
    wire = [m.SerializeToString() for m in msgs]
    body = format("anthropic", msgs, cache=cache, _wire=wire)
    assert body_to_json(body) == body_to_json(format("anthropic", msgs))
