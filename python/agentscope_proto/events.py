"""AgentScope 2.x's agent events from and to `AgentEvent`, exactly.

`event_from_dict` reads an event as 2.x's `model_dump(mode="json")` writes it
(or any dict 2.x would validate the same way: a key with a 2.x default may be
missing), `event_to_dict` writes that dump back, key for key and in 2.x's key
order. Pure functions of their input; the real event objects are one
`model_dump`/`model_validate` away (`agentscope_proto.interop`).

The conversion is derived from the schema: the `oneof event` field
`text_block_delta` is 2.x's `type` `TEXT_BLOCK_DELTA`, and each field of an
event message is the 2.x key of the same name (`*_json` without the suffix),
read and written by its type. Blocks go through the 2.x message dialect
(`dialects/agentscope2.py`), so a tool call in an event converts exactly as in
a message. Unset enums take 2.x's default where 2.x has one (`assistant`,
`completed`); unknown keys are ignored, as 2.x's models ignore them.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from . import _json
from ._generated.agentscope.agent.v1 import events_pb2 as pb
from ._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    ErrorType,
    FinishedReason,
    PermissionBehavior,
    PermissionRule,
    Role,
    ToolResultState,
)
from .dialects._common import type_name
from .dialects.agentscope2 import (
    block_from_agentscope2,
    block_to_agentscope2,
    parts_from_agentscope2,
    parts_to_agentscope2,
)
from .errors import MessageFormatError
from .message._codec import new_blocks
from .message._fields import BEHAVIORS, load_object, rule_dicts

__all__ = [
    "ASKING_EVENTS",
    "EVENT_TYPES",
    "event_from_dict",
    "event_reply_id",
    "event_to_dict",
    "event_type",
]

_EVENT = pb.AgentEvent.DESCRIPTOR.oneofs_by_name["event"]
# 2.x's `type` value -> the `AgentEvent.event` field that holds it.
EVENT_TYPES: dict[str, FieldDescriptor] = {field.name.upper(): field for field in _EVENT.fields}


# The events with which an agent's reply asks its caller, and waits (the
# caller's answer goes on with the same reply).
ASKING_EVENTS = frozenset({"require_user_confirm", "require_external_execution"})


def event_reply_id(event: pb.AgentEvent) -> str:
    """The id of the reply the event belongs to ("" for none)."""
    kind = event.WhichOneof("event")
    return str(getattr(getattr(event, kind), "reply_id", "")) if kind is not None else ""


def event_type(event: pb.AgentEvent) -> str:
    """The 2.x `type` of an event (`TEXT_BLOCK_DELTA`); `MessageFormatError` if unset."""
    kind = event.WhichOneof("event")
    if kind is None:
        raise MessageFormatError("event", "no event set (a kind this schema does not know?)")
    return kind.upper()


def _fail(path: str, reason: str) -> MessageFormatError:
    return MessageFormatError(path, f"AgentScope 2.x refuses this: {reason}")


# --- Values ------------------------------------------------------------------


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"expected a string, got {type_name(value)}")
    return value


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, f"expected an integer, got {type_name(value)}")
    if not -(2**63) <= value < 2**63:
        raise MessageFormatError(path, f"{value} does not fit in 64 bits")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, f"expected true or false, got {type_name(value)}")
    return value


def _object(value: Any, path: str) -> str:
    if not isinstance(value, Mapping):
        raise _fail(path, f"expected an object, got {type_name(value)}")
    return _json.dumps(dict(value), path) if value else ""


class _Names:
    """An enum's values under 2.x's names, both ways; `default` is what an
    unset value means (2.x's default), None where 2.x has none."""

    def __init__(self, names: Mapping[str, int], what: str, default: str | None = None) -> None:
        self.numbers = dict(names)
        self.names = {number: name for name, number in names.items()}
        self.what = what
        self.default = default

    def read(self, value: Any, path: str) -> int:
        if not isinstance(value, str) or value not in self.numbers:
            expected = ", ".join(map(repr, self.numbers))
            raise _fail(path, f"{self.what} is one of {expected}, got {value!r}")
        return self.numbers[value]

    def write(self, number: int, path: str) -> str:
        if number == 0 and self.default is not None:
            return self.default
        name = self.names.get(number)
        if name is None:
            raise MessageFormatError(path, f"no AgentScope 2.x {self.what} for the value {number}")
        return name


def _lower(enum: Any, prefix: str, names: tuple[str, ...]) -> dict[str, int]:
    return {name: enum.Value(prefix + name.upper()) for name in names}


_REPLY_REASONS = ("completed", "interrupted", "exceed_max_iters", "error")
_ENUMS: dict[tuple[str, str], _Names] = {
    ("ReplyStartEvent", "role"): _Names(
        _lower(Role, "ROLE_", ("user", "assistant", "system")), "a role", "assistant"
    ),
    ("ReplyEndEvent", "finished_reason"): _Names(
        _lower(FinishedReason, "FINISHED_REASON_", _REPLY_REASONS), "a finished reason", "completed"
    ),
    # A model call ends only so (2.x's model `FinishedReason`).
    ("ModelCallEndEvent", "finished_reason"): _Names(
        _lower(FinishedReason, "FINISHED_REASON_", ("interrupted", "completed")),
        "a model call's finished reason",
        "completed",
    ),
    ("ToolResultEndEvent", "state"): _Names(
        _lower(
            ToolResultState,
            "TOOL_RESULT_STATE_",
            ("running", "success", "error", "interrupted", "denied"),
        ),
        "a tool result state",
    ),
}
_ERROR_TYPES = _Names(
    {
        name.removeprefix("ERROR_TYPE_").lower(): number
        for name, number in ErrorType.items()
        if number
    }
    | {"unknown": ErrorType.ERROR_TYPE_UNSPECIFIED},
    "an error type",
)


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> str:
    return datetime.now().isoformat()


# What a missing key means, where 2.x has a default (keys of optional fields
# and of messages with presence default to None; every other key is required).
_DEFAULTS: dict[tuple[str, str], Callable[[], Any]] = {
    ("ReplyStartEvent", "role"): lambda: "assistant",
    ("ReplyEndEvent", "finished_reason"): lambda: "completed",
    ("ModelCallEndEvent", "cache_input_tokens"): lambda: 0,
    ("ModelCallEndEvent", "cache_creation_input_tokens"): lambda: 0,
    ("ModelCallEndEvent", "finished_reason"): lambda: "completed",
    ("ToolResultDataDeltaEvent", "block_id"): _new_id,
    ("CustomEvent", "value"): dict,
}


# --- Slots: one 2.x key (two for data) per field or oneof ---------------------


class _Context(NamedTuple):
    """What a block written from an event derives its missing id and time from."""

    owner_id: str
    created_at: str


class _Slot(NamedTuple):
    """How one 2.x key (or a pair) maps to the fields of a message."""

    keys: tuple[str, ...]
    # (message, value of each key or _MISSING, path of the first key)
    read: Callable[[Any, tuple[Any, ...], str], None]
    # (message, path, context) -> the keys' values
    write: Callable[[Any, str, _Context], tuple[Any, ...]]
    # Whether a missing key means None (an `optional` field, a message with
    # presence); other defaults are in `_DEFAULTS`.
    nullable: bool = False


_MISSING: Any = object()


def _scalar(field: FieldDescriptor, message: str) -> _Slot:
    name = field.name
    key = name.removesuffix("_json")
    optional = _is_optional(field)
    enum = _ENUMS.get((message, name))

    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        (value,) = values
        if value is None and optional:
            return
        if field.type == FieldDescriptor.TYPE_STRING:
            setattr(target, name, _object(value, path) if key != name else _str(value, path))
        elif field.type == FieldDescriptor.TYPE_INT64:
            setattr(target, name, _int(value, path))
        elif field.type == FieldDescriptor.TYPE_BOOL:
            setattr(target, name, _bool(value, path))
        elif enum is not None:
            setattr(target, name, enum.read(value, path))
        else:  # pragma: no cover - a schema field this table forgot
            raise TypeError(f"{message}.{name}: no reader for its type")

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        if optional and not source.HasField(name):
            return (None,)
        value = getattr(source, name)
        if enum is not None:
            return (enum.write(value, path),)
        if key != name:
            return (load_object(value, path) if value else {},)
        return (value,)

    return _Slot((key,), read, write, optional)


def _is_optional(field: FieldDescriptor) -> bool:
    """Whether a scalar field is proto3 `optional` (its synthetic oneof)."""
    oneof = field.containing_oneof
    return oneof is not None and oneof.name == f"_{field.name}"


def _error_slot() -> _Slot:
    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        (value,) = values
        if value is None:
            return
        if not isinstance(value, Mapping):
            raise _fail(path, f"expected an error object, got {type_name(value)}")
        if "message" not in value:
            raise _fail(f"{path}.message", "missing")
        error = target.error
        error.type = _ERROR_TYPES.read(value.get("type", "unknown"), f"{path}.type")
        error.message = _str(value["message"], f"{path}.message")

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        if not source.HasField("error"):
            return (None,)
        error = source.error
        return ({"type": _ERROR_TYPES.write(error.type, f"{path}.type"), "message": error.message},)

    return _Slot(("error",), read, write, nullable=True)


def _block_list(name: str, kind: str) -> _Slot:
    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        (value,) = values
        if not isinstance(value, list):
            raise _fail(path, f"expected a list, got {type_name(value)}")
        items = getattr(target, name)
        for index, item in enumerate(value):
            block = block_from_agentscope2(item, f"{path}[{index}]", (kind,))
            items.append(getattr(block, block.WhichOneof("block") or ""))

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        return (
            [
                _write_block(kind, item, f"{path}[{index}]", context)
                for index, item in enumerate(getattr(source, name))
            ],
        )

    return _Slot((name,), read, write)


def _write_block(kind: str, item: Message, path: str, context: _Context) -> dict[str, Any]:
    """`item` (a ToolUseBlock or ToolResultBlock) as the 2.x block of `kind`."""
    block = ContentBlock()
    getattr(block, "tool_use" if kind == "tool_call" else kind).CopyFrom(item)
    return block_to_agentscope2(block, path, context.owner_id, context.created_at)


def _tool_call_slot() -> _Slot:
    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        (value,) = values
        block = block_from_agentscope2(value, path, ("tool_call",))
        target.tool_call.CopyFrom(block.tool_use)

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        return (_write_block("tool_call", source.tool_call, path, context),)

    return _Slot(("tool_call",), read, write)


_RULE_KEYS = ("tool_name", "rule_content", "behavior", "source")


def _rule(value: Any, path: str) -> PermissionRule:
    if not isinstance(value, Mapping):
        raise _fail(path, f"expected a permission rule object, got {type_name(value)}")
    for key in _RULE_KEYS:
        if key not in value:
            raise _fail(f"{path}.{key}", "missing")
    rule = PermissionRule(
        tool_name=_str(value["tool_name"], f"{path}.tool_name"),
        source=_str(value["source"], f"{path}.source"),
    )
    behavior = value["behavior"]
    if not isinstance(behavior, str) or behavior not in BEHAVIORS.numbers:
        raise _fail(f"{path}.behavior", f"unknown permission behavior {behavior!r}")
    rule.behavior = PermissionBehavior.ValueType(BEHAVIORS.numbers[behavior])
    if value["rule_content"] is not None:
        rule.rule_content = _str(value["rule_content"], f"{path}.rule_content")
    return rule


def _rules_slot() -> _Slot:
    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        (value,) = values
        if value is None:
            return
        if not isinstance(value, list):
            raise _fail(path, f"expected a list of permission rules, got {type_name(value)}")
        target.rules.SetInParent()
        target.rules.items.extend(_rule(item, f"{path}[{i}]") for i, item in enumerate(value))

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        if not source.HasField("rules"):
            return (None,)
        return (rule_dicts(source.rules.items, path),)

    return _Slot(("rules",), read, write, nullable=True)


def _nested_list(field: FieldDescriptor) -> _Slot:
    """A repeated message of our own (ConfirmResult), slot by slot."""
    name = field.name
    message = _message(field)
    slots = _slots(message)

    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        (value,) = values
        if not isinstance(value, list):
            raise _fail(path, f"expected a list, got {type_name(value)}")
        items = getattr(target, name)
        for index, item in enumerate(value):
            _read_model(items.add(), slots, item, f"{path}[{index}]", message.name)

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        return (
            [
                _write_model(item, slots, f"{path}[{index}]", context)
                for index, item in enumerate(getattr(source, name))
            ],
        )

    return _Slot((name,), read, write)


def _hint_slot() -> _Slot:
    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        (value,) = values
        parts = parts_from_agentscope2(value, path)
        if isinstance(parts, str):
            target.text = parts
        else:
            target.blocks.CopyFrom(new_blocks(parts))

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        which = source.WhichOneof("hint")
        if which is None:
            raise MessageFormatError(path, "a hint needs its text or blocks")
        value = source.text if which == "text" else list(source.blocks.items)
        return (parts_to_agentscope2(value, path, context.owner_id, context.created_at),)

    return _Slot(("hint",), read, write)


def _content_slot() -> _Slot:
    """2.x's `data` (base64 text) and `url`: exactly one of them is set."""

    def read(target: Any, values: tuple[Any, ...], path: str) -> None:
        data, url = (None if value is _MISSING else value for value in values)
        if (data is None) == (url is None):
            raise _fail(path, "exactly one of `data` or `url` must be provided")
        if url is not None:
            target.url = _str(url, path.removesuffix("data") + "url")
            return
        text = _str(data, path)
        raw = _canonical_b64(text)
        if raw is None:
            target.base64_text = text
        else:
            target.data = raw

    def write(source: Any, path: str, context: _Context) -> tuple[Any, ...]:
        which = source.WhichOneof("content")
        if which == "url":
            return (None, source.url)
        if which == "base64_text":
            return (source.base64_text, None)
        if which == "data":
            return (base64.b64encode(source.data).decode("ascii"), None)
        raise MessageFormatError(path, "set data, base64_text or url")

    return _Slot(("data", "url"), read, write)


def _canonical_b64(text: str) -> bytes | None:
    """The bytes `text` is the canonical base64 of, or None."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode("ascii") == text else None


def _slot(field: FieldDescriptor, message: Descriptor) -> _Slot:
    if field.type != FieldDescriptor.TYPE_MESSAGE:
        return _scalar(field, message.name)
    kind = _message(field).full_name
    if kind == "agentscope.message.v1.ReplyError":
        return _error_slot()
    if kind == "agentscope.message.v1.ToolUseBlock":
        return _block_list(field.name, "tool_call") if _repeated(field) else _tool_call_slot()
    if kind == "agentscope.message.v1.ToolResultBlock":
        return _block_list(field.name, "tool_result")
    if kind == "agentscope.agent.v1.PermissionRules":
        return _rules_slot()
    if _repeated(field):
        return _nested_list(field)
    raise TypeError(f"{message.name}.{field.name}: no slot for {kind}")  # pragma: no cover


def _repeated(field: FieldDescriptor) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf 6+; the oldest runtime has `label`
    if flag is None:
        return bool(getattr(field, "label") == FieldDescriptor.LABEL_REPEATED)  # noqa: B009
    return bool(flag)


def _message(field: FieldDescriptor) -> Descriptor:
    """The message type of a message field."""
    if field.message_type is None:
        raise TypeError(f"{field.full_name} is not a message field")
    return field.message_type


# A real (not `optional`'s synthetic) oneof's slot, by its name.
_ONEOF_SLOTS: dict[str, Callable[[], _Slot]] = {"hint": _hint_slot, "content": _content_slot}


def _slots(message: Descriptor) -> tuple[_Slot, ...]:
    """The slots of a message, in field order (2.x's key order)."""
    slots: list[_Slot] = []
    done: set[str] = set()
    for field in message.fields:
        oneof = field.containing_oneof
        if oneof is not None and oneof.name != f"_{field.name}":
            if oneof.name not in done:
                done.add(oneof.name)
                slots.append(_ONEOF_SLOTS[oneof.name]())
            continue
        slots.append(_slot(field, message))
    return tuple(slots)


_EVENT_SLOTS: dict[str, tuple[_Slot, ...]] = {
    field.name: _slots(_message(field)) for field in _EVENT.fields
}


# --- Reading and writing ------------------------------------------------------


def _read_model(target: Any, slots: tuple[_Slot, ...], data: Any, path: str, message: str) -> None:
    if not isinstance(data, Mapping):
        raise _fail(path, f"expected an object, got {type_name(data)}")
    prefix = f"{path}." if path else ""
    for slot in slots:
        where = f"{prefix}{slot.keys[0]}"
        values = tuple(data.get(key, _MISSING) for key in slot.keys)
        if len(slot.keys) == 1 and values[0] is _MISSING:
            make = _DEFAULTS.get((message, slot.keys[0]))
            if make is None and not slot.nullable:
                raise _fail(where, "missing")
            values = (make() if make is not None else None,)
        slot.read(target, values, where)


def _write_model(
    source: Any, slots: tuple[_Slot, ...], path: str, context: _Context
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    prefix = f"{path}." if path else ""
    for slot in slots:
        out.update(
            zip(slot.keys, slot.write(source, f"{prefix}{slot.keys[0]}", context), strict=True)
        )
    return out


def event_from_dict(data: Mapping[str, Any]) -> pb.AgentEvent:
    """An `AgentEvent` from a 2.x event dict (`model_dump(mode="json")`).

    Raises `MessageFormatError` naming the path of what 2.x would refuse
    (`type`, `tool_calls[0].state`, ...).
    """
    if not isinstance(data, Mapping):
        raise _fail("", f"expected an event object, got {type_name(data)}")
    kind = data.get("type", _MISSING)
    if kind is _MISSING:
        raise _fail("type", "missing")
    field = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if field is None:
        raise _fail("type", f"unknown event type {kind!r}")
    event = pb.AgentEvent(
        id=_str(data["id"], "id") if "id" in data else _new_id(),
        created_at=_str(data["created_at"], "created_at") if "created_at" in data else _now(),
        metadata_json=_object(data.get("metadata", {}), "metadata"),
    )
    body = getattr(event, field.name)
    body.SetInParent()
    _read_model(body, _EVENT_SLOTS[field.name], data, "", _message(field).name)
    return event


def event_to_dict(event: pb.AgentEvent) -> dict[str, Any]:
    """The 2.x `model_dump(mode="json")` of the event: every key, in 2.x's order.

    Raises `MessageFormatError` for what a 2.x event cannot hold (an unset
    event, ROLE_TOOL, a block 2.x has no kind for, ...).
    """
    kind = event_type(event).lower()
    context = _Context(event.id, event.created_at)
    return {
        "id": event.id,
        "created_at": event.created_at,
        "metadata": load_object(event.metadata_json, "metadata") if event.metadata_json else {},
        "type": kind.upper(),
        **_write_model(getattr(event, kind), _EVENT_SLOTS[kind], "", context),
    }
