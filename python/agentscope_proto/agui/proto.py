"""AG-UI's protobuf encoding of a run's events (docs/agui.md).

`RunStream` makes ag-ui-protocol's events; `frame` turns one into the
`Event` of agentscope/agui/v1/events.proto (AG-UI's wire format, as its
TypeScript SDK's `@ag-ui/proto` 1.0.0 reads it) preceded by its length as a
4-byte big-endian unsigned integer. The event's JSON form with its Python
names (`model_dump`) is the schema's field names, so one generic walk over
the descriptors converts every event: the `Event` field is the event's type
in lower case, the fields every event has go to `base_event`, and a
`RUN_FINISHED` outcome object becomes the outcome string and lists AG-UI's
schema has in its place. `read_frames` and `event_json` are the way back, to
the JSON form AG-UI's decoder yields.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableSequence
from typing import Any, Final

from ag_ui.core import BaseEvent, EventType
from google.protobuf import json_format, struct_pb2
from google.protobuf.message import DecodeError, Message

from .._generated.agentscope.agui.v1 import events_pb2 as pb
from ..errors import MessageFormatError

__all__ = ["MEDIA_TYPE", "event_json", "frame", "read_frames", "to_message"]

MEDIA_TYPE: Final = "application/vnd.ag-ui.event+proto"

# The `Event` fields, by name: the event types that have a protobuf form.
_ARMS: Final = frozenset(f.name for f in pb.Event.DESCRIPTOR.oneofs_by_name["event"].fields)
_BASE: Final = ("timestamp", "raw_event", "metadata")
_TYPE_PREFIX: Final = "EVENT_TYPE_"  # our enum's prefix (buf's naming); AG-UI's numbers
_LENGTH_BYTES: Final = 4


def frame(event: BaseEvent) -> bytes:
    """One event as it goes on the wire: its length, then its `Event`."""
    body = to_message(event).SerializeToString()
    return len(body).to_bytes(_LENGTH_BYTES, "big") + body


def to_message(event: BaseEvent) -> pb.Event:
    """One ag-ui-protocol event as its `Event`; an event or field AG-UI's
    protobuf encoding (as this schema has it) cannot carry raises
    `MessageFormatError` naming it."""
    kind = str(event.type.value)
    if kind.lower() not in _ARMS:
        raise MessageFormatError("type", f"{kind} has no protobuf form in this server's schema")
    fields = _dumped(event)
    fields.pop("type")
    base = {name: fields.pop(name) for name in _BASE if name in fields}
    fields["base_event"] = {"type": _TYPE_PREFIX + kind, **base}
    if isinstance(fields.get("outcome"), dict):
        fields.update(_flat_outcome(fields.pop("outcome")))
    arm = kind.lower()
    if base.keys() <= {"timestamp"} and not fields.keys() & _JSON_FIELDS[arm]:
        try:
            # upb's constructor fills nested messages from dicts, in C; what it
            # refuses (an unknown field, a wrong value) the walk names.
            arguments: dict[str, Any] = {arm: fields}
            return pb.Event(**arguments)
        except (ValueError, TypeError):
            pass
    message = pb.Event()
    _fill(getattr(message, arm), fields, arm)
    return message


def _has_json_values(message: Any, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a message type holds a JSON value (`Value`, `Struct`) at any
    depth: the constructor would take a null one as unset, the walk sets it."""
    if message.full_name.startswith("google.protobuf."):
        return True
    return any(
        field.message_type is not None
        and field.message_type.full_name not in seen
        and _has_json_values(field.message_type, seen | {message.full_name})
        for field in message.fields
    )


# Per event, the fields that may hold JSON values (the base event's aside: its
# JSON values are checked by name, `to_message`): an event without any of them
# set is built by upb's constructor.
def _json_fields(message: Any) -> frozenset[str]:
    return frozenset(
        field.name
        for field in message.fields
        if field.name != "base_event"
        and field.message_type is not None
        and _has_json_values(field.message_type)
    )


_JSON_FIELDS: Final = {
    arm.name: _json_fields(arm.message_type)
    for arm in pb.Event.DESCRIPTOR.oneofs_by_name["event"].fields
}


def _dumped(event: BaseEvent) -> dict[str, Any]:
    """The event's fields as its JSON dump has them: read straight from the
    model when each is a plain value, or an optional one unset (which the
    dump leaves out): most events, ids and text, in a tenth of the dump's
    time. Else dumped (a nested model, a JSON value, a required null)."""
    if event.__pydantic_extra__:
        return event.model_dump(mode="json")
    declared = type(event).model_fields
    fields = {}
    for name, value in event.__dict__.items():
        if value is None and not declared[name].is_required():
            continue
        if type(value) not in _PLAIN_VALUES:
            return event.model_dump(mode="json")
        fields[name] = value
    return fields


# What a field's value may be to be taken as its JSON dump would be (the
# event's `type`, an enum, is set aside by `to_message`).
_PLAIN_VALUES: Final = frozenset({str, int, float, bool, EventType})


def _flat_outcome(outcome: dict[str, Any]) -> dict[str, Any]:
    """AG-UI's outcome object in its protobuf form: the `type` as the string
    `outcome`, its lists (interrupts, pending tool calls) beside it."""
    flat = dict(outcome)
    flat["outcome"] = flat.pop("type", "")
    return flat


def _fill(message: Message, fields: Any, path: str) -> None:
    if not isinstance(fields, dict):
        raise MessageFormatError(path, f"an object expected, not {type(fields).__name__}")
    for name, value in fields.items():
        field = message.DESCRIPTOR.fields_by_name.get(name)
        if field is None:
            reason = f"AG-UI's protobuf {message.DESCRIPTOR.name} has no such field here"
            raise MessageFormatError(f"{path}.{name}", reason)
        kind = field.message_type.full_name if field.message_type is not None else None
        try:
            _set(message, name, kind, value, f"{path}.{name}")
        except MessageFormatError:
            raise
        except (TypeError, ValueError, AttributeError, OverflowError) as exc:  # a wrong value
            raise MessageFormatError(f"{path}.{name}", str(exc)) from exc


def _set(message: Message, name: str, kind: str | None, value: Any, path: str) -> None:
    """Set field `name` (of message type `kind`, None for a scalar) to `value`."""
    target = getattr(message, name)
    if kind == "google.protobuf.Value":
        target.CopyFrom(_json_value(value))
    elif kind == "google.protobuf.Struct":
        target.update(value)
    elif isinstance(target, MutableSequence):  # repeated (descriptors' flag differs by version)
        _extend(target, kind, value, path)
    elif kind is not None:
        _fill(target, value, path)
    else:
        setattr(message, name, value)


def _extend(target: Any, kind: str | None, value: Any, path: str) -> None:
    if not isinstance(value, list):
        raise MessageFormatError(path, f"a list expected, not {type(value).__name__}")
    if kind is None:
        target.extend(value)
        return
    for index, item in enumerate(value):
        _fill(target.add(), item, f"{path}[{index}]")


def _json_value(value: Any) -> struct_pb2.Value:
    """Any JSON value (null included: a set Value, as AG-UI's encoder writes it)."""
    holder = struct_pb2.ListValue()
    holder.append(value)
    return holder.values[0]


def read_frames(data: bytes) -> Iterator[pb.Event]:
    """The events of a response body: length-prefixed `Event`s, whole."""
    offset = 0
    while offset < len(data):
        end = offset + _LENGTH_BYTES
        if end > len(data):
            raise MessageFormatError(f"frame at byte {offset}", "a length cut short")
        size = int.from_bytes(data[offset:end], "big")
        if end + size > len(data):
            reason = f"{size} bytes announced, fewer sent"
            raise MessageFormatError(f"frame at byte {offset}", reason)
        try:
            yield pb.Event.FromString(data[end : end + size])
        except DecodeError as exc:
            raise MessageFormatError(f"frame at byte {offset}", f"not an Event: {exc}") from exc
        offset = end + size


def event_json(message: pb.Event) -> dict[str, Any]:
    """An `Event` as AG-UI's JSON form of the event (camelCase, unset fields
    left out), the way AG-UI's TypeScript decoder reads it."""
    arm = message.WhichOneof("event")
    if arm is None:
        raise MessageFormatError("event", "no event set (a kind this schema does not know?)")
    body = json_format.MessageToDict(
        getattr(message, arm), always_print_fields_with_no_presence=True
    )
    base = body.pop("baseEvent", None)
    if base is None:  # AG-UI's decoder refuses it too: the base event carries the type
        raise MessageFormatError(f"{arm}.base_event", "missing")
    if base["type"] != _TYPE_PREFIX + arm.upper():
        raise MessageFormatError(f"{arm}.base_event.type", f"{base['type']} in a {arm} event")
    if "timestamp" in base:
        base["timestamp"] = int(base["timestamp"])  # int64 is a string in protobuf's JSON
    out = {"type": arm.upper(), **{k: v for k, v in base.items() if k != "type"}, **body}
    if "outcome" in out:
        _outcome_object(out)
    return out


def _outcome_object(event: dict[str, Any]) -> None:
    """The outcome string and its lists back as AG-UI's outcome object
    (none when the string is empty: AG-UI's success)."""
    kind = event.pop("outcome")
    lists = {key: event.pop(key) for key in ("interrupts", "pendingToolCallIds")}
    if kind:
        event["outcome"] = {"type": kind, **{key: v for key, v in lists.items() if v}}
