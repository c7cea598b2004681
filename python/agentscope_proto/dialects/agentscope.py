"""AgentScope Python 1.x: `Msg.to_dict()`, read and written exactly as 1.0.21 does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import Msg, Role
from ..errors import MessageFormatError
from ..message._codec import block_from_dict, blocks_to_list
from ..message.helpers import new_id, new_timestamp
from ._common import (
    optional_str,
    read_head,
    set_extras,
)

__all__ = ["from_agentscope", "to_agentscope"]

_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "timestamp", "invocation_id"})
# AgentScope Python 1.x has no tool role; it carries tool results in system
# messages, so that is where a tool message goes in its dialect.
_ROLE_NAMES = {
    Role.ROLE_USER: "user",
    Role.ROLE_ASSISTANT: "assistant",
    Role.ROLE_SYSTEM: "system",
    Role.ROLE_TOOL: "system",
}


def from_agentscope(data: Mapping[str, Any]) -> Msg:
    msg = read_head(data, any_case=False, read_block=block_from_dict, new_id=new_id)
    metadata = data.get("metadata")
    # AgentScope keeps `metadata or {}`: an empty one is no metadata, which
    # `to_dict` writes as `{}` again.
    if metadata:
        msg.metadata_json = _json.dumps(metadata, "metadata")
    msg.timestamp = optional_str(data, "timestamp") or new_timestamp()
    invocation_id = optional_str(data, "invocation_id")
    if invocation_id is not None:
        msg.invocation_id = invocation_id
    set_extras(msg, data, _MSG_KEYS)
    return msg


def to_agentscope(msg: Msg) -> dict[str, Any]:
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
