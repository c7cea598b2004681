"""Which dialect an AgentScope message dict is in (`detect_dialect`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from ._java_rules import ROLES as JAVA_ROLES
from .agentscope2 import AS2_BLOCK_TYPES, AS2_TOP_KEYS, AS2_USAGE_KEYS

__all__ = ["Dialect", "detect_dialect"]

Dialect = Literal["agentscope", "java", "agentscope2"]


def _walk_blocks(items: Any) -> Iterator[Mapping[str, Any]]:
    """Every block dict in a content list, tool result outputs included."""
    stack = [items]
    while stack:
        current = stack.pop()
        if not isinstance(current, list):
            continue
        for item in current:
            if type(item) is dict or isinstance(item, Mapping):
                yield item
                if item.get("type") == "tool_result":
                    stack.append(item.get("output"))


def _has_as2_traces(data: Mapping[str, Any]) -> bool:
    if any(key in data for key in AS2_TOP_KEYS):
        return True
    usage = data.get("usage")
    if isinstance(usage, Mapping) and any(key in AS2_USAGE_KEYS for key in usage):
        return True
    for block in _walk_blocks(data.get("content")):
        kind = block.get("type")
        if (isinstance(kind, str) and kind in AS2_BLOCK_TYPES) or "created_at" in block:
            return True
    return False


def detect_dialect(data: Any) -> Dialect:
    """The dialect `from_dict` reads `data` in when none is given.

    agentscope-java when the role is a `MsgRole` name (`"USER"`, `"TOOL"`, ...:
    Jackson writes nothing else, and Java refuses any other spelling; a Java
    message without a role needs `dialect="java"`);
    AgentScope 2.x when there is no `timestamp` but a 2.x trace (`created_at`,
    `finished_reason`, a snake_case `usage`, `tool_call`/`data`/`hint` blocks,
    ...); AgentScope 1.x otherwise.
    """
    if not isinstance(data, Mapping):
        return "agentscope"
    role = data.get("role")
    if isinstance(role, str) and role in JAVA_ROLES:
        return "java"
    if "timestamp" not in data and _has_as2_traces(data):
        return "agentscope2"
    return "agentscope"
