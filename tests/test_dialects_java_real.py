"""The Java dialect against JSON written and read by the real agentscope-java.

The data (agentscope-java's own message classes and Jackson codec, run on a
JDK) sits outside the repository, in `../shared/agentscope-java/` beside the
checkout: `messages.jsonl` (messages Java wrote) and `acceptance.jsonl`
(inputs, and whether Java's reader refused them or what it wrote back). It is
read at run time; without it these tests skip.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import MessageFormatError, Msg, from_dict, to_dict, to_json
from agentscope_proto.dialects import detect_dialect

from strict import assert_same

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "agentscope-java"
# A clone has no such tree: the skip line says what it is, not where.
MISSING = (
    "needs JSON written by the real agentscope-java: reference data kept outside the "
    "repository (CI provides it)"
)
needs_data = pytest.mark.skipif(not (DATA / "messages.jsonl").is_file(), reason=MISSING)


def _lines(name: str) -> list[dict[str, Any]]:
    path = DATA / name
    if not path.is_file():
        return []
    # Some strings hold U+2028: iterate over "\n"-separated lines, not splitlines().
    with path.open(encoding="utf-8", newline="\n") as file:
        return [json.loads(line) for line in file if line.strip()]


MESSAGES = _lines("messages.jsonl")
ACCEPTANCE = _lines("acceptance.jsonl")


# Hash maps in Java (message, thinking, tool-use and tool-result metadata,
# tool-use input): Java writes them in hash order whatever order it read, so
# their key order carries no meaning and they are compared as maps.
def _unordered(value: Any) -> Any:
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def _normalize_block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    out = dict(block)
    if "metadata" in out:
        out["metadata"] = _unordered(out["metadata"])
    if out.get("type") == "tool_use" and "input" in out:
        out["input"] = _unordered(out["input"])
    if out.get("type") == "tool_result" and isinstance(out.get("output"), list):
        out["output"] = [_normalize_block(b) for b in out["output"]]
    return out


def normalize(msg: dict[str, Any]) -> dict[str, Any]:
    out = dict(msg)
    out["metadata"] = _unordered(out.get("metadata"))
    if isinstance(out.get("content"), list):
        out["content"] = [_normalize_block(b) for b in out["content"]]
    return out


def assert_same_java(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """Equal with types and key order, except in Java's hash-map fields."""
    assert_same(normalize(actual), normalize(expected))


def test_the_data_is_complete() -> None:
    if not MESSAGES:
        pytest.skip(MISSING)
    assert len(MESSAGES) == 73
    assert len(ACCEPTANCE) == 27


@needs_data
@pytest.mark.parametrize("case", MESSAGES, ids=[c["case"] for c in MESSAGES])
def test_java_messages_round_trip_exactly(case: dict[str, Any]) -> None:
    data = case["msg"]
    assert detect_dialect(data) == "java"
    msg = from_dict(data)
    assert msg == from_dict(data, dialect="java")
    assert_same_java(to_dict(msg, dialect="java"), data)
    # Through the wire form and JSON text too.
    again = Msg.FromString(msg.SerializeToString())
    assert_same_java(json.loads(to_json(again, dialect="java")), data)


@needs_data
@pytest.mark.parametrize("case", MESSAGES, ids=[c["case"] for c in MESSAGES])
def test_java_messages_keep_their_order_where_java_has_one(case: dict[str, Any]) -> None:
    """Even the hash maps come back in the order Java wrote them."""
    data = case["msg"]
    assert_same(to_dict(from_dict(data), dialect="java"), data)


@needs_data
@pytest.mark.parametrize("case", ACCEPTANCE, ids=[c["case"] for c in ACCEPTANCE])
def test_java_acceptance_is_reproduced(case: dict[str, Any]) -> None:
    """Java's verdict on each input: refused ones raise on the way to Java,
    accepted ones write back what Java writes back."""
    if not case["accepted"]:
        with pytest.raises(MessageFormatError) as caught:
            to_dict(from_dict(case["input"], dialect="java"), dialect="java")
        assert caught.value.path, caught.value
        return
    written = to_dict(from_dict(case["input"], dialect="java"), dialect="java")
    assert_same_java(written, case["java_writes_back"])
    # What Java writes back reads back the same (as Java; detection is tested
    # on the messages above, and a role-less message needs `dialect="java"`).
    assert_same_java(to_dict(from_dict(written, dialect="java"), dialect="java"), written)


@needs_data
def test_refusals_name_the_java_rule() -> None:
    reasons = {}
    for case in ACCEPTANCE:
        if not case["accepted"]:
            with pytest.raises(MessageFormatError) as caught:
                from_dict(case["input"], dialect="java")
            reasons[case["case"]] = str(caught.value)
    assert reasons["X:content_string"].startswith("content: agentscope-java refuses this")
    assert reasons["X:block_type_uppercase_TEXT"] == (
        "content[0].type: agentscope-java refuses this: unknown block type 'TEXT' "
        "(it knows text, thinking, tool_use, tool_result, image, audio, video, hint, data)"
    )
    assert reasons["X:tool_use_state_uppercase"].startswith("content[0].state: ")
    assert reasons["X:role_lowercase_user"].startswith("role: expected one of 'USER'")


@needs_data
@pytest.mark.parametrize("case", MESSAGES, ids=[c["case"] for c in MESSAGES])
def test_agentscope_form_of_java_messages(case: dict[str, Any]) -> None:
    """The 1.x form of a Java message converts back to the same Java JSON,
    except for what 1.x cannot hold: usage, and a TOOL role on a message that
    holds more than tool results (1.x carries tool results in system messages)."""
    msg = from_dict(case["msg"])
    one_x = to_dict(msg)
    expected = {**case["msg"], "usage": None}
    if case["case"] == "tool_role_text_only":
        expected["role"] = "SYSTEM"
    assert_same_java(to_dict(from_dict(one_x), dialect="java"), expected)
