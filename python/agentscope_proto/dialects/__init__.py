"""`Msg` from and to the JSON dicts AgentScope already writes.

Three dialects: `"agentscope"` (Python 1.x `Msg.to_dict()`, the default, read
and written), `"java"` (agentscope-java's Jackson JSON, read and written) and
`"agentscope2"` (Python 2.x `model_dump(mode="json")`, read only). One module
per dialect; `detect` picks one per message. The rules of each are in
docs/dialects.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, get_args

from google.protobuf.message import DecodeError

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..errors import MessageFormatError
from ._common import type_name
from .agentscope import from_agentscope, to_agentscope
from .agentscope2 import from_agentscope2
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
}


def _check_dialect(dialect: Any, allowed: Mapping[str, Any]) -> None:
    if dialect not in allowed:
        if dialect in _DIALECTS:
            raise ValueError(f"dialect {dialect!r} is read-only; write 'agentscope' or 'java'")
        raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(allowed)}")


def from_dict(data: Mapping[str, Any], dialect: Dialect | None = None) -> Msg:
    """A `Msg` from an AgentScope message dict.

    `dialect` is `"agentscope"` (Python 1.x `Msg.to_dict()`), `"java"`
    (agentscope-java's Jackson JSON), `"agentscope2"` (Python 2.x
    `model_dump(mode="json")`) or None to detect it (`detect_dialect`). In the
    1.x dialect a missing id or timestamp is generated as AgentScope does; the
    Java dialect refuses what agentscope-java's reader refuses. Raises
    `MessageFormatError` naming the offending path.
    """
    if dialect is not None:
        _check_dialect(dialect, _READERS)
    if not isinstance(data, Mapping):
        raise MessageFormatError("", f"expected a message object, got {type_name(data)}")
    try:
        return _READERS[dialect or detect_dialect(data)](data)
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


def to_dict(msg: Msg, dialect: Dialect = "agentscope") -> dict[str, Any]:
    """The message as AgentScope's `Msg.to_dict()` or agentscope-java's Jackson writes it.

    In the `"agentscope"` dialect the dict omits `invocation_id`, usage and
    top-level keys AgentScope 1.x does not know, like AgentScope; they stay on
    the `Msg`. `"java"` writes what agentscope-java writes and raises
    `MessageFormatError` (naming the path and Java's rule) for a message Java
    would refuse and no mapping keeps (docs/dialects.md). `"agentscope2"` is
    read-only.
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
