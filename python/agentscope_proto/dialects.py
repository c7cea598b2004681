"""`Msg` from and to the JSON dicts AgentScope already writes.

`from_dict` reads AgentScope Python 1.x `Msg.to_dict()` output; `to_dict`
writes exactly what AgentScope 1.0.21's `Msg.from_dict(d).to_dict()` returns
for the same input (same keys, order, value types, base64 text).

For clients that are not AgentScope, the schema-native JSON is ProtoJSON
(`google.protobuf.json_format.MessageToJson` / `Parse`): camelCase field
names, `ROLE_USER`-style enums, base64 for `bytes`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from . import _json
from ._blocks import blocks_from_list, blocks_to_list
from ._generated.agentscope.message.v1.message_pb2 import Msg, Role
from .errors import MessageFormatError
from .message import new_id, new_timestamp

__all__ = ["Dialect", "from_dict", "from_json", "to_dict", "to_json"]

Dialect = Literal["agentscope"]

_ROLES = {"user": Role.ROLE_USER, "assistant": Role.ROLE_ASSISTANT, "system": Role.ROLE_SYSTEM}
# AgentScope Python 1.x has no tool role; it carries tool results in system
# messages, so that is where a tool message goes in its dialect.
_ROLE_NAMES = {
    Role.ROLE_USER: "user",
    Role.ROLE_ASSISTANT: "assistant",
    Role.ROLE_SYSTEM: "system",
    Role.ROLE_TOOL: "system",
}
_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "timestamp", "invocation_id"})


def _required(data: Mapping[str, Any], key: str) -> Any:
    if key not in data:
        raise MessageFormatError(key, "missing")
    return data[key]


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise MessageFormatError(key, f"expected a string or null, got {type(value).__name__}")
    return value


def from_dict(data: Mapping[str, Any]) -> Msg:
    """A `Msg` from an AgentScope message dict.

    A missing id or timestamp is generated as AgentScope does. Raises
    `MessageFormatError` naming the offending path.
    """
    if not isinstance(data, Mapping):
        raise MessageFormatError("", f"expected a message object, got {type(data).__name__}")
    msg = Msg()
    name = _required(data, "name")
    if name is not None:
        if not isinstance(name, str):
            raise MessageFormatError("name", f"expected a string, got {type(name).__name__}")
        msg.name = name
    role = _required(data, "role")
    if role not in _ROLES:
        raise MessageFormatError("role", f"expected 'user', 'assistant' or 'system', got {role!r}")
    msg.role = _ROLES[role]
    content = _required(data, "content")
    if isinstance(content, str):
        msg.text = content
    elif isinstance(content, list):
        msg.blocks.SetInParent()
        blocks_from_list(content, "content", msg.blocks.items)
    else:
        raise MessageFormatError(
            "content", f"expected a string or a list of blocks, got {type(content).__name__}"
        )
    if "id" not in data:
        msg.id = new_id()
    elif (msg_id := _optional_str(data, "id")) is not None:
        msg.id = msg_id
    metadata = data.get("metadata")
    if metadata is not None:
        msg.metadata_json = _json.dumps(metadata, "metadata")
    msg.timestamp = _optional_str(data, "timestamp") or new_timestamp()
    invocation_id = _optional_str(data, "invocation_id")
    if invocation_id is not None:
        msg.invocation_id = invocation_id
    extras = {k: v for k, v in data.items() if k not in _MSG_KEYS}
    if extras:
        msg.extra_json = _json.dumps(extras)
    return msg


def to_dict(msg: Msg, dialect: Dialect = "agentscope") -> dict[str, Any]:
    """The message as AgentScope's `Msg.to_dict()` writes it.

    Like AgentScope, the dict omits `invocation_id` and top-level keys it does
    not know; they stay on the `Msg`.
    """
    if dialect != "agentscope":
        raise ValueError(f"unknown dialect {dialect!r}; expected 'agentscope'")
    if msg.role not in _ROLE_NAMES:
        raise MessageFormatError("role", "unset")
    content: str | list[dict[str, Any]]
    content = msg.text if msg.WhichOneof("content") == "text" else blocks_to_list(msg.blocks.items)
    metadata = _json.loads(msg.metadata_json, "metadata") if msg.HasField("metadata_json") else None
    return {
        "id": msg.id if msg.HasField("id") else None,
        "name": msg.name if msg.HasField("name") else None,
        "role": _ROLE_NAMES[msg.role],
        "content": content,
        # AgentScope stores `metadata or {}`.
        "metadata": metadata or {},
        "timestamp": msg.timestamp,
    }


def to_json(msg: Msg, dialect: Dialect = "agentscope", **dumps_kwargs: Any) -> str:
    """`to_dict` as JSON text (`json.dumps` keyword arguments pass through)."""
    dumps_kwargs.setdefault("ensure_ascii", False)
    return json.dumps(to_dict(msg, dialect), **dumps_kwargs)


def from_json(text: str | bytes) -> Msg:
    """`from_dict` of JSON text."""
    return from_dict(_json.loads(text, ""))
