"""What AgentScope 2.x's pydantic models accept, in pydantic's lax mode.

The readers of `agentscope2.py`'s model tables: each takes a JSON value and
returns it as 2.x holds it, or raises a `MessageFormatError` whose reason
starts `AgentScope 2.x refuses this:`. Measured against the real AgentScope
2.0.11 (pydantic 2.14): tests/golden/agentscope2/validate.json.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..errors import MessageFormatError
from ._common import type_name

__all__ = [
    "MISSING",
    "Field",
    "Reader",
    "Tally",
    "choice",
    "fail",
    "model",
    "read_dict",
    "read_int",
    "read_opt_str",
    "read_str",
    "union",
]


class _Missing:
    """A key that was not given."""


MISSING = _Missing()
_I64 = 2**63 - 1
# A string pydantic reads as an integer: ASCII digits (single underscores
# between them), a sign, and zeros after a decimal point.
_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")


def fail(path: str, reason: str) -> MessageFormatError:
    return MessageFormatError(path, f"AgentScope 2.x refuses this: {reason}")


class Tally:
    """How many declared keys a validation used, nested models included: how
    pydantic's smart union chooses among the models a value fits."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Reader(Protocol):
    """A reader of one value: the value as 2.x holds it; nested models count
    their keys in `tally`."""

    def __call__(self, value: Any, path: str, tally: Tally | None = None, /) -> Any: ...


def read_str(value: Any, path: str, tally: Tally | None = None) -> str:
    if not isinstance(value, str):
        raise fail(path, f"expected a string, got {type_name(value)}")
    return value


def read_opt_str(value: Any, path: str, tally: Tally | None = None) -> str | None:
    return None if value is None else read_str(value, path)


def read_int(value: Any, path: str, tally: Tally | None = None) -> int:
    """An integer as pydantic's lax mode reads one: ints, bools, integral floats
    within 64 bits, and integer strings."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value:
            raise fail(path, "expected an integer, got NaN")
        if abs(value) > _I64:
            raise fail(path, "an integer that exceeds the maximum size")
        if not value.is_integer():
            raise fail(path, "expected an integer, got a number with a fractional part")
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if not _INT_TEXT.fullmatch(text):
            raise fail(path, f"expected an integer, got the string {value!r}")
        return int(text.split(".", 1)[0])
    raise fail(path, f"expected an integer, got {type_name(value)}")


def read_dict(value: Any, path: str, tally: Tally | None = None) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise fail(path, f"expected an object, got {type_name(value)}")
    return dict(value)


def choice(names: Mapping[str, Any], what: str) -> Reader:
    def read(value: Any, path: str, tally: Tally | None = None) -> Any:
        if not isinstance(value, str) or value not in names:
            expected = ", ".join(map(repr, names))
            raise fail(path, f"{what} is one of {expected}, got {value!r}")
        return value

    return read


# A model's declared keys: (key, reader, default), where a default of
# `MISSING` makes the key required and a callable default is a factory.
Field = tuple[str, Reader, Any]


def model(
    fields: tuple[Field, ...], data: Any, path: str, tally: Tally | None = None
) -> dict[str, Any]:
    """The declared keys of one model, read and defaulted, in its order."""
    if not isinstance(data, Mapping):
        raise fail(path, f"expected an object, got {type_name(data)}")
    tally = tally or Tally()
    out: dict[str, Any] = {}
    for key, read, default in fields:
        value = data.get(key, MISSING)
        if value is MISSING:
            if default is MISSING:
                raise fail(f"{path}.{key}", "missing")
            out[key] = default() if callable(default) else default
        else:
            out[key] = read(value, f"{path}.{key}", tally)
            tally.count += 1
    return out


def union(
    choices: tuple[str, ...],
    fields: Mapping[str, tuple[Field, ...]],
    data: Mapping[str, Any],
    path: str,
    tally: Tally,
    build: Callable[[str, dict[str, Any], str], dict[str, Any]],
) -> dict[str, Any]:
    """Pydantic's smart union over models that all default their `type`: the
    one that validates with the most keys used, the first of equals."""
    best: tuple[int, dict[str, Any]] | None = None
    first_error: MessageFormatError | None = None
    for choice in choices:
        mine = Tally()
        try:
            value = build(choice, model(fields[choice], data, path, mine), path)
        except MessageFormatError as exc:
            first_error = first_error or exc
            continue
        if best is None or mine.count > best[0]:
            best = (mine.count, value)
    if best is None:
        raise first_error or fail(path, "fits no model")
    tally.count += best[0]
    return best[1]
