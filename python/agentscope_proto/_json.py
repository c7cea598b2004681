"""Lossless JSON text for the schema's `*_json` fields.

Python's `json` module already keeps what `google.protobuf.Struct` loses:
integers stay `int` with every digit, floats stay `float` (`-0.0` included),
object keys keep their order and `null` stays distinct from an absent key. This
module fixes the dialect used on the wire: compact, UTF-8, and strict (no
`NaN`/`Infinity`, which other languages' parsers reject).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import MessageFormatError

__all__ = ["dumps", "loads"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def dumps(value: Any, path: str = "$") -> str:
    """Encode `value` as compact JSON text; `path` names it in errors."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MessageFormatError(path, f"not JSON-serializable: {exc}") from None


def loads(text: str | bytes, path: str = "$") -> Any:
    """Decode JSON text; `path` names the field in errors."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return _DECODER.decode(text)
    except UnicodeDecodeError as exc:
        raise MessageFormatError(path, f"invalid UTF-8: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise MessageFormatError(path, f"invalid JSON: {exc.msg} at char {exc.pos}") from None
    except (ValueError, RecursionError) as exc:
        raise MessageFormatError(path, f"invalid JSON: {exc}") from None
