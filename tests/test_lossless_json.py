"""Free-form JSON (tool input, metadata, extra keys) must survive the wire exactly.

The schema carries it as JSON text; this proves that choice keeps what
`google.protobuf.Struct` loses.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from hypothesis import given, settings

from agentscope_proto import MessageFormatError, ToolUseBlock, _json

from event_strategies import JSON

SAMPLE: dict[str, Any] = {
    "zeta": 1,
    "alpha": 1.0,
    "big": 2**64 + 1,
    "int64_max": 2**63 - 1,
    "negative_big": -(2**70),
    "negative_zero": -0.0,
    "tiny": 5e-324,
    "huge": 1e300,
    "tenth": 0.1,
    "nested": {"b": [1, 2.5, {"y": None, "x": True}], "a": {}},
    "unicode": 'héllo 世界 🤖 \u0000 "quoted"',
    "null": None,
    "empty_list": [],
    "false": False,
}


def _same(a: Any, b: Any) -> bool:
    """Equal with types, key order and the sign of zero taken into account."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def _through_our_schema(value: Any) -> Any:
    block = ToolUseBlock(id="call_1", name="f", input_json=_json.dumps(value))
    return _json.loads(ToolUseBlock.FromString(block.SerializeToString()).input_json)


def _through_struct(value: dict[str, Any]) -> Any:
    struct = struct_pb2.Struct()
    struct.update(value)
    return json_format.MessageToDict(struct_pb2.Struct.FromString(struct.SerializeToString()))


def test_json_text_keeps_every_value_exactly() -> None:
    assert _same(_through_our_schema(SAMPLE), SAMPLE)


@pytest.mark.parametrize("key", sorted(SAMPLE))
def test_json_text_keeps_each_value(key: str) -> None:
    value = {key: SAMPLE[key]}
    assert _same(_through_our_schema(value), value)


def test_struct_would_not_pass() -> None:
    try:
        result = _through_struct(SAMPLE)
    except (ValueError, TypeError):
        return  # Struct cannot even hold it.
    assert not _same(result, SAMPLE)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"n": 1}, "int becomes float"),
        ({"b": 1, "a": 2}, "key order is lost"),
        ({"n": 2**53 + 1}, "big int loses digits"),
        ({"m": [2, {"k": 3}]}, "nested ints become floats"),
    ],
)
def test_struct_loses_each_property(value: dict[str, Any], why: str) -> None:
    assert not _same(_through_struct(value), value), why
    assert _same(_through_our_schema(value), value)


def test_non_finite_numbers_are_rejected_with_the_path() -> None:
    with pytest.raises(MessageFormatError, match=r"content\[0\]\.input"):
        _json.dumps({"x": math.nan}, "content[0].input")
    with pytest.raises(MessageFormatError, match="NaN"):
        _json.loads('{"x": NaN}')


def test_invalid_utf8_is_a_clear_error() -> None:
    with pytest.raises(MessageFormatError, match="invalid UTF-8"):
        _json.loads(b'{"x": "\xff"}', "response_json")


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_stored_text_reads_back_as_the_strict_writers(value: Any) -> None:
    """`dumps_stored` (orjson's spelling where it writes one) reads back as
    `dumps`'s text does: every value, integers past 64 bits included."""
    assert _same(_json.loads(_json.dumps_stored(value)), _json.loads(_json.dumps(value)))


def test_stored_text_refuses_what_the_strict_writer_refuses() -> None:
    deep: Any = []
    for _ in range(_json.MAX_DEPTH):
        deep = [deep]
    for bad in (deep, {"text": "\ud800"}):
        with pytest.raises(MessageFormatError) as strict:
            _json.dumps(bad, "rest_json")
        with pytest.raises(MessageFormatError) as stored:
            _json.dumps_stored(bad, "rest_json")
        assert str(stored.value) == str(strict.value)
    assert _json.loads(_json.dumps_stored(SAMPLE)) == _json.loads(_json.dumps(SAMPLE))
