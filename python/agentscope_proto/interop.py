"""Conversion from and to real AgentScope `agentscope.message.Msg` objects, and
AgentScope 2.x's agent events (`agentscope.event`).

Needs AgentScope itself, which is an optional extra:
`pip install "agentscope-proto[agentscope]"` (AgentScope 2.x where the Python
allows it, else 1.x; `[agentscope1]` asks for 1.x). It is imported on first
use, so this module imports without it, and the conversion follows whichever
major version is installed.

The conversion goes through AgentScope's own JSON: 2.x's `model_dump(mode=
"json")`/`model_validate`, 1.x's `to_dict()`/`from_dict()` (plus
`invocation_id`, which 1.x's `to_dict()` leaves out). So it is exactly as
lossless as `from_dict`/`to_dict` in that dialect: a 2.x message comes back
with `model_dump` equal, a 1.x message with `to_dict` equal. Events go through
2.x's `model_dump(mode="json")` and `events` the same way.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import typing
from typing import Any

from ._generated.agentscope.agent.v1.events_pb2 import AgentEvent
from ._generated.agentscope.message.v1.message_pb2 import Msg
from .dialects import from_dict, to_dict
from .events import event_from_dict, event_to_dict, event_type

__all__ = [
    "agentscope_major",
    "event_from_agentscope",
    "event_to_agentscope",
    "from_agentscope",
    "to_agentscope",
]

_INSTALL = 'pip install "agentscope-proto[agentscope]"'


@functools.cache
def agentscope_major() -> int:
    """The major version of the installed AgentScope (1 or 2)."""
    try:
        version = importlib.metadata.version("agentscope")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            f"converting to and from agentscope.message.Msg needs AgentScope: {_INSTALL}"
        ) from None
    major = int(version.split(".", 1)[0])
    if major not in (1, 2):
        raise ImportError(
            f"AgentScope {version} is installed; agentscope_proto.interop supports 1.x and 2.x"
        )
    return major


def _agentscope_msg() -> tuple[type[Any], int]:
    """AgentScope's `Msg` class and its major version, imported on first use."""
    major = agentscope_major()
    cls: type[Any] = importlib.import_module("agentscope.message").Msg
    return cls, major


def to_agentscope(msg: Msg) -> Any:
    """The message as an `agentscope.message.Msg` of the installed AgentScope.

    For 2.x it is what `to_dict(msg, dialect="agentscope2")` describes (a
    message 2.x cannot hold raises `MessageFormatError`, as that does); for
    1.x a `ROLE_TOOL` message becomes a `"system"` one, 1.x's convention.
    """
    cls, major = _agentscope_msg()
    if major == 2:
        return cls.model_validate(to_dict(msg, dialect="agentscope2"))
    data = to_dict(msg)
    if msg.HasField("invocation_id"):
        data["invocation_id"] = msg.invocation_id
    return cls.from_dict(data)


def from_agentscope(obj: Any) -> Msg:
    """A `Msg` from an `agentscope.message.Msg` of the installed AgentScope.

    Raises `TypeError` for anything else and `MessageFormatError` if the
    object holds content that is not valid AgentScope JSON.
    """
    cls, major = _agentscope_msg()
    if not isinstance(obj, cls):
        raise TypeError(f"expected an agentscope.message.Msg, got {type(obj).__name__}")
    if major == 2:
        return from_dict(obj.model_dump(mode="json"), dialect="agentscope2")
    data = obj.to_dict()
    invocation_id = getattr(obj, "invocation_id", None)
    if invocation_id is not None:
        data["invocation_id"] = invocation_id
    return from_dict(data, dialect="agentscope")


@functools.cache
def _event_classes() -> dict[str, type[Any]]:
    """AgentScope 2.x's event classes by their `type` value."""
    if agentscope_major() != 2:
        raise ImportError("agent events need AgentScope 2.x: pip install 'agentscope>=2'")
    module = importlib.import_module("agentscope.event")
    return {cls.model_fields["type"].default: cls for cls in typing.get_args(module.AgentEvent)}


def event_to_agentscope(event: AgentEvent) -> Any:
    """The event as the `agentscope.event` object of its type (AgentScope 2.x).

    What `event_to_dict` writes, validated by the event's class; raises
    `MessageFormatError` for what 2.x cannot hold.
    """
    data = event_to_dict(event)
    return _event_classes()[event_type(event)].model_validate(data)


def event_from_agentscope(obj: Any) -> AgentEvent:
    """An `AgentEvent` from an `agentscope.event` object (AgentScope 2.x).

    Raises `TypeError` for anything else.
    """
    classes = _event_classes()
    if type(obj) not in classes.values():
        raise TypeError(f"expected an agentscope.event event, got {type(obj).__name__}")
    return event_from_dict(obj.model_dump(mode="json"))
