"""AgentScope Python 2.x: `Msg.model_dump(mode="json")`, read only.

Blocks are rewritten into their 1.x shape (`tool_call` -> `tool_use`, media
`data` -> image/audio/video) with every other key kept as an extra key.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import ContentBlock, Msg
from ..errors import MessageFormatError
from ..message._codec import block_from_dict
from ..message.helpers import new_timestamp
from ._common import (
    optional_str,
    read_head,
    rebuild,
    set_extras,
    set_metadata,
    set_usage,
    type_name,
    with_output,
)

__all__ = ["AS2_BLOCK_TYPES", "AS2_TOP_KEYS", "AS2_USAGE_KEYS", "from_agentscope2"]

_AS2_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "created_at", "usage"})
AS2_TOP_KEYS = ("created_at", "finished_at", "finished_reason", "structured_output", "error")
AS2_BLOCK_TYPES = frozenset({"tool_call", "data", "hint"})
_AS2_USAGE = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_input_tokens", "cache_read_input_tokens"),
    ("cache_creation_input_tokens", "cache_creation_input_tokens"),
)
AS2_USAGE_KEYS = frozenset(key for key, _ in _AS2_USAGE)


def _as2_media_kind(source: Any) -> str | None:
    """`image`, `audio` or `video` for a data block's source, else None."""
    if not isinstance(source, Mapping):
        return None
    media_type = source.get("media_type")
    if not isinstance(media_type, str):
        return None
    kind = media_type.split("/", 1)[0].strip().lower()
    return kind if kind in {"image", "audio", "video"} else None


def _as2_source(source: Mapping[str, Any]) -> dict[str, Any]:
    """A 2.x source in 1.x key order (2.x writes `data` before `media_type`)."""
    kind = source.get("type")
    first = ("type", "media_type", "data") if kind == "base64" else ("type", "url", "media_type")
    return rebuild({k: source[k] for k in first if k in source}, source, set(first))


def _as2_tool_call(data: Mapping[str, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "tool_use"}
    out.update({key: data[key] for key in ("id", "name") if key in data})
    raw = data.get("input")
    if isinstance(raw, str):
        try:
            parsed = _json.loads(raw)
        except MessageFormatError:
            parsed = None
        out["input"] = parsed if isinstance(parsed, dict) else {}
        out["raw_input"] = raw
    elif isinstance(raw, Mapping):
        out["input"] = raw
    else:
        raise MessageFormatError(f"{path}.input", f"expected a JSON string, got {type_name(raw)}")
    return rebuild(out, data, {"type", "id", "name", "input"})


# 2.x blocks whose keys are put in 1.x order (modelled keys first, then the
# rest as extra keys, so that no `key_order` is needed).
_AS2_FIRST: dict[str, tuple[str, ...]] = {
    "text": ("type", "text"),
    "thinking": ("type", "thinking", "signature"),
    "tool_result": ("type", "id", "name", "output", "state"),
}


def _as2_block(item: Any, path: str) -> ContentBlock | None:
    if not isinstance(item, Mapping):
        raise MessageFormatError(path, f"expected a block object, got {type_name(item)}")
    kind = item.get("type")
    if kind == "tool_call":
        return block_from_dict(_as2_tool_call(item, path), path)
    if kind == "data":
        media = _as2_media_kind(item.get("source"))
        if media is None:
            return block_from_dict(item, path)
        data = {"type": media, "source": _as2_source(item["source"])}
        return block_from_dict(rebuild(data, item, {"type", "source"}), path)
    first = _AS2_FIRST.get(kind) if isinstance(kind, str) else None
    if first is None:
        return block_from_dict(item, path)
    data = rebuild({k: item[k] for k in first if k in item}, item, set(first))
    if kind == "tool_result":
        return with_output(data, path, _as2_block)
    return block_from_dict(data, path)


def from_agentscope2(data: Mapping[str, Any]) -> Msg:
    # 2.x ids are uuid4 hex strings.
    msg = read_head(data, any_case=True, read_block=_as2_block, new_id=lambda: uuid.uuid4().hex)
    set_metadata(msg, data.get("metadata"))
    created_at = optional_str(data, "created_at")
    msg.timestamp = created_at or optional_str(data, "timestamp") or new_timestamp()
    set_usage(msg, data.get("usage"), _AS2_USAGE)
    set_extras(msg, data, _AS2_MSG_KEYS | ({"timestamp"} if created_at is None else set()))
    return msg
