"""AgentScope 2.x's agent events from and to `AgentEvent` (agentscope_proto.events).

Golden data: every event class built by the real agentscope==2.0.11, and the
events of real replies of a real 2.x agent (tests/golden/agentscope2/events.json,
`make golden-agentscope2`). Each converts to the schema and back to the same
dump, key for key and in 2.x's order. The same holds for generated dumps
(hypothesis); tests/agentscope2/ checks those against the real 2.x too.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from agentscope_proto import MessageFormatError, from_dict, to_dict
from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as pb
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Role
from agentscope_proto.events import EVENT_TYPES, event_from_dict, event_to_dict

from conftest import load_golden
from event_strategies import event_dumps

GOLDEN = load_golden("agentscope2/events.json")
EVENTS = {case["name"]: case["dump"] for case in GOLDEN["events"]}


def _reply_items(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """(name, dump) of every item of `kind` (event, input, msg) in the golden replies."""
    found = []
    for reply in GOLDEN["replies"]:
        for turn_index, turn in enumerate(reply["turns"]):
            for index, item in enumerate(turn):
                if kind in item:
                    found.append((f"{reply['name']}/{turn_index}/{index}", item[kind]))
    return found


REPLY_EVENTS = dict(_reply_items("event") + _reply_items("input"))


def test_the_golden_data_covers_every_event_type() -> None:
    built = {dump["type"] for dump in EVENTS.values()}
    assert built == set(EVENT_TYPES)
    streamed = {dump["type"] for dump in REPLY_EVENTS.values()}
    assert {"REPLY_START", "TEXT_BLOCK_DELTA", "REQUIRE_USER_CONFIRM"} <= streamed
    assert {"REQUIRE_EXTERNAL_EXECUTION", "USER_CONFIRM_RESULT", "TOOL_RESULT_END"} <= streamed


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_built_events_round_trip_exactly(name: str) -> None:
    dump = EVENTS[name]
    event = event_from_dict(dump)
    assert json.dumps(event_to_dict(event)) == json.dumps(dump)  # keys in 2.x's order
    assert pb.AgentEvent.FromString(event.SerializeToString()) == event


def test_the_events_of_real_replies_round_trip_exactly() -> None:
    for name, dump in REPLY_EVENTS.items():
        assert json.dumps(event_to_dict(event_from_dict(dump))) == json.dumps(dump), name


def test_the_final_messages_of_real_replies_round_trip_exactly() -> None:
    for name, dump in _reply_items("msg"):
        assert to_dict(from_dict(dump, dialect="agentscope2"), dialect="agentscope2") == dump, name


def test_a_failed_reply_is_recorded_as_raised() -> None:
    (failed,) = [reply for reply in GOLDEN["replies"] if reply["name"] == "model_fails"]
    assert failed["turns"][0][-1] == {"raised": "InternalServerError"}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(event_dumps())
def test_generated_events_round_trip(dump: dict[str, Any]) -> None:
    event = event_from_dict(dump)
    assert event_to_dict(event) == dump
    assert event_from_dict(event_to_dict(event)) == event


def test_fields_are_typed() -> None:
    event = event_from_dict(EVENTS["require_user_confirm/several"])
    (first, second) = event.require_user_confirm.tool_calls
    assert first.suggested_rules[0].rule_content == ""
    assert not first.suggested_rules[0].HasField("rule_content")
    assert second.created_at
    assert second.finished_at
    delta = event_from_dict(EVENTS["data_block_delta/0"]).data_block_delta
    assert delta.WhichOneof("content") == "data"
    assert delta.data.startswith(b"\x89PNG")
    odd = event_from_dict(EVENTS["data_block_delta/odd_no_padding"]).data_block_delta
    assert odd.base64_text == "aGVsbG8"
    hint = event_from_dict(EVENTS["hint_block/blocks"]).hint_block
    assert [block.WhichOneof("block") for block in hint.blocks.items] == [
        "text",
        "image",
        "data",
        "video",
        "text",
    ]
    start = event_from_dict(EVENTS["reply_start/0"]).reply_start
    assert start.role == Role.ROLE_USER


def test_2x_defaults_fill_missing_keys() -> None:
    event = event_from_dict(
        {"type": "REPLY_START", "session_id": "s", "reply_id": "r", "name": "n"}
    )
    assert len(event.id) == 32
    assert event.created_at
    dump = event_to_dict(event)
    assert dump["role"] == "assistant"
    assert dump["metadata"] == {}
    end = event_to_dict(event_from_dict({"type": "REPLY_END", "session_id": "s", "reply_id": "r"}))
    assert end["finished_reason"] == "completed"
    assert end["error"] is None
    delta = event_to_dict(
        event_from_dict(
            {
                "type": "TOOL_RESULT_DATA_DELTA",
                "reply_id": "r",
                "tool_call_id": "c",
                "media_type": "x/y",
                "url": "u",
            }
        )
    )
    assert len(delta["block_id"]) == 32
    assert delta["data"] is None


def test_unset_enums_take_2x_defaults_and_refuse_where_it_has_none() -> None:
    event = pb.AgentEvent(reply_start=pb.ReplyStartEvent(name="n"))
    assert event_to_dict(event)["role"] == "assistant"
    event = pb.AgentEvent(model_call_end=pb.ModelCallEndEvent())
    assert event_to_dict(event)["finished_reason"] == "completed"
    with pytest.raises(MessageFormatError, match=r"^state: no AgentScope 2.x a tool result"):
        event_to_dict(pb.AgentEvent(tool_result_end=pb.ToolResultEndEvent()))


BAD_INPUTS = [
    ({"type": "NOPE"}, "type", "unknown event type 'NOPE'"),
    ({}, "type", "missing"),
    ({"type": "TEXT_BLOCK_DELTA", "reply_id": "r", "block_id": "b"}, "delta", "missing"),
    (
        {"type": "TEXT_BLOCK_DELTA", "reply_id": "r", "block_id": 7, "delta": ""},
        "block_id",
        "expected a string",
    ),
    (
        {"type": "MODEL_CALL_END", "reply_id": "r", "input_tokens": "5", "output_tokens": 1},
        "input_tokens",
        "expected an integer",
    ),
    (
        {"type": "MODEL_CALL_END", "reply_id": "r", "input_tokens": 2**63, "output_tokens": 1},
        "input_tokens",
        "does not fit in 64 bits",
    ),
    (
        {
            "type": "MODEL_CALL_END",
            "reply_id": "r",
            "input_tokens": 1,
            "output_tokens": 1,
            "finished_reason": "exceed_max_iters",
        },
        "finished_reason",
        "a model call's finished reason",
    ),
    (
        {"type": "REPLY_START", "session_id": "s", "reply_id": "r", "name": "n", "role": "tool"},
        "role",
        "a role is one of",
    ),
    (
        {
            "type": "DATA_BLOCK_DELTA",
            "reply_id": "r",
            "block_id": "b",
            "media_type": "x/y",
            "data": "aGk=",
            "url": "u",
        },
        "data",
        "exactly one of `data` or `url`",
    ),
    (
        {"type": "DATA_BLOCK_DELTA", "reply_id": "r", "block_id": "b", "media_type": "x/y"},
        "data",
        "exactly one of `data` or `url`",
    ),
    (
        {
            "type": "REQUIRE_USER_CONFIRM",
            "reply_id": "r",
            "tool_calls": [{"type": "text", "text": ""}],
        },
        "tool_calls[0].type",
        "unknown block type 'text'",
    ),
    (
        {
            "type": "REQUIRE_USER_CONFIRM",
            "reply_id": "r",
            "tool_calls": [{"id": "c", "name": "f", "input": {}}],
        },
        "tool_calls[0].input",
        "expected a string",
    ),
    (
        {"type": "USER_CONFIRM_RESULT", "reply_id": "r", "confirm_results": [{"confirmed": 1}]},
        "confirm_results[0].confirmed",
        "expected true or false",
    ),
    (
        {
            "type": "USER_CONFIRM_RESULT",
            "reply_id": "r",
            "confirm_results": [
                {
                    "confirmed": True,
                    "tool_call": {"id": "c", "name": "f", "input": ""},
                    "rules": [{"tool_name": "f"}],
                }
            ],
        },
        "confirm_results[0].rules[0].rule_content",
        "missing",
    ),
    (
        {"type": "REPLY_END", "session_id": "s", "reply_id": "r", "error": {"type": "x"}},
        "error.message",
        "missing",
    ),
    ({"type": "CUSTOM", "name": "n", "value": []}, "value", "expected an object"),
    ({"type": "CUSTOM", "name": "n", "metadata": "x"}, "metadata", "expected an object"),
]


@pytest.mark.parametrize(("data", "path", "reason"), BAD_INPUTS)
def test_what_2x_refuses_is_refused_naming_the_path(
    data: dict[str, Any], path: str, reason: str
) -> None:
    with pytest.raises(MessageFormatError) as info:
        event_from_dict(data)
    assert info.value.path == path
    assert reason in info.value.reason


def test_what_2x_cannot_hold_is_not_written() -> None:
    with pytest.raises(MessageFormatError, match="no event set"):
        event_to_dict(pb.AgentEvent(id="x"))
    start = pb.AgentEvent(reply_start=pb.ReplyStartEvent(role=Role.ROLE_TOOL))
    with pytest.raises(MessageFormatError, match=r"^role: "):
        event_to_dict(start)
    event = event_from_dict(copy.deepcopy(EVENTS["require_user_confirm/several"]))
    event.require_user_confirm.tool_calls[0].state = 99  # a newer schema's value
    with pytest.raises(MessageFormatError, match=r"^tool_calls\[0\]\.state"):
        event_to_dict(event)
    with pytest.raises(MessageFormatError, match="set data, base64_text or url"):
        event_to_dict(pb.AgentEvent(data_block_delta=pb.DataBlockDeltaEvent()))
