"""Bad input to the in-process API: every failure is one of the package's errors.

`from_dict`, `format`, `parse` and `StreamParser` get wrong JSON types at every
field of real data, missing keys, unknown kinds and enum values, invalid UTF-8,
base64 and JSON constants, duplicate keys, huge and deeply nested input. None of
it may raise anything but an `AgentScopeProtoError` subclass (the server turns
those into statuses with details; anything else would be INTERNAL). Bugs still
open in modules this suite does not own are `xfail(strict=True)`, see
`adversarial_inputs.KNOWN_BUGS`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    Msg,
    OpaqueBlock,
    Role,
    TextBlock,
)
from agentscope_proto.dialects import from_dict, from_json, to_dict
from agentscope_proto.formatting import format
from agentscope_proto.message._codec import wrap
from agentscope_proto.parsing import StreamParser, parse

from adversarial_inputs import (
    GOLDEN,
    GOLDEN_PROVIDERS,
    ODD,
    PROVIDERS,
    golden,
    known_bug,
    msg_with,
    mutations,
    odd_blocks,
    typed_or_none,
)


@pytest.fixture(autouse=True)
def _quiet_format_warnings(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    # Thousands of dropped-block and repair warnings are expected here.
    with caplog.at_level(logging.CRITICAL, logger="agentscope_proto"):
        yield


def _stray(calls: Iterator[tuple[str, Callable[[], Any]]]) -> tuple[list[str], list[str]]:
    """Run each labelled call: (unexpected stray exceptions, known bugs hit)."""
    strays, known = [], []
    for label, call in calls:
        exc = typed_or_none(call)
        if exc is None:
            continue
        (known if known_bug(exc) else strays).append(f"{label}: {exc!r}"[:300])
    return strays, known


def _cases(provider: str, stream: bool, count: int) -> list[dict[str, Any]]:
    cases = [c for c in golden("parsers", provider) if c["stream"] is stream]
    # The richest cases first: they have the most fields to break.
    cases.sort(key=lambda c: -len(json.dumps(c["chunks"] if stream else c["response"])))
    return cases[:count]


# -- parse and StreamParser: wrong types at every field ------------------------


@pytest.mark.parametrize("provider", GOLDEN_PROVIDERS)
def test_parse_wrong_types_anywhere_raise_typed_errors(provider: str) -> None:
    def calls() -> Iterator[tuple[str, Callable[[], Any]]]:
        for case in _cases(provider, stream=False, count=2):
            for label, response in mutations(case["response"]):
                yield f"{case['name']} {label}", lambda r=response: parse(provider, r)

    strays, _known = _stray(calls())
    assert not strays, "\n".join(strays[:20])


@pytest.mark.parametrize("provider", GOLDEN_PROVIDERS)
def test_stream_events_with_wrong_types_raise_typed_errors(provider: str) -> None:
    (case,) = _cases(provider, stream=True, count=1)
    chunks = case["chunks"]

    def run(position: int, event: Any) -> None:
        parser = StreamParser(provider)
        for index, chunk in enumerate(chunks):
            parser.feed(event if index == position else chunk)
        parser.finish()

    def calls() -> Iterator[tuple[str, Callable[[], Any]]]:
        for position in range(min(len(chunks), 4)):
            for label, event in mutations(chunks[position], ODD[:6]):
                yield f"chunk[{position}] {label}", lambda p=position, e=event: run(p, e)

    strays, _known = _stray(calls())
    assert not strays, "\n".join(strays[:20])


# Each known bug, shown by the smallest input that hits it.
_RESPONSES_ITEM = {"id": "resp_1", "output": [{"type": [], "id": "x"}], "status": "completed"}
_ADDED_ITEM = {
    "type": "response.output_item.added",
    "item": {"type": "function_call", "id": [], "call_id": "c", "name": "f"},
}
_DEEP_ARGS = '{"a":' * 600 + "1" + "}" * 600


def _openai_tool_chunk(arguments: str) -> dict[str, Any]:
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f"}}
    call["function"]["arguments"] = arguments  # type: ignore[index]
    return {"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}


def _feed_all(provider: str, events: list[Any]) -> None:
    parser = StreamParser(provider)
    for event in events:
        parser.feed(event)
    parser.finish()


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: parse("openai_responses", _RESPONSES_ITEM), id="output-item-type"),
        pytest.param(
            lambda: _feed_all("openai_responses", [_ADDED_ITEM]),
            id="stream-item-id",
        ),
        pytest.param(
            lambda: _feed_all(
                "openai_responses",
                [{"type": "response.function_call_arguments.delta", "item_id": {}, "delta": "x"}],
            ),
            id="stream-item_id",
        ),
    ],
)  # fmt: skip
def test_openai_responses_non_string_ids_are_typed_errors(call: Callable[[], Any]) -> None:
    assert typed_or_none(call) is None


@pytest.mark.parametrize("depth", [600, 10_000])
def test_deep_streamed_tool_arguments_are_typed_errors(depth: int) -> None:
    arguments = '{"a":' * depth + "1" + "}" * depth
    assert typed_or_none(lambda: _feed_all("openai", [_openai_tool_chunk(arguments)])) is None


@pytest.mark.parametrize("tools", [[1], ["ab"], [None]])
def test_format_tools_that_are_not_mappings_are_typed_errors(tools: list[Any]) -> None:
    msg = {"name": "u", "role": "user", "content": "x"}
    assert typed_or_none(lambda: format("openai", [msg], tools=tools)) is None


def test_deep_tool_arguments_in_a_whole_response_are_repaired_away() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": _DEEP_ARGS}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    response = {"id": "x", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    assert typed_or_none(lambda: parse("openai", json.dumps(response))) is None


# -- encodings and JSON edge cases ----------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"id": "\xff"}', "invalid UTF-8"),
        (b"\xef\xbb\xbf{}", "invalid JSON"),  # a BOM is not JSON
        (b'{"id": NaN}', "NaN is not valid JSON"),
        (b'{"id": Infinity}', "Infinity is not valid JSON"),
        (b'{"id": -Infinity}', "-Infinity is not valid JSON"),
        (b'{"id": "a", "id": "b"}', "duplicate key 'id'"),
        (b'{"id": "\\ud83e"}', "lone surrogate"),
        (b"[" * 10_000 + b"]" * 10_000, "nested deeper than 128 levels"),
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nested deeper than 128 levels"),
        (b"", "invalid JSON"),
        (b"\x00\x01\x02", "invalid JSON"),
    ],
)
def test_bad_json_bytes_are_parse_errors(provider: str, payload: bytes, reason: str) -> None:
    with pytest.raises(errors.ParseError, match=reason):
        parse(provider, payload)
    with pytest.raises(errors.ParseError, match=reason):
        StreamParser(provider).feed(payload)
    if payload:  # an empty event is no event in a raw body
        framed = payload + b"\n" if provider == "ollama" else b"data: " + payload + b"\n\n"
        with pytest.raises(errors.ParseError, match=reason):
            StreamParser(provider).feed_bytes(framed)


def test_message_json_edge_cases_are_message_format_errors() -> None:
    for text, reason in [
        (b'{"name": "\xff"}', "invalid UTF-8"),
        (b'{"name": "u", "role": "user", "content": NaN}', "NaN"),
        (b'{"name": "u", "name": "v", "role": "user", "content": ""}', "duplicate key 'name'"),
        (b'{"name": "\\udc00", "role": "user", "content": ""}', "lone surrogate"),
        (b"[" * 5000 + b"]" * 5000, "nested deeper"),
    ]:
        with pytest.raises(errors.MessageFormatError, match=reason):
            from_json(text)
    base = {"name": "u", "role": "user", "content": "x"}
    for metadata, reason in [
        ({"x": float("nan")}, "not JSON-serializable"),
        ({"x": float("inf")}, "not JSON-serializable"),
        ({"x": {1, 2}}, "not JSON-serializable"),
        ({"x": "\ud83e"}, "lone surrogate"),
    ]:
        with pytest.raises(errors.MessageFormatError, match=reason):
            from_dict({**base, "metadata": metadata})
    with pytest.raises(errors.MessageFormatError, match="lone surrogate"):
        from_dict({**base, "name": "\ud83e"})


def test_base64_text_that_is_not_canonical_is_kept_as_given() -> None:
    # AgentScope (1.x and 2.x) keeps a source's `data` string unchecked.
    for data in ["####", "QUJD=", "QUJ", "A" * 5 + "\n", "QUJD\x00"]:
        block = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": data},
        }
        msg = from_dict({"name": "u", "role": "user", "content": [block]})
        assert msg.blocks.items[0].image.source.base64_text == data
        assert to_dict(msg)["content"] == [block]
    block["source"]["data"] = 7
    with pytest.raises(errors.MessageFormatError, match=r"content\[0\]\.source\.data"):
        from_dict({"name": "u", "role": "user", "content": [block]})


# -- from_dict: wrong types everywhere, unknown kinds, size and depth ---------------


def test_from_dict_wrong_types_anywhere_raise_typed_errors() -> None:
    with (GOLDEN / "messages.json").open(encoding="utf-8") as file:
        samples = [case["input"] for case in json.load(file)["cases"]]
    # The largest messages carry every block kind.
    samples.sort(key=lambda m: -len(json.dumps(m)))

    def calls() -> Iterator[tuple[str, Callable[[], Any]]]:
        for sample in samples[:4]:
            for label, data in mutations(sample, ODD[:9]):

                def roundtrip(d: Any = data) -> None:
                    msg = from_dict(d)
                    from_dict(to_dict(msg))

                yield label, roundtrip

    strays, known = _stray(calls())
    assert not strays + known, "\n".join((strays + known)[:20])


def test_unknown_block_kinds_are_kept_and_formatted_or_dropped() -> None:
    # An old server meeting a block kind from a newer AgentScope must not crash.
    content = [{"type": "text", "text": "hi"}, {"type": "hologram", "x": 1}]
    data = {"name": "u", "role": "user", "content": content}
    msg = from_dict(data)
    assert msg.blocks.items[1].opaque.block_type == "hologram"
    assert to_dict(msg)["content"][1] == {"type": "hologram", "x": 1}
    for provider in PROVIDERS:
        for multi_agent in (False, True):
            assert (
                typed_or_none(lambda p=provider, m=multi_agent: format(p, [msg], multi_agent=m))
                is None
            )


@pytest.mark.parametrize("role", [0, 5, 99, -1])
def test_unknown_enum_values_are_typed_errors(role: int) -> None:
    msg = Msg(name="u", role=role, text="x")  # type: ignore[arg-type]
    for provider in PROVIDERS:
        with pytest.raises(errors.AgentScopeProtoError):
            format(provider, [msg])
    with pytest.raises(errors.MessageFormatError):
        to_dict(msg)


@pytest.mark.parametrize("dialect", ["agentscope", "java", None])
def test_tool_result_nested_ten_thousand_deep_is_refused(dialect: Any) -> None:
    output: Any = "x"
    for _ in range(10_000):
        output = [{"type": "tool_result", "id": "1", "name": "f", "output": output}]
    data = {"name": "u", "role": "USER" if dialect == "java" else "user", "content": output}
    with pytest.raises(errors.MessageFormatError) as caught:
        from_dict(data, dialect=dialect)
    assert "nested too deeply" in caught.value.reason or "not allowed" in caught.value.reason


def test_deep_json_values_in_messages_are_refused_clearly() -> None:
    deep: Any = 1
    for _ in range(200):
        deep = {"a": deep}
    call = {"type": "tool_use", "id": "1", "name": "f", "input": deep}
    for data in [
        {"name": "u", "role": "user", "content": "x", "metadata": deep},
        {"name": "u", "role": "assistant", "content": [call]},
        {"name": "u", "role": "user", "content": [{"type": "text", "text": "x", "extra": deep}]},
    ]:
        with pytest.raises(errors.MessageFormatError, match="nested deeper than 128 levels"):
            from_dict(data)


def test_a_hundred_thousand_blocks_convert_and_format() -> None:
    data = {"name": "u", "role": "user", "content": [{"type": "text", "text": "a"}] * 100_000}
    msg = from_dict(data)
    assert len(msg.blocks.items) == 100_000
    assert len(to_dict(msg)["content"]) == 100_000
    body = format("anthropic", [msg])
    assert len(body["messages"][0]["content"]) == 100_000


# -- format: blocks no reader would build ------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hand_built_blocks_format_or_raise_typed_errors(provider: str) -> None:
    def calls() -> Iterator[tuple[str, Callable[[], Any]]]:
        for label, block in odd_blocks():
            for role in (Role.ROLE_USER, Role.ROLE_ASSISTANT, Role.ROLE_SYSTEM, Role.ROLE_TOOL):
                msg = msg_with(block, role)
                for options in ({}, {"multi_agent": True}, {"agent_name": "v"}):
                    yield (
                        f"{label} role={role} {options}",
                        lambda m=msg, o=options: format(provider, [m], **o),  # type: ignore[misc]
                    )

    strays, known = _stray(calls())
    assert not strays + known, "\n".join((strays + known)[:20])


def test_hand_built_blocks_fail_with_the_field_named() -> None:
    cases = [
        (TextBlock(text="a", extra_json='{"text": 5}'), "extra_json", "repeats the modelled key"),
        (TextBlock(text="a", key_order=["nope"]), "key_order", "is not an order"),
        (
            OpaqueBlock(block_type="text", block_json='{"type":"text"}'),
            "block_json",
            "cannot be opaque",
        ),
        (OpaqueBlock(block_type="x", block_json="[1]"), "block_json", "expected a JSON object"),
    ]
    for block, path, reason in cases:
        with pytest.raises(errors.MessageFormatError) as caught:
            format("openai", [msg_with(wrap(block))])
        assert caught.value.path.endswith(path), caught.value.path
        assert reason in caught.value.reason, caught.value.reason
        assert caught.value.path.startswith("messages[0]")


# -- streams: many chunks, no final chunk, garbage bytes --------------------------


def test_a_hundred_thousand_chunks_parse_in_linear_time() -> None:
    parser = StreamParser("openai")
    chunk = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]}).encode()
    for _ in range(100_000):
        parser.feed(chunk)
    assert parser.finish().content == [{"type": "text", "text": "x" * 100_000}]


@pytest.mark.parametrize("provider", GOLDEN_PROVIDERS)
def test_streams_without_their_final_event_still_finish(provider: str) -> None:
    (case,) = _cases(provider, stream=True, count=1)
    for keep in (0, 1, len(case["chunks"]) // 2, len(case["chunks"]) - 1):
        parser = StreamParser(provider)
        for chunk in case["chunks"][:keep]:
            parser.feed(chunk)
        assert typed_or_none(parser.finish) is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_garbage_bytes_in_a_raw_stream_are_parse_errors(provider: str) -> None:
    import random

    rng = random.Random(8)
    bodies = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(60)]
    bodies += [b"data: {}\n\n" * 3, b"data: [DONE]\n\n", b"\n\n\n", b"data:\n\n", b"event: x\n\n"]
    bodies += [b"data: " + b"{" * 100_000 + b"\n\n", b"{" * 100_000 + b"\n"]
    for body in bodies:
        parser = StreamParser(provider)

        def run(p: StreamParser = parser, b: bytes = body) -> None:
            p.feed_bytes(b)
            p.finish()

        exc = typed_or_none(run)
        assert exc is None, f"{body[:60]!r}: {exc!r}"
