"""Lossless JSON text for the schema's `*_json` fields.

Python's `json` module already keeps what `google.protobuf.Struct` loses:
integers stay `int` with every digit, floats stay `float` (`-0.0` included),
object keys keep their order and `null` stays distinct from an absent key. This
module fixes the dialect used on the wire: compact, UTF-8, and strict (no
`NaN`/`Infinity`, which other languages' parsers reject; no duplicate object
keys, which parsers resolve differently; no lone surrogates like `"\\ud83e"`,
which are not Unicode and which protobuf string fields refuse) and at most
`MAX_DEPTH` levels deep.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from . import _core
from .errors import MessageFormatError

__all__ = ["MAX_DEPTH", "check_depth", "dumps", "dumps_stored", "invalid_json", "loads"]

# Arrays and objects nested deeper than this are refused, in both directions.
# Untrusted JSON reaches code that walks it recursively (copy.deepcopy of stream
# snapshots, json_repair, the formatters), which needs 2-4 stack frames a level
# against Python's default limit of 1000; 128 levels (serde_json's default)
# leaves room for that and is far beyond any real message or response.
MAX_DEPTH = 128

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
# A \\u escape of a surrogate: only such text can decode to a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = "contains a lone surrogate (not valid Unicode)"


def _check_unicode(text: str, path: str) -> None:
    # str.isascii() is O(1); encoding checks the rest at C speed.
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise MessageFormatError(path, _LONE_SURROGATE) from None


def invalid_json(exc: json.JSONDecodeError) -> str:
    """The one wording of a JSON syntax error, wherever the text came from
    (a request field, a response, a CLI file)."""
    return f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


def _too_deep_message(limit: int) -> str:
    return f"nested deeper than {limit} levels (the cap on any JSON value, docs/dialects.md)"


def check_depth(value: Any, path: str = "$", limit: int = MAX_DEPTH) -> None:
    """Raise `MessageFormatError` if `value` nests lists/dicts deeper than `limit`.

    Iterative, so it cannot itself run out of stack.
    """
    if not isinstance(value, (dict, list)):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        children = current.values() if isinstance(current, dict) else current
        if depth > limit:
            raise MessageFormatError(path, _too_deep_message(limit))
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def _check_text(text: str, value: Any, path: str) -> None:
    # A text with no more brackets than the limit cannot nest deeper than it;
    # counting them is far cheaper than walking the value, and almost always
    # settles it.
    if text.count("[") + text.count("{") > MAX_DEPTH:
        check_depth(value, path)


def dumps(value: Any, path: str = "$") -> str:
    """Encode `value` as compact JSON text; `path` names it in errors."""
    try:
        text = _ENCODER.encode(value)
    except RecursionError:
        raise MessageFormatError(path, _too_deep_message(MAX_DEPTH)) from None
    except (TypeError, ValueError) as exc:
        raise MessageFormatError(path, f"not JSON-serializable: {exc}") from None
    _check_text(text, value, path)
    _check_unicode(text, path)
    return text


def dumps_stored(value: Any, path: str = "$") -> str:
    """`dumps` for text only this package reads back (`loads`), where any
    spelling of the value will do: orjson's where it writes one (a tenth of
    the time), `dumps`'s otherwise (an integer past 64 bits, a key that is no
    string) and its refusals (too deep, a lone surrogate). A NaN or infinity
    is written null: the value must have none (a pydantic JSON-mode dump has
    none: it writes them null itself)."""
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return dumps(value, path)
    _check_text(text, value, path)
    return text


def loads(text: str | bytes, path: str = "$") -> Any:
    """Decode JSON text; `path` names the field in errors."""
    # The compiled core's reader takes any text it can decide exactly as the
    # strict decoder below would (no constant, duplicate key, lone surrogate
    # or invalid UTF-8; at most 100 levels, so the depth check holds): two to
    # three times faster than either path here.
    decided = _core.loads(text)
    if decided is not None:
        return decided[0]
    # Fast path: orjson decodes the text, and the text being exactly what
    # orjson writes back for the value proves it held no duplicate key (a
    # dropped member would make the text longer), no integer orjson turned
    # into a float and no constant; the depth check follows as below. That is
    # the case for the text this package writes (`dumps` is orjson's format
    # but for rare float spellings), so it is every `*_json` field it made.
    # Any other text (spaces, escaped non-ASCII, errors) takes the strict
    # decoder, which decides it exactly as before. Text with `": ` (as
    # `json.dumps` and most pretty-printed provider responses write it) is
    # not compact, so it goes there without the futile attempt.
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if '": ' in text:
            return _strict_loads(text, path)
        value = orjson.loads(text)
        if orjson.dumps(value) == text.encode("utf-8"):
            _check_text(text, value, path)
            return value
    except (orjson.JSONDecodeError, UnicodeError):
        pass
    return _strict_loads(text, path)


def _strict_loads(text: str | bytes, path: str) -> Any:
    if not text:
        # An empty file or an unset string field: say so, not "Expecting value".
        raise MessageFormatError(path, "invalid JSON: empty text")
    if isinstance(text, str):
        _check_unicode(text, path)
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = _DECODER.decode(text)
    except UnicodeDecodeError as exc:
        raise MessageFormatError(path, f"invalid UTF-8: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise MessageFormatError(path, invalid_json(exc)) from None
    except RecursionError:
        raise MessageFormatError(path, _too_deep_message(MAX_DEPTH)) from None
    except ValueError as exc:
        raise MessageFormatError(path, f"invalid JSON: {exc}") from None
    _check_text(text, value, path)
    if _SURROGATE_ESCAPE.search(text):
        # Pairs of escapes decode to one valid character; a lone one does not.
        _check_unicode(_ENCODER.encode(value), path)
    return value
