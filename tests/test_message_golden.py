"""Parity of the message helpers with AgentScope 1.0.21 (tests/golden/messages.json)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentscope_proto import (
    Msg,
    from_dict,
    get_content_blocks,
    get_text_content,
    has_content_blocks,
    to_dict,
)
from agentscope_proto.message._codec import block_to_dict

from golden_data import message_golden
from strict import assert_same

GOLDEN = message_golden()
CASES = GOLDEN["cases"]


def _filters(key: str) -> str | list[str] | None:
    if key == "*":
        return None
    return key.split("+") if "+" in key else key


def _check(msg: Msg, case: dict[str, Any]) -> None:
    assert_same(to_dict(msg), case["to_dict"])
    assert (msg.invocation_id if msg.HasField("invocation_id") else None) == case["invocation_id"]
    for separator, expected in case["text"].items():
        assert_same(get_text_content(msg, separator), expected)
    for key, expected in case["blocks"].items():
        blocks = get_content_blocks(msg, _filters(key))
        assert_same([block_to_dict(b) for b in blocks], expected)
    for key, expected in case["has"].items():
        assert has_content_blocks(msg, _filters(key)) is expected


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_agentscope(case: dict[str, Any]) -> None:
    _check(from_dict(case["input"]), case)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_agentscope_after_binary_round_trip(case: dict[str, Any]) -> None:
    wire = from_dict(case["input"]).SerializeToString()
    _check(Msg.FromString(wire), case)


def test_enough_cases() -> None:
    assert len(CASES) >= 200


@pytest.mark.parametrize("case", GOLDEN["generated_fields"], ids=lambda c: c["name"])
def test_generated_id_and_timestamp_look_like_agentscope(case: dict[str, Any]) -> None:
    data = to_dict(from_dict(case["input"]))
    alphabet = set(GOLDEN["shortuuid_alphabet"])
    assert case["id_is_shortuuid"] is (len(data["id"]) == 22 and set(data["id"]) <= alphabet)
    assert case["timestamp_matches_format"] is bool(
        re.fullmatch(GOLDEN["timestamp_regex"], data["timestamp"])
    )
