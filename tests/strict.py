"""Strict structural equality for golden comparisons.

`==` treats `1 == 1.0 == True` and ignores dict key order; golden parity does
not. `diff` returns the first difference as a readable path, or None.
"""

from __future__ import annotations

import math
from typing import Any


def diff(actual: Any, expected: Any, path: str = "$") -> str | None:
    """The first place where `actual` and `expected` differ, or None."""
    if type(actual) is not type(expected):
        return f"{path}: type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, dict):
        if list(actual) != list(expected):
            return f"{path}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            found = diff(actual[key], expected[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return f"{path}: length {len(actual)} != {len(expected)}"
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            found = diff(a, e, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(expected, float) and math.copysign(1, actual) != math.copysign(1, expected):
        return f"{path}: sign of {actual!r} != {expected!r}"
    if actual != expected:
        return f"{path}: {actual!r} != {expected!r}"
    return None


def assert_same(actual: Any, expected: Any) -> None:
    """Fail with the first difference between `actual` and `expected`."""
    found = diff(actual, expected)
    assert found is None, found


def scramble(value: Any) -> None:
    """Mutate every dict and list reachable from `value`, in place (what a
    caller may do to a result it owns)."""
    if isinstance(value, dict):
        for item in list(value.values()):
            scramble(item)
        value["scrambled"] = True
    elif isinstance(value, list):
        for item in list(value):
            scramble(item)
        value.append("scrambled")
