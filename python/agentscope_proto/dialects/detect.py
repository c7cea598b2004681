"""Which dialect an AgentScope message dict is in (`detect_dialect`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from ._common import ANY_CASE_ROLES, ROLES
from .agentscope2 import AS2_BLOCK_TYPES, AS2_TOP_KEYS, AS2_USAGE_KEYS
from .java import ISO_INSTANT, JAVA_MEDIA_KEYS, JAVA_USAGE_KEYS

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


def _kind(block: Mapping[str, Any]) -> str | None:
    kind = block.get("type")
    return kind if isinstance(kind, str) else None


def _has_java_block_traces(block: Mapping[str, Any]) -> bool:
    kind = _kind(block)
    if kind == "tool_use":
        return "content" in block
    if kind == "thinking":
        return "metadata" in block
    if kind == "tool_result":
        return "state" in block or "metadata" in block
    if kind in JAVA_MEDIA_KEYS and any(key in block for key in JAVA_MEDIA_KEYS[kind]):
        return True
    source = block.get("source")
    return isinstance(source, Mapping) and "mime_type" in source


def _has_as2_traces(data: Mapping[str, Any], blocks: list[Mapping[str, Any]]) -> bool:
    if any(key in data for key in AS2_TOP_KEYS):
        return True
    usage = data.get("usage")
    if isinstance(usage, Mapping) and any(key in AS2_USAGE_KEYS for key in usage):
        return True
    return any(_kind(b) in AS2_BLOCK_TYPES or "created_at" in b for b in blocks)


def _has_java_traces(data: Mapping[str, Any], blocks: list[Mapping[str, Any]]) -> bool:
    if "usage" in data:
        usage = data["usage"]
        if usage is None or (
            isinstance(usage, Mapping) and any(key in JAVA_USAGE_KEYS for key in usage)
        ):
            return True
    if "name" in data and data["name"] is None:
        return True
    timestamp = data.get("timestamp")
    # 1.x timestamps have no "T": skip the regex for them.
    if (
        isinstance(timestamp, str)
        and ("T" in timestamp or "t" in timestamp)
        and ISO_INSTANT.fullmatch(timestamp)
    ):
        return True
    return any(_has_java_block_traces(b) for b in blocks)


def detect_dialect(data: Any) -> Dialect:
    """The dialect `from_dict` reads `data` in when none is given.

    The rules are in docs/dialects.md. Anything that is not clearly
    agentscope-java or AgentScope 2.x is AgentScope 1.x.
    """
    if not isinstance(data, Mapping):
        return "agentscope"
    role = data.get("role")
    if isinstance(role, str) and role not in ROLES and role.lower() in ANY_CASE_ROLES:
        return "java"
    content = data.get("content")
    blocks = list(_walk_blocks(content))
    if "timestamp" not in data and _has_as2_traces(data, blocks):
        return "agentscope2"
    if isinstance(content, str) or "invocation_id" in data:
        return "agentscope"
    if _has_java_traces(data, blocks):
        return "java"
    return "agentscope"
