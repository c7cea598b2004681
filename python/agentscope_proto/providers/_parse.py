"""What every response parser shares: checked reads of the response JSON, the
provider's error body, and tool-call arguments read as AgentScope reads them
(repaired with `json_repair`, never shrinking in a stream).

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
from ..errors import ParseError, ProviderError
from ..results import copy_json

__all__ = [
    "StreamedInputs",
    "expect",
    "loads_streaming",
    "loads_with_repair",
    "raise_for_error_body",
    "repair_tool_inputs",
    "streamed_tool_use",
]

Block = dict[str, Any]

logger = logging.getLogger("agentscope_proto.parse")


def expect(value: Any, kind: type | tuple[type, ...], path: str) -> Any:
    """`value` if it is of `kind`, else a `ParseError` naming `path`."""
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ParseError(path, f"expected {names}, got {type(value).__name__}")
    return value


def raise_for_error_body(provider: str, response: dict[str, Any]) -> None:
    """Raise `ProviderError` if `response` is the provider's error body.

    Covers `{"error": {"type"/"code", "message"}}` (OpenAI-style and Anthropic's
    `{"type": "error", "error": {...}}`) and `{"error": "text"}`.
    """
    error = response.get("error")
    if error is None or error == {}:
        return
    if isinstance(error, dict):
        # Gemini sends both `code: 400` and `status: "INVALID_ARGUMENT"`; the
        # status says more.
        kind = error.get("type") or error.get("status") or error.get("code") or "error"
        raise ProviderError(provider, str(kind), str(error.get("message", error)))
    raise ProviderError(provider, "error", str(error))


# -- tool arguments ------------------------------------------------------------------------

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
    return _as_object(_repaired(text, _untried(text)), text)


def loads_streaming(text: str, last: dict[str, Any] | None = None) -> dict[str, Any]:
    """AgentScope's `_parse_streaming_json_dict`: parse a partial argument string
    without letting the result shrink below `last`."""
    text = text or "{}"
    _check_depth(text)
    result = _untried(text)
    if isinstance(result, dict):
        return result
    repaired = _as_object(_repaired(text, result), text)
    last = last or {}
    if len(json.dumps(last)) > len(json.dumps(repaired)):
        return last
    return repaired


def _as_object(value: Any, text: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    logger.warning("failed to load a JSON object from %.100r; using {}", text)
    return {}


# `json.loads` failed (or was not tried: the text is no str).
_UNREAD: Any = object()


def _untried(text: Any) -> Any:
    """`json.loads(text)`, or `_UNREAD`."""
    if type(text) is not str:
        return _UNREAD
    try:
        return json.loads(text)
    except ValueError:
        return _UNREAD


def _repaired(text: Any, loaded: Any) -> Any:
    """What `json.loads(repair_json(text, stream_stable=True))` gives (None where
    that raises), given `loaded = _untried(text)`.

    Valid JSON comes back from json_repair as `json.dumps(json.loads(text))`,
    which reads back equal. A partial object of plain members (`_partial`) is
    completed here as json_repair completes it, without its character-by-
    character parser (half of a stream's parse time otherwise)."""
    if loaded is not _UNREAD:
        return loaded
    if type(text) is str:
        partial = _partial(text)
        if partial is not _UNREAD:
            return partial
    try:
        return json.loads(repair_json(text, stream_stable=True))
    except Exception:  # json_repair raises assorted errors on odd input
        return None


# A partial argument object as models stream it: members whose keys are plain
# text and whose values are numbers, literals and strings with the escapes
# json_repair keeps as JSON does, then what the stream cut off. Anything else
# (nesting, brackets or commas in a finished string, `\\` or `\/`, ...) meets
# a json_repair heuristic and goes to json_repair itself.
# tests/providers/test_parse_partial.py holds this to json_repair's results.
_WS = r"[ \t\n\r]*"
_KEY = r'"[^"\\\x00-\x1f]*"'
_PLAIN_STRING = r'"(?:[^"\\\x00-\x1f{}\[\],]|\\["bfnrt]|\\u[0-9a-fA-F]{4})*"'
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_MEMBER = rf"{_KEY}{_WS}:{_WS}(?:{_PLAIN_STRING}|{_NUMBER}|true|false|null){_WS}"
_MEMBERS = re.compile(rf"\{{{_WS}({_MEMBER}(?:,{_WS}{_MEMBER})*)?")
# What follows the last comma: part of a key (dropped), or a key, its colon,
# then part of a string, an integer, a literal's first letters or a lone minus.
_CUT = re.compile(
    rf'(?:"[^"\\\x00-\x1f:]*|"([^"\\\x00-\x1f]*)"{_WS}(?:(:){_WS}(?:"([^"\\\x00-\x1f{{}}\[\]]*)'
    rf"|(-?(?:0|[1-9][0-9]*))|(t|tr|tru|f|fa|fal|fals|n|nu|nul|-))?)?)?"
)
# The first key cut off (`{"ci`, `{"city"`): json_repair reads a list of it.
_FIRST_KEY = re.compile(rf'"([^"\\\x00-\x1f:{{}}\[\]]+)"?{_WS}')


def _partial(text: str) -> Any:
    """json_repair's value for a cut-off object of plain members, else `_UNREAD`."""
    head = _MEMBERS.match(text)
    if head is None:
        return _UNREAD
    rest = text[head.end() :]
    members = head.group(1) is not None
    if members and rest:
        if rest[0] != ",":
            return _UNREAD
        rest = rest[1:].lstrip(" \t\n\r")
    elif not members and (first := _FIRST_KEY.fullmatch(rest)):
        return [first.group(1)]
    cut = _CUT.fullmatch(rest)
    if cut is None:
        return _UNREAD
    try:
        value = json.loads(head.group() + "}")
    except ValueError:  # an integer past Python's digit limit
        return _UNREAD
    key, colon, string, number, letters = cut.groups()
    if colon is None:
        # Nothing after the comma, or a key without its colon: dropped.
        return value if members or not rest else _UNREAD
    value[key] = (
        string
        if string is not None
        else int(number)
        if number is not None
        else letters
        if letters not in (None, "-")
        else ""
    )
    return value


# -- streamed tool calls -------------------------------------------------------------------


class StreamedInputs:
    """The last input parsed per tool call *id* (AgentScope keys it so), and the
    argument text it was parsed from."""

    __slots__ = ("parsed", "raw")

    def __init__(self) -> None:
        self.parsed: dict[str, dict[str, Any]] = {}
        self.raw: dict[str, str] = {}


def streamed_tool_use(
    call_id: str,
    name: str,
    raw: str | None,
    last_inputs: StreamedInputs,
    parse: bool,
) -> Block:
    """A tool call in a stream snapshot, as AgentScope's chat models build it.

    With `parse` (`stream_tool_parsing`) the partial arguments are repaired,
    never shrinking below the last input parsed for the same call id (AgentScope
    keys them by id, so calls sharing an id share it); without, the input stays
    `{}` until the stream ends (see `repair_tool_inputs`).
    """
    parsed: dict[str, Any] = {}
    if parse:
        text = raw or ""
        last = last_inputs.parsed.get(call_id)
        if last is not None and last_inputs.raw.get(call_id) == text:
            # The same text against the input it gave: AgentScope's parse would
            # give that input again, so json_repair need not run. A copy, as a
            # fresh parse would be (callers may change the snapshot they get).
            parsed = copy_json(last)
        else:
            parsed = loads_streaming(text, last)
        last_inputs.parsed[call_id] = parsed
        last_inputs.raw[call_id] = text
    return {"type": "tool_use", "id": call_id, "name": name, "input": parsed, "raw_input": raw}


def repair_tool_inputs(content: list[Block]) -> dict[str, Any] | None:
    """AgentScope's extra final snapshot without `stream_tool_parsing`: every tool
    input parsed from its raw text at last, in place. Returns the last one (the
    structured output, when the request asked for one)."""
    last = None
    for block in content:
        if block["type"] == "tool_use":
            block["input"] = last = loads_with_repair(str(block.get("raw_input") or "{}"))
    return last
