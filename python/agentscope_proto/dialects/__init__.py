"""`Msg` from and to the JSON dicts AgentScope already writes.

Three dialects: `"agentscope"` (Python 1.x `Msg.to_dict()`, the default, read
and written), `"java"` (agentscope-java's Jackson JSON, read and written) and
`"agentscope2"` (Python 2.x `model_dump(mode="json")`, read and written). One
module per dialect; `detect` picks one per message. The rules of each, and how
a message converts between them, are in docs/dialects.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, get_args

from google.protobuf.message import DecodeError

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..errors import MessageFormatError
from ..message._nesting import check_nesting
from ._common import type_name
from .agentscope import from_agentscope, to_agentscope
from .agentscope2 import from_agentscope2, to_agentscope2
from .detect import Dialect, detect_dialect
from .java import from_java, to_java

__all__ = ["Dialect", "detect_dialect", "from_dict", "from_json", "to_dict", "to_json"]

_DIALECTS: tuple[str, ...] = get_args(Dialect)
_READERS: dict[str, Callable[[Mapping[str, Any]], Msg]] = {
    "agentscope": from_agentscope,
    "java": from_java,
    "agentscope2": from_agentscope2,
}
_WRITERS: dict[str, Callable[[Msg], dict[str, Any]]] = {
    "agentscope": to_agentscope,
    "java": to_java,
    "agentscope2": to_agentscope2,
}


def _check_dialect(dialect: Any, allowed: Mapping[str, Any]) -> None:
    if dialect not in allowed:
        raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(_DIALECTS)}")


def from_dict(data: Mapping[str, Any], dialect: Dialect | None = None) -> Msg:
    """A `Msg` from an AgentScope message dict.

    `dialect` is `"agentscope"` (Python 1.x `Msg.to_dict()`), `"java"`
    (agentscope-java's Jackson JSON), `"agentscope2"` (Python 2.x
    `model_dump(mode="json")`) or None to detect it (`detect_dialect`). A
    missing id or timestamp is generated as that AgentScope does; the Java and
    2.x dialects refuse what agentscope-java's reader and 2.x's
    `model_validate` refuse. Raises `MessageFormatError` naming the offending
    path.
    """
    if dialect is not None:
        _check_dialect(dialect, _READERS)
    if not isinstance(data, Mapping):
        raise MessageFormatError("", f"expected a message object, got {type_name(data)}")
    try:
        msg = _READERS[dialect or detect_dialect(data)](data)
    except (RecursionError, DecodeError):
        # DecodeError: protobuf copies a nested block through its decoder,
        # which refuses messages nested past 100 levels.
        raise MessageFormatError("content", "blocks nested too deeply") from None
    except UnicodeEncodeError:
        # A protobuf string field refuses a lone surrogate (Python's json
        # decodes "\\ud83e" to one); the JSON fields say where, these cannot.
        raise MessageFormatError(
            "", "a string contains a lone surrogate (not valid Unicode)"
        ) from None
    check_nesting(msg)
    return msg


def to_dict(msg: Msg, dialect: Dialect = "agentscope") -> dict[str, Any]:
    """The message as AgentScope 1.x's `Msg.to_dict()`, agentscope-java's
    Jackson or AgentScope 2.x's `model_dump(mode="json")` writes it.

    In the `"agentscope"` dialect the dict omits `invocation_id`, usage and
    the fields AgentScope 1.x does not know, like AgentScope; they stay on the
    `Msg`. `"java"` and `"agentscope2"` write what agentscope-java and 2.x
    write, map what the target says differently, and raise
    `MessageFormatError` (naming the path and the target's rule) for what it
    would refuse (docs/dialects.md has the conversion table).
    """
    _check_dialect(dialect, _WRITERS)
    return _WRITERS[dialect](msg)


def to_json(msg: Msg, dialect: Dialect = "agentscope", **dumps_kwargs: Any) -> str:
    """`to_dict` as JSON text (`json.dumps` keyword arguments pass through)."""
    dumps_kwargs.setdefault("ensure_ascii", False)
    return json.dumps(to_dict(msg, dialect), **dumps_kwargs)


def from_json(text: str | bytes, dialect: Dialect | None = None) -> Msg:
    """`from_dict` of JSON text."""
    return from_dict(_json.loads(text, ""), dialect)
