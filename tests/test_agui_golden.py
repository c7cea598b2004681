"""The AG-UI mapping against AgentScope 2.0.11's own `AGUIProtocolMiddleware`.

`tests/golden/agentscope2/agui.json` holds what the real middleware writes
for the recorded 2.x event streams of `events.json`
(`tests/golden/make_agentscope2_agui.py`). Ours must write the same events,
or a superset, and where it differs only as `DIFFERENCES` says (the same
rows as docs/agui.md's "Where it differs from AgentScope 2.x" table):
each of the middleware's events is found in ours, in order, with every key
and value it has (ours may add keys: an outcome, a role), after the
documented rewrite; ours may add only the documented extra events.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto.agui import HANDLERS, RunStream
from agentscope_proto.events import event_from_dict

GOLDEN = Path(__file__).resolve().parent / "golden" / "agentscope2"
SOURCE = json.loads((GOLDEN / "events.json").read_text(encoding="utf-8"))
THEIRS = json.loads((GOLDEN / "agui.json").read_text(encoding="utf-8"))
THREAD = "session-1"


def _dump(event: Any) -> dict[str, Any]:
    return dict(event.model_dump(mode="json", by_alias=True))


def _custom_own(theirs: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": event["name"], "value": event["value"]}


def _named(theirs: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    return {**theirs, "name": event["type"].lower()}


def _error(theirs: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    error = event.get("error") or {}
    written = {"type": "RUN_ERROR", "message": error.get("message", "")}
    return written | ({"code": error["type"]} if "type" in error else {})


def _own_message(theirs: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in theirs.items() if key != "message"}


def _cancelled(theirs: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    return {**theirs, "outcome": {"type": "cancelled"}}


# (the 2.x event type, a test of the event) -> how ours differs from the middleware.
Rewrite = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
DIFFERENCES: dict[str, tuple[Callable[[dict[str, Any]], bool], Rewrite]] = {
    # A 2.x CustomEvent is AG-UI's CUSTOM with its own name and value, not `unknown`.
    "CUSTOM": (lambda event: True, _custom_own),
    # Events the middleware has no branch for are named after their kind, not `unknown`.
    "HINT_BLOCK": (lambda event: True, _named),
    "USER_INTERRUPT": (lambda event: True, _named),
    # A reply that ended in an error is a RUN_ERROR (with 2.x's error type as the code).
    "REPLY_END": (lambda event: event.get("finished_reason") == "error", _error),
}
# Ours says these in its own words (same type and code).
OWN_WORDS = {"REPLY_END": lambda event: event.get("finished_reason") == "exceed_max_iters"}
# An interrupted reply's RUN_FINISHED says so (AG-UI's `cancelled` outcome).
CANCELLED = {"REPLY_END": lambda event: event.get("finished_reason") == "interrupted"}
# Events ours adds: AG-UI's reasoning span around each reasoning message, and
# a run's own start and end where the stream has no reply_start/reply_end
# (a turn after an answer, a turn that asks, a reply that failed).
EXTRA = {"REASONING_START", "REASONING_END", "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"}


def expected(theirs: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """The middleware's event as ours writes it (the documented rewrite)."""
    kind = event["type"]
    if kind in DIFFERENCES and DIFFERENCES[kind][0](event):
        return DIFFERENCES[kind][1](theirs, event)
    if kind in OWN_WORDS and OWN_WORDS[kind](event):
        return _own_message(theirs, event)
    if kind in CANCELLED and CANCELLED[kind](event):
        return _cancelled(theirs, event)
    return theirs


def contains(ours: dict[str, Any], want: dict[str, Any]) -> bool:
    return all(key in ours and ours[key] == value for key, value in want.items())


def assert_superset(ours: list[dict[str, Any]], wanted: list[dict[str, Any]]) -> None:
    """Every wanted event in ours, in order; ours' others only of the extra kinds."""
    position = 0
    for want in wanted:
        while position < len(ours) and not contains(ours[position], want):
            assert ours[position]["type"] in EXTRA, (ours[position], want)
            position += 1
        assert position < len(ours), f"missing {want}"
        position += 1
    assert all(event["type"] in EXTRA for event in ours[position:]), ours[position:]


def test_golden_is_agentscope_2_0_11() -> None:
    assert THEIRS["agentscope"] == SOURCE["agentscope"] == "2.0.11"
    assert [case["name"] for case in THEIRS["events"]] == [
        case["name"] for case in SOURCE["events"]
    ]


@pytest.mark.parametrize(
    ("case", "theirs"),
    list(zip(SOURCE["events"], THEIRS["events"], strict=True)),
    ids=[case["name"] for case in SOURCE["events"]],
)
def test_each_event_as_agentscope(case: dict[str, Any], theirs: dict[str, Any]) -> None:
    event = event_from_dict(case["dump"])
    kind = event.WhichOneof("event")
    assert kind is not None
    ours = [_dump(item) for item in HANDLERS[kind](RunStream(), event)]
    assert theirs["agui"] is not None  # the middleware writes one event for each kind
    assert_superset(ours, [expected(theirs["agui"], case["dump"])])


def _ours_for_turn(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn through `RunStream`, as a server would run it: the events, then the
    final message (or the failure)."""
    answer = next((item["input"] for item in turn if "input" in item), None)
    stream = RunStream(THREAD, answer["reply_id"] if answer else "")
    out = []
    for item in turn:
        if "event" in item:
            out += stream.events(event_from_dict(item["event"]))
        elif "msg" in item:
            out += stream.finish()
        elif "raised" in item:
            out += stream.fail(item["raised"])
    return [_dump(event) for event in out]


REPLY_TURNS = [
    (reply["name"], index, turn, theirs)
    for reply, record in zip(SOURCE["replies"], THEIRS["replies"], strict=True)
    for index, (turn, theirs) in enumerate(zip(reply["turns"], record["turns"], strict=True))
]


@pytest.mark.parametrize(
    ("turn", "theirs"),
    [(turn, theirs) for _, _, turn, theirs in REPLY_TURNS],
    ids=[f"{name}-{index}" for name, index, _, _ in REPLY_TURNS],
)
def test_replies_as_agentscope(turn: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    ours = _ours_for_turn(turn)
    wanted = [expected(entry["agui"], turn[entry["item"]]["event"]) for entry in theirs]
    assert_superset(ours, wanted)
    # A run, whatever the middleware wrote: one start first, one end last.
    types = [event["type"] for event in ours]
    assert types[0] == "RUN_STARTED"
    assert types[-1] in ("RUN_FINISHED", "RUN_ERROR")
    assert types.count("RUN_STARTED") == 1
    assert types.count("RUN_FINISHED") + types.count("RUN_ERROR") == 1


def test_a_turn_that_asks_finishes_with_its_interrupts() -> None:
    asked = [
        (name, ours[-1])
        for name, _, turn, _ in REPLY_TURNS
        if any("REQUIRE_" in item.get("event", {}).get("type", "") for item in turn)
        for ours in [_ours_for_turn(turn)]
    ]
    assert {name for name, _ in asked} == {"confirmed", "denied", "interrupted", "three_tools"}
    for _, last in asked:
        assert last["type"] == "RUN_FINISHED"
        assert last["outcome"]["type"] == "interrupt"
        assert all(item["toolCallId"] for item in last["outcome"]["interrupts"])
