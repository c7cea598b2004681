"""The A2A TCK's checks (a2aproject/a2a-tck) that the suite does itself.

DM-SERIAL-003: every time in a task, message or event, at any depth, is an
ISO 8601 instant in UTC with `Z`. The TCK looks at every key of these names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

A2A_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
TIME_KEYS = frozenset({"timestamp", "createdAt", "updatedAt", "statusTimestamp"})


def times_in(data: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Each (path, value) of a key the TCK reads as a time, anywhere in `data`."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key in TIME_KEYS:
                yield f"{path}.{key}", value
            yield from times_in(value, f"{path}.{key}")
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from times_in(item, f"{path}[{index}]")


def bad_times(data: Any) -> list[tuple[str, Any]]:
    """The times in `data` the TCK fails (DM-SERIAL-003): none when all is well."""
    return [
        (path, value)
        for path, value in times_in(data)
        if not isinstance(value, str) or not A2A_TIME.match(value)
    ]
