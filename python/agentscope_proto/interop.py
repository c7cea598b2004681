"""Conversion from and to real AgentScope 1.x `agentscope.message.Msg` objects.

Needs AgentScope itself, which is an optional extra:
`pip install "agentscope-proto[agentscope]"` (AgentScope 1.0.16 to 1.x). It is
imported on first use, so this module imports without it.

The conversion goes through AgentScope's own `Msg.to_dict()` and
`Msg.from_dict()`, so it is exactly as lossless as `from_dict`/`to_dict`; in
addition `invocation_id`, which AgentScope's `to_dict()` leaves out, is carried
both ways.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._generated.agentscope.message.v1.message_pb2 import Msg
from .dialects import from_dict, to_dict

__all__ = ["from_agentscope", "to_agentscope"]

_INSTALL = 'pip install "agentscope-proto[agentscope]"'


def _agentscope_msg() -> type[Any]:
    """AgentScope's `Msg` class, imported on first use."""
    try:
        module = importlib.import_module("agentscope.message")
    except ImportError as exc:
        raise ImportError(
            f"converting to and from agentscope.message.Msg needs AgentScope 1.x: {_INSTALL}"
        ) from exc
    cls: type[Any] = module.Msg
    if not callable(getattr(cls, "from_dict", None)):
        raise ImportError(
            "the installed AgentScope is not 1.x (its Msg has no from_dict); "
            f"agentscope_proto.interop supports AgentScope 1.0.16 to 1.x: {_INSTALL}"
        )
    return cls


def to_agentscope(msg: Msg) -> Any:
    """The message as an `agentscope.message.Msg` (AgentScope 1.x).

    A `ROLE_TOOL` message becomes a `"system"` message, AgentScope 1.x's
    convention for tool results.
    """
    cls = _agentscope_msg()
    data = to_dict(msg)
    if msg.HasField("invocation_id"):
        data["invocation_id"] = msg.invocation_id
    return cls.from_dict(data)


def from_agentscope(obj: Any) -> Msg:
    """A `Msg` from an `agentscope.message.Msg` (AgentScope 1.x).

    Raises `TypeError` for anything else and `MessageFormatError` if the
    object holds content that is not valid AgentScope JSON.
    """
    cls = _agentscope_msg()
    if not isinstance(obj, cls):
        raise TypeError(f"expected an agentscope.message.Msg, got {type(obj).__name__}")
    data = obj.to_dict()
    invocation_id = getattr(obj, "invocation_id", None)
    if invocation_id is not None:
        data["invocation_id"] = invocation_id
    return from_dict(data, dialect="agentscope")
