"""The AgentScope 2.x dialect against the real AgentScope 2.0.11.

tests/golden/agentscope2/ is written by tests/golden/make_agentscope2.py
(`make golden-agentscope2`) from AgentScope's own classes:

- messages.json: dumps of messages built through 2.x's classes. Each reads and
  writes back exactly, also after the protobuf bytes.
- validate.json: dicts fed to 2.x's `Msg.model_validate`. What 2.x refuses is
  refused here; what it accepts reads into the message its dump describes.
  Values 2.x generated (ids, timestamps; their numbers depend on how often
  pydantic's union tried a factory) are compared by shape.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentscope_proto import MessageFormatError, Msg, from_dict, to_dict
from agentscope_proto.dialects import detect_dialect

from conftest import load_golden
from strict import assert_same

MESSAGES = load_golden("agentscope2/messages.json")["cases"]
VALIDATE = load_golden("agentscope2/validate.json")["cases"]


def _beyond_the_schema(case: dict[str, Any]) -> str | None:
    """Why a case 2.x accepts is refused here, if it is one of the two kinds
    docs/dialects.md names: a usage count beyond 64 bits (2.x takes any
    integer; the schema's counts are int64), and a URL whose non-ASCII host
    needs UTS #46 processing (its punycode form, which 2.x's own dumps hold,
    reads fine)."""
    usage = case["input"].get("usage")
    if isinstance(usage, dict) and any(
        abs(int(str(value).strip())) >= 2**63
        for value in usage.values()
        if isinstance(value, int | str) and str(value).strip().lstrip("+-").isdigit()
    ):
        return "does not fit in 64 bits"
    if case["name"] == "url_source/idn":
        return "UTS #46"
    return None


BEYOND = [case for case in VALIDATE if case["accepted"] and _beyond_the_schema(case)]
ACCEPTED = [case for case in VALIDATE if case["accepted"] and not _beyond_the_schema(case)]
REFUSED = [case for case in VALIDATE if not case["accepted"]]
_GENERATED_ID = re.compile(r"^gen-id-\d{4}$")
_GENERATED_TIME = re.compile(r"^2026-01-01T00:00:00\.\d{6}$")
_OUR_ID = re.compile(r"^[0-9a-f]{32}$")
_OUR_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$")


def test_the_corpus_is_large() -> None:
    assert len(MESSAGES) >= 300
    assert len(ACCEPTED) >= 200
    assert len(REFUSED) >= 60


@pytest.mark.parametrize("case", MESSAGES, ids=[c["name"] for c in MESSAGES])
def test_dumps_round_trip_exactly(case: dict[str, Any]) -> None:
    dump = case["dump"]
    msg = from_dict(dump, dialect="agentscope2")
    assert_same(to_dict(msg, dialect="agentscope2"), dump)
    assert_same(to_dict(Msg.FromString(msg.SerializeToString()), dialect="agentscope2"), dump)


@pytest.mark.parametrize("case", MESSAGES, ids=[c["name"] for c in MESSAGES])
def test_dumps_are_detected(case: dict[str, Any]) -> None:
    assert detect_dialect(case["dump"]) == "agentscope2"


def _same_but_generated(actual: Any, expected: Any, path: str = "$") -> None:
    """`actual` equals `expected`, except where 2.x generated a value: there
    `actual` holds one of the same kind (ours are random)."""
    if isinstance(expected, str) and _GENERATED_ID.match(expected):
        assert _OUR_ID.match(str(actual)), (path, actual)
        return
    if isinstance(expected, str) and _GENERATED_TIME.match(expected):
        assert _OUR_TIME.match(str(actual)), (path, actual)
        return
    assert type(actual) is type(expected), (path, actual, expected)
    if isinstance(expected, dict):
        assert list(actual) == list(expected), (path, actual)
        for key, value in expected.items():
            _same_but_generated(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), (path, actual)
        for index, (mine, theirs) in enumerate(zip(actual, expected, strict=True)):
            _same_but_generated(mine, theirs, f"{path}[{index}]")
    else:
        assert actual == expected, (path, actual, expected)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c["name"] for c in ACCEPTED])
def test_what_2x_accepts_reads_as_it_reads(case: dict[str, Any]) -> None:
    msg = from_dict(case["input"], dialect="agentscope2")
    _same_but_generated(to_dict(msg, dialect="agentscope2"), case["dump"])


@pytest.mark.parametrize("case", BEYOND, ids=[c["name"] for c in BEYOND])
def test_what_the_schema_cannot_hold_is_refused_saying_why(case: dict[str, Any]) -> None:
    with pytest.raises(MessageFormatError, match=str(_beyond_the_schema(case))):
        from_dict(case["input"], dialect="agentscope2")


def test_only_those_few_cases_are_beyond_the_schema() -> None:
    assert len(BEYOND) == 9


@pytest.mark.parametrize("case", REFUSED, ids=[c["name"] for c in REFUSED])
def test_what_2x_refuses_is_refused(case: dict[str, Any]) -> None:
    with pytest.raises(MessageFormatError) as caught:
        from_dict(case["input"], dialect="agentscope2")
    assert caught.value.reason.startswith("AgentScope 2.x refuses this: ")
