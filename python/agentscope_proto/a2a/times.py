"""Times as A2A writes them: ISO 8601 instants in UTC, with `Z` (docs/a2a.md, "Times").

AgentScope writes local wall-clock times without a zone (1.x's
`YYYY-MM-DD HH:MM:SS.mmm`, 2.x's `datetime.now().isoformat()`), and this
package's schema keeps them as text, byte for byte. A2A peers (and the A2A
TCK) take every `timestamp` or `createdAt` for a UTC instant. So the writers
put each time field of the ProtoJSON they send in UTC, and keep every
original text that differs in a map by its location (`msgs[0].timestamp`),
which the readers put back: AgentScope -> A2A -> AgentScope gives the
original bytes, and a peer reads instants.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Final

__all__ = ["TIME_FIELDS", "restore_times", "times_to_utc", "utc"]

# The schema's time fields (a Msg's, a block's, an event's) as ProtoJSON names them.
TIME_FIELDS: Final = frozenset({"timestamp", "createdAt", "finishedAt"})
_FRACTION = re.compile(r"(:\d{2})\.(\d+)")


def utc(text: str) -> str | None:
    """`text` as a UTC instant (`YYYY-MM-DDTHH:MM:SS[.ffffff]Z`), None when
    it reads as no time. A time without a zone is this process's local time:
    AgentScope's `datetime.now()` of the process that made it, which is this one."""
    candidate = text.strip()
    if candidate[-1:] in ("Z", "z"):
        candidate = candidate[:-1] + "+00:00"  # Python 3.10 reads no `Z`
    # Python 3.10 reads 3 or 6 digits of a second only; 3.11 any, truncated at 6.
    candidate = _FRACTION.sub(lambda m: f"{m[1]}.{m[2][:6]:0<6}", candidate, count=1)
    try:
        # A naive time is taken as local time by `astimezone`.
        moment = datetime.fromisoformat(candidate).astimezone(timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None
    # isoformat, not strftime: strftime does not pad years before 1000.
    return moment.replace(tzinfo=None).isoformat() + "Z"


def times_to_utc(data: Any, where: str, originals: dict[str, str]) -> Any:
    """A copy of `data` (ProtoJSON) with its time fields in UTC. Each original
    text that differs goes in `originals` under its location (`where` and the
    path, `msgs[0].timestamp`); a time that reads as no time is left out of
    the copy (a peer would take it for one) and kept there alone."""
    if isinstance(data, list):
        return [times_to_utc(item, f"{where}[{i}]", originals) for i, item in enumerate(data)]
    if not isinstance(data, dict):
        return data
    copy: dict[str, Any] = {}
    for key, value in data.items():
        if key in TIME_FIELDS and isinstance(value, str):
            instant = utc(value)
            if instant != value:
                originals[f"{where}.{key}"] = value
            if instant is not None:
                copy[key] = instant
        elif isinstance(value, (dict, list)):
            copy[key] = times_to_utc(value, f"{where}.{key}", originals)
        else:
            copy[key] = value
    return copy


def restore_times(data: Any, where: str, originals: Mapping[str, Any]) -> Any:
    """`data` (read from A2A) with the original texts `times_to_utc` kept
    put back, in place; only at time fields, and only texts."""
    if not originals:
        return data
    if isinstance(data, list):
        for i, item in enumerate(data):
            restore_times(item, f"{where}[{i}]", originals)
    elif isinstance(data, dict):
        for key, value in data.items():
            restore_times(value, f"{where}.{key}", originals)
        for key in TIME_FIELDS:
            original = originals.get(f"{where}.{key}")
            if isinstance(original, str):
                data[key] = original
    return data
