"""Readers shared by the dialects: roles, content, metadata, extras, usage."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    Msg,
    Role,
    ToolResultState,
    Usage,
)
from ..errors import MessageFormatError
from ..message._codec import block_from_dict, blocks_from_list

ROLES = {"user": Role.ROLE_USER, "assistant": Role.ROLE_ASSISTANT, "system": Role.ROLE_SYSTEM}
RESULT_STATES = {
    name.removeprefix("TOOL_RESULT_STATE_").lower(): number
    for name, number in ToolResultState.items()
    if number
}
# How a dialect reads one block dict (None: drop it).
ReadBlock = Callable[[Any, str], ContentBlock | None]


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def required(data: Mapping[str, Any], key: str) -> Any:
    if key not in data:
        raise MessageFormatError(key, "missing")
    return data[key]


def optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise MessageFormatError(key, f"expected a string or null, got {type_name(value)}")
    return value


def read_role(value: Any, roles: Mapping[str, Role.ValueType], any_case: bool) -> Role.ValueType:
    key = value.lower() if any_case and isinstance(value, str) else value
    if not isinstance(key, str) or key not in roles:
        expected = ", ".join(map(repr, roles)) + (" in any case" if any_case else "")
        raise MessageFormatError("role", f"expected one of {expected}, got {value!r}")
    return roles[key]


def set_content(msg: Msg, content: Any, read_block: ReadBlock) -> None:
    if isinstance(content, str):
        msg.text = content
        return
    if not isinstance(content, list):
        raise MessageFormatError(
            "content", f"expected a string or a list of blocks, got {type_name(content)}"
        )
    msg.blocks.SetInParent()
    items = msg.blocks.items
    if read_block is block_from_dict:
        # The plain 1.x reader: build the blocks in place instead of copying them in.
        blocks_from_list(content, "content", items)
        return
    for index, item in enumerate(content):
        block = read_block(item, f"content[{index}]")
        if block is not None:
            items.append(block)


def read_head(
    data: Mapping[str, Any],
    *,
    any_case: bool,
    read_block: ReadBlock,
    new_id: Callable[[], str],
) -> Msg:
    """What both AgentScope Python dialects read alike: `name` (a string, or
    null for none), `role`, `content`, and `id` (a fresh one when absent, as
    each version's own `Msg` makes)."""
    msg = Msg()
    name = required(data, "name")
    if name is not None:
        if not isinstance(name, str):
            raise MessageFormatError("name", f"expected a string, got {type_name(name)}")
        msg.name = name
    msg.role = read_role(required(data, "role"), ROLES, any_case=any_case)
    set_content(msg, required(data, "content"), read_block)
    if "id" not in data:
        msg.id = new_id()
    elif (msg_id := optional_str(data, "id")) is not None:
        msg.id = msg_id
    return msg


def set_metadata(msg: Msg, metadata: Any) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, Mapping):
        raise MessageFormatError(
            "metadata", f"expected an object or null, got {type_name(metadata)}"
        )
    if metadata:
        msg.metadata_json = _json.dumps(metadata, "metadata")


def set_extras(msg: Msg, data: Mapping[str, Any], known: frozenset[str]) -> None:
    extras = {k: v for k, v in data.items() if k not in known}
    if extras:
        for key, value in extras.items():
            _json.dumps(value, str(key))
        msg.extra_json = _json.dumps(extras, "")


def set_usage(msg: Msg, value: Any, keys: tuple[tuple[str, str], ...]) -> None:
    """Read a usage object; unknown keys (Java's derived `totalTokens`) are ignored."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise MessageFormatError("usage", f"expected an object or null, got {type_name(value)}")
    usage = Usage()
    for key, field in keys:
        number = value.get(key)
        if number is None:
            continue
        path = f"usage.{key}"
        if field == "time_seconds":
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise MessageFormatError(path, f"expected a number, got {type_name(number)}")
            usage.time_seconds = float(number)
        else:
            if isinstance(number, bool) or not isinstance(number, int):
                raise MessageFormatError(path, f"expected an integer, got {type_name(number)}")
            if not -(2**63) <= number < 2**63:
                raise MessageFormatError(path, f"{number} does not fit in 64 bits")
            setattr(usage, field, number)
    msg.usage.CopyFrom(usage)


def with_output(data: Mapping[str, Any], path: str, read_block: ReadBlock) -> ContentBlock:
    """A tool_result block whose list output may hold any block kind."""
    output = data.get("output")
    if not isinstance(output, list):
        return block_from_dict(data, path)
    wrapper = block_from_dict({**data, "output": []}, path)
    items = wrapper.tool_result.blocks.items
    for index, item in enumerate(output):
        block = read_block(item, f"{path}.output[{index}]")
        if block is not None:
            items.append(block)
    return wrapper


def is_canonical_b64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return base64.b64encode(base64.b64decode(value, validate=True)).decode() == value
    except (binascii.Error, ValueError):
        return False


def rebuild(first: dict[str, Any], data: Mapping[str, Any], handled: set[str]) -> dict[str, Any]:
    """`first`, then the keys of `data` not yet handled, in their order."""
    for key, value in data.items():
        if key not in handled and key not in first:
            first[key] = value
    return first
