"""What agentscope-java accepts: its roles, block kinds, enums and number types.

Shared by the reader (`java.from_java`, which refuses what Java refuses) and
the writer (`java.to_java`, which never writes what Java would refuse).
"""

from __future__ import annotations

import math
import re
import struct
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
# whether the value is a Java `Float` rather than an `Integer`).
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
# Jackson's input limits (StreamReadConstraints), in Java `char`s (UTF-16
# units: a character past U+FFFF counts twice): longer strings, longer
# property names (Jackson 2.16+, which agentscope-java ships) and numbers with
# more digits are refused.
MAX_STRING = 20_000_000
MAX_NAME = 50_000
MAX_DIGITS = 1000
_TOO_MANY_DIGITS = 10**MAX_DIGITS
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


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
    """A Java `int`: the range is checked, then a float is truncated, as Jackson
    does (2147483647.5 is refused, not read as 2147483647)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise refuse(path, f"expected a 32-bit integer, got {type_name(value)}")
    if not INT_MIN <= value <= INT_MAX:
        raise refuse(path, f"{value} does not fit in a 32-bit int")
    return math.trunc(value) if isinstance(value, float) else value


def double(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refuse(path, f"expected a number, got {type_name(value)}")
    return float(value)


def java_float(value: Any, path: str) -> float:
    """What Java writes for `value` read into a `Float`: rounded to 24 bits and
    printed as `Float.toString` does (the shortest decimal, of at least two
    digits, that reads back as the same float: 0.123456789 is 0.12345679, 1e-50
    is 0.0). A value past `Float.MAX_VALUE` would be Infinity, which JSON
    cannot hold: refused."""
    single = _as_float(double(value, path))
    if single is None:
        raise refuse(path, f"{value} does not fit in a Java Float (it would be Infinity)")
    for digits in range(2, 10):
        shortest = float(f"{single:.{digits}g}")
        if _as_float(shortest) == single:
            return shortest
    return single  # pragma: no cover - nine digits always read back


_FLOAT = struct.Struct("<f")


def _as_float(number: float) -> float | None:
    """`number` rounded to a Java float; None past its range."""
    try:
        value: float = _FLOAT.unpack(_FLOAT.pack(number))[0]
    except OverflowError:
        return None
    return value


def utf16_length(text: str) -> int:
    """The length of `text` in Java `char`s."""
    # Only a string over half a limit can reach it: count then.
    return len(text) + len(_ASTRAL.findall(text))


def wrap32(value: int) -> int:
    """Java's `int` arithmetic: the sum wraps around at 32 bits."""
    return (value - INT_MIN) % 2**32 + INT_MIN


def knobs(kind: str, data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The media settings of a block dict, camelCase winning over snake_case."""
    out: dict[str, Any] = {}
    for camel, snake, is_float in KNOBS.get(kind, ()):
        key = camel if data.get(camel) is not None else snake
        value = data.get(key)
        if value is not None:
            where = f"{path}.{key}"
            out[camel] = java_float(value, where) if is_float else int32(value, where)
    return out


def object_or_null(value: Any, path: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise refuse(path, f"expected an object or null, got {type_name(value)}")


def _too_long(text: str, limit: int) -> bool:
    # A string's UTF-16 length is at most twice its length: most need no count.
    return len(text) * 2 > limit and utf16_length(text) > limit


def check_limits(value: Any, path: str = "") -> None:
    """Refuse strings, names and numbers past Jackson's input limits, anywhere in
    `value`: the first in document order, as Jackson meets it."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, str):
            if _too_long(current, MAX_STRING):
                raise refuse(where, f"a string longer than {MAX_STRING:,} UTF-16 units")
        elif isinstance(current, int):
            if abs(current) >= _TOO_MANY_DIGITS:
                raise refuse(where, f"a number with more than {MAX_DIGITS} digits")
        elif isinstance(current, dict):
            if any(_too_long(key, MAX_NAME) for key in current if isinstance(key, str)):
                raise refuse(where, f"a name (key) longer than {MAX_NAME:,} UTF-16 units")
            stack.extend(
                (item, f"{where}.{key}" if where else str(key))
                for key, item in reversed(current.items())
            )
        elif isinstance(current, list):
            stack.extend((current[i], f"{where}[{i}]") for i in range(len(current) - 1, -1, -1))
