"""AG-UI's protobuf encoding (agui/proto.py, agentscope/agui/v1/events.proto):
every AG-UI event `RunStream` makes on the recorded 2.x streams
(tests/golden/agentscope2/events.json), framed, read back with the generated
classes and turned into AG-UI's JSON form, is the event's JSON as the
server-sent events carry it (parsed, not compared as text); the schema has an
`Event` field for exactly the event types the server sends; and what the
encoding cannot carry, or bytes that are not frames, get clear errors.
tests/agentscope2/test_agui_server.py checks a real server's bytes against
AG-UI's own TypeScript decoder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import BaseEvent, CustomEvent, StateSnapshotEvent, TextMessageStartEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_proto._generated.agentscope.agui.v1 import events_pb2 as pb
from agentscope_proto.agui import HANDLERS, RunStream, encode
from agentscope_proto.agui.proto import event_json, frame, read_frames, to_message
from agentscope_proto.errors import MessageFormatError
from agentscope_proto.events import event_from_dict

GOLDEN = Path(__file__).resolve().parent / "golden" / "agentscope2" / "events.json"
SOURCE = json.loads(GOLDEN.read_text(encoding="utf-8"))
ARMS = [field.name for field in pb.Event.DESCRIPTOR.oneofs_by_name["event"].fields]


def _turn(turn: list[dict[str, Any]]) -> list[BaseEvent]:
    """A recorded turn through `RunStream`, as the server runs it."""
    answer = next((item["input"] for item in turn if "input" in item), None)
    stream = RunStream("session-1", answer["reply_id"] if answer else "")
    out: list[BaseEvent] = []
    for item in turn:
        if "event" in item:
            out += stream.events(event_from_dict(item["event"]))
        elif "msg" in item:
            out += stream.finish()
        elif "raised" in item:
            out += stream.fail(item["raised"], "INTERNAL")
    return out


def _golden() -> list[BaseEvent]:
    out: list[BaseEvent] = []
    for case in SOURCE["events"]:
        event = event_from_dict(case["dump"])
        out += HANDLERS[event.WhichOneof("event") or ""](RunStream(), event)
    for reply in SOURCE["replies"]:
        for turn in reply["turns"]:
            out += _turn(turn)
    return out


EVENTS = _golden()


def _sse_json(event: BaseEvent) -> Any:
    """The event as the server-sent events carry it, parsed as JavaScript
    parses it: every number a double, as in a protobuf `Value`."""
    return json.loads(encode(event).removeprefix("data: "), parse_int=float)


def test_the_schema_has_exactly_the_events_the_server_sends() -> None:
    assert {event.type.value for event in EVENTS} == {arm.upper() for arm in ARMS}


def test_the_event_type_enum_names_each_event_field() -> None:
    names = {value.name for value in pb.EventType.DESCRIPTOR.values}
    assert names == {f"EVENT_TYPE_{arm.upper()}" for arm in ARMS}


def test_every_event_comes_back_as_its_json() -> None:
    data = b"".join(frame(event) for event in EVENTS)
    back = [event_json(message) for message in read_frames(data)]
    assert back == [_sse_json(event) for event in EVENTS]


def test_a_finished_run_that_asks_keeps_its_interrupts() -> None:
    asked = [e for e in EVENTS if e.type.value == "RUN_FINISHED" and e.outcome is not None]
    kinds = {e.outcome.type for e in asked if e.outcome is not None}
    assert kinds == {"interrupt", "cancelled"}
    for event in asked:
        message = to_message(event).run_finished
        assert message.outcome == event.outcome.type  # type: ignore[union-attr]
        assert event_json(to_message(event)) == _sse_json(event)


def test_a_frame_is_its_length_then_its_event() -> None:
    event = TextMessageStartEvent(message_id="m1", role="assistant")
    data = frame(event)
    assert int.from_bytes(data[:4], "big") == len(data) - 4
    message = pb.Event.FromString(data[4:])
    assert message.WhichOneof("event") == "text_message_start"
    # TEXT_MESSAGE_START is AG-UI's type 0: the base event is there, empty.
    assert message.text_message_start.HasField("base_event")


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**200), 2**200)  # a Value holds a double, as JSON in JavaScript does
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(JSON)
def test_a_custom_value_of_any_json_comes_back(value: Any) -> None:
    event = CustomEvent(name="x", value=value)
    (message,) = read_frames(frame(event))
    assert event_json(message) == _sse_json(event)


def test_an_integer_beyond_doubles_arrives_as_javascript_reads_it_from_json() -> None:
    (message,) = read_frames(frame(CustomEvent(name="x", value={"big": 2**63 - 1})))
    assert event_json(message)["value"] == {"big": float(2**63 - 1)}


def test_an_event_without_a_protobuf_form_is_refused_by_name() -> None:
    with pytest.raises(MessageFormatError, match="STATE_SNAPSHOT has no protobuf form"):
        frame(StateSnapshotEvent(snapshot={}))


def test_a_field_the_schema_leaves_out_is_refused_by_name() -> None:
    with pytest.raises(MessageFormatError, match=r"text_message_start\.name: .*no such field"):
        frame(TextMessageStartEvent(message_id="m1", role="assistant", name="bob"))


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x00\x00", "a length cut short"),
        (b"\x00\x00\x00\x09\x0a", "9 bytes announced"),
        (b"\x00\x00\x00\x02\xff\xff", "not an Event"),
    ],
)
def test_bytes_that_are_not_whole_frames_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(MessageFormatError, match=words):
        list(read_frames(data))


def test_an_event_whose_base_type_disagrees_is_refused() -> None:
    message = pb.Event()
    message.custom.base_event.type = pb.EVENT_TYPE_RUN_ERROR
    with pytest.raises(MessageFormatError, match="EVENT_TYPE_RUN_ERROR in a custom event"):
        event_json(message)
    with pytest.raises(MessageFormatError, match="no event set"):
        event_json(pb.Event())
