"""Tool-argument JSON as AgentScope reads it: repaired, never shrinking in streams.

AgentScope uses `json_repair` (pinned to the version whose output the golden
data records) with `stream_stable=True`; reproducing its results means using
the same library the same way.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from json_repair import repair_json

from .._json import MAX_DEPTH
from ..errors import ParseError

__all__ = ["loads_streaming", "loads_with_repair"]

logger = logging.getLogger("agentscope_proto.parse")


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?')
_BRACKET = re.compile(r"[\[\]{}]")


def _check_depth(text: str) -> None:
    """Refuse arguments nested deeper than `MAX_DEPTH`: parsing them is fine, but
    everything after (repair, snapshot copies, formatters) walks them recursively."""
    # Counting brackets is C-speed and settles almost every input. (Callers may
    # pass what a response held instead of text; repair turns that into {}.)
    if not isinstance(text, str) or text.count("{") + text.count("[") <= MAX_DEPTH:
        return
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise ParseError("arguments", f"tool arguments nested deeper than {MAX_DEPTH} levels")


def loads_with_repair(text: str) -> dict[str, Any]:
    """AgentScope's `_json_loads_with_repair`: a dict, or `{}` when none can be had."""
    _check_depth(text)
    try:
        result = json.loads(repair_json(text, stream_stable=True))
    except Exception:  # json_repair raises assorted errors on odd input
        result = None
    if isinstance(result, dict):
        return result
    logger.warning("failed to load a JSON object from %.100r; using {}", text)
    return {}


def loads_streaming(text: str, last: dict[str, Any] | None = None) -> dict[str, Any]:
    """AgentScope's `_parse_streaming_json_dict`: parse a partial argument string
    without letting the result shrink below `last`."""
    text = text or "{}"
    _check_depth(text)
    try:
        result = json.loads(text)
    except ValueError:
        result = None
    if isinstance(result, dict):
        return result
    repaired = loads_with_repair(text)
    last = last or {}
    if len(json.dumps(last)) > len(json.dumps(repaired)):
        return last
    return repaired
