"""What agentscope-java accepts: its roles, block kinds, enums and number types.

Shared by the reader (`java.from_java`, which refuses what Java refuses) and
the writer (`java.to_java`, which never writes what Java would refuse).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._generated.agentscope.message.v1.message_pb2 import Role
from ..errors import MessageFormatError
from ._common import RESULT_STATES, type_name

ROLE_NAMES = {
    Role.ROLE_USER: "USER",
    Role.ROLE_ASSISTANT: "ASSISTANT",
    Role.ROLE_SYSTEM: "SYSTEM",
    Role.ROLE_TOOL: "TOOL",
}
ROLES = {name: role for role, name in ROLE_NAMES.items()}
# `ContentBlock`'s subtype names: any other `type` is refused.
KINDS = ("text", "thinking", "tool_use", "tool_result", "image", "audio", "video", "hint", "data")
# `Msg.validateRoleContent`: what USER and SYSTEM messages may hold (ASSISTANT
# and TOOL hold anything).
ALLOWED = {
    Role.ROLE_USER: ("text", "data", "image", "audio", "video"),
    Role.ROLE_SYSTEM: ("text",),
}
TOOL_CALL_STATES = ("pending", "asking", "allowed", "submitted", "finished")
TOOL_RESULT_STATES = tuple(RESULT_STATES)
# DashScope media settings of ImageBlock and VideoBlock, in the order Jackson
# writes them: (camelCase name Java writes, snake_case name Java also reads,
# whether the value is a Java `Double` rather than an `Integer`).
KNOBS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "image": (("minPixels", "min_pixels", False), ("maxPixels", "max_pixels", False)),
    "video": (
        ("fps", "fps", True),
        ("maxFrames", "max_frames", False),
        ("minPixels", "min_pixels", False),
        ("maxPixels", "max_pixels", False),
        ("totalPixels", "total_pixels", False),
    ),
}
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
# Jackson's input limits (StreamReadConstraints): longer strings and numbers
# with more digits are refused.
MAX_STRING = 20_000_000
MAX_DIGITS = 1000
_TOO_MANY_DIGITS = 10**MAX_DIGITS


def refuse(path: str, rule: str) -> MessageFormatError:
    return MessageFormatError(path, f"agentscope-java refuses this: {rule}")


def check_kind(kind: Any, path: str) -> str:
    if not isinstance(kind, str):
        raise refuse(f"{path}.type", f"a block needs a type, got {type_name(kind)}")
    if kind not in KINDS:
        raise refuse(f"{path}.type", f"unknown block type {kind!r} (it knows {', '.join(KINDS)})")
    return kind


def check_role_content(role: Role.ValueType, kind: str, path: str) -> None:
    allowed = ALLOWED.get(role)
    if allowed is not None and kind not in allowed:
        name = ROLE_NAMES[role]
        raise refuse(
            f"{path}.type",
            f"{kind!r} is not allowed in a {name} message "
            f"(a {name} message holds only {', '.join(allowed)} blocks)",
        )


def state(value: Any, known: tuple[str, ...], path: str, *, any_case: bool) -> str:
    """A tool state as Java writes it (lower case); `any_case` maps `"DENIED"` too."""
    if isinstance(value, str):
        if value in known:
            return value
        if any_case and value.lower() in known:
            return value.lower()
    raise refuse(path, f"state must be one of {', '.join(known)} (lower case), got {value!r}")


def int32(value: Any, path: str) -> int:
    """A Java `int`: floats are truncated as Jackson does, and the range is checked."""
    if isinstance(value, float) and math.isfinite(value):
        value = math.trunc(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(path, f"expected a 32-bit integer, got {type_name(value)}")
    if not INT_MIN <= value <= INT_MAX:
        raise refuse(path, f"{value} does not fit in a 32-bit int")
    return value


def double(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refuse(path, f"expected a number, got {type_name(value)}")
    return float(value)


def wrap32(value: int) -> int:
    """Java's `int` arithmetic: the sum wraps around at 32 bits."""
    return (value - INT_MIN) % 2**32 + INT_MIN


def knobs(kind: str, data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The media settings of a block dict, camelCase winning over snake_case."""
    out: dict[str, Any] = {}
    for camel, snake, is_double in KNOBS.get(kind, ()):
        key = camel if data.get(camel) is not None else snake
        value = data.get(key)
        if value is not None:
            where = f"{path}.{key}"
            out[camel] = double(value, where) if is_double else int32(value, where)
    return out


def object_or_null(value: Any, path: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise refuse(path, f"expected an object or null, got {type_name(value)}")


def check_limits(value: Any, path: str = "") -> None:
    """Refuse strings and numbers past Jackson's input limits, anywhere in `value`."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, str):
            if len(current) > MAX_STRING:
                raise refuse(where, f"a string longer than {MAX_STRING:,} characters")
        elif isinstance(current, int):
            if abs(current) >= _TOO_MANY_DIGITS:
                raise refuse(where, f"a number with more than {MAX_DIGITS} digits")
        elif isinstance(current, dict):
            stack.extend(
                (item, f"{where}.{key}" if where else str(key)) for key, item in current.items()
            )
        elif isinstance(current, list):
            stack.extend((item, f"{where}[{index}]") for index, item in enumerate(current))
