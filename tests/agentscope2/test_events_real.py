"""Agent events against the real AgentScope 2.x objects: `model_dump` equal
after a round trip through `AgentEvent`, for the golden events and for
generated ones (which the real 2.x validates to themselves first)."""

from __future__ import annotations

import json
import typing
import warnings
from typing import Any

import pytest
from agentscope import event as as_event
from hypothesis import HealthCheck, given, settings

from agentscope_proto.events import event_from_dict, event_to_dict
from agentscope_proto.interop import event_from_agentscope, event_to_agentscope

from event_strategies import event_dumps
from golden_data import GOLDEN

EVENTS = json.loads((GOLDEN / "agentscope2" / "events.json").read_text(encoding="utf-8"))
CLASSES = {cls.model_fields["type"].default: cls for cls in typing.get_args(as_event.AgentEvent)}


def _object(dump: dict[str, Any]) -> Any:
    with warnings.catch_warnings():  # ExceedMaxItersEvent is deprecated, still emitted
        warnings.simplefilter("ignore", DeprecationWarning)
        return CLASSES[dump["type"]].model_validate(dump)


@pytest.mark.parametrize("case", EVENTS["events"], ids=lambda case: case["name"])
def test_real_events_round_trip_with_model_dump_equal(case: dict[str, Any]) -> None:
    original = _object(case["dump"])
    event = event_from_agentscope(original)
    assert event == event_from_dict(case["dump"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        back = event_to_agentscope(event)
    assert type(back) is type(original)
    assert back.model_dump(mode="json") == original.model_dump(mode="json")


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(event_dumps())
def test_generated_events_are_real_dumps_and_round_trip(dump: dict[str, Any]) -> None:
    original = _object(dump)
    assert original.model_dump(mode="json") == dump  # a dump 2.x itself would write
    assert event_to_dict(event_from_agentscope(original)) == dump
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert event_to_agentscope(event_from_dict(dump)).model_dump(mode="json") == dump


def test_anything_else_is_refused() -> None:
    with pytest.raises(TypeError, match=r"agentscope\.event"):
        event_from_agentscope({"type": "REPLY_START"})
