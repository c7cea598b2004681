"""agentscope-java: its Jackson JSON (`io.agentscope.core.message`), read and written."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    Msg,
    OpaqueBlock,
    Role,
    ToolResultBlock,
)
from ..errors import MessageFormatError
from ..message._codec import block_from_dict, block_to_dict, unwrap
from ._common import (
    ANY_CASE_ROLES,
    RESULT_STATES,
    is_canonical_b64,
    optional_str,
    read_role,
    required,
    set_content,
    set_extras,
    set_metadata,
    set_usage,
    type_name,
    with_output,
)

__all__ = ["ISO_INSTANT", "JAVA_MEDIA_KEYS", "JAVA_USAGE_KEYS", "from_java", "to_java"]

_JAVA_ROLE_NAMES = {
    Role.ROLE_USER: "USER",
    Role.ROLE_ASSISTANT: "ASSISTANT",
    Role.ROLE_SYSTEM: "SYSTEM",
    Role.ROLE_TOOL: "TOOL",
}
_JAVA_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "timestamp", "usage"})
# The DashScope media knobs of agentscope-java's ImageBlock and VideoBlock.
JAVA_MEDIA_KEYS: dict[str, tuple[str, ...]] = {
    "image": ("min_pixels", "max_pixels"),
    "video": ("fps", "max_frames", "min_pixels", "max_pixels", "total_pixels"),
}
_TOOL_CALL_STATES = frozenset({"pending", "asking", "allowed", "submitted", "finished"})
ISO_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)",
    re.ASCII | re.IGNORECASE,
)
# (JSON key, `Usage` field). `time` is a float, the rest are integer counts.
_JAVA_USAGE = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cachedTokens", "cache_read_input_tokens"),
    ("time", "time_seconds"),
)
JAVA_USAGE_KEYS = frozenset(key for key, _ in _JAVA_USAGE) | {"totalTokens"}


def _java_state(value: Any, known: Any) -> Any:
    """A state value in lowercase when it is a known state in any case."""
    if isinstance(value, str) and value.lower() in known:
        return value.lower()
    return value


# How each agentscope-java block key reads: a rule turns one (key, value) into
# the (key, value) pairs of the 1.x-shaped dict, in place, so the block keeps
# its layout (`key_order` records it).
_Pairs = list[tuple[str, Any]]
_Rule = Callable[[str, Any, Mapping[str, Any]], _Pairs]


def _null_as(default: Any) -> _Rule:
    def rule(key: str, value: Any, data: Mapping[str, Any]) -> _Pairs:
        return [(key, default if value is None else value)]

    return rule


def _drop_null(key: str, value: Any, data: Mapping[str, Any]) -> _Pairs:
    return [] if value is None else [(key, value)]


def _state_in(known: Any) -> _Rule:
    def rule(key: str, value: Any, data: Mapping[str, Any]) -> _Pairs:
        return [] if value is None else [(key, _java_state(value, known))]

    return rule


def _raw_content(key: str, value: Any, data: Mapping[str, Any]) -> _Pairs:
    """A tool_use `content` (the raw argument text) is 1.x's `raw_input`."""
    if value is None:
        return []
    if isinstance(value, str) and "raw_input" not in data:
        return [("raw_input", value)]
    return [(key, value)]


def _tool_metadata(key: str, value: Any, data: Mapping[str, Any]) -> _Pairs:
    """Gemini's `thoughtSignature` moves out of a tool_use's metadata."""
    if value is None:
        return []
    if isinstance(value, Mapping) and "thought_signature" not in data:
        signature = value.get("thoughtSignature")
        if is_canonical_b64(signature):
            rest = {k: v for k, v in value.items() if k != "thoughtSignature"}
            # A metadata that held only the signature moved entirely.
            return [("thought_signature", signature)] + ([(key, rest)] if rest else [])
    return [(key, value)]


def _source(key: str, value: Any, data: Mapping[str, Any]) -> _Pairs:
    """A URL source's `mime_type` is `media_type` (URLSource is NON_NULL)."""
    if not isinstance(value, Mapping):
        return [(key, value)]
    rename = value.get("type") == "url" and "media_type" not in value
    source = {
        ("media_type" if rename and k == "mime_type" else k): v
        for k, v in value.items()
        if not (k == "mime_type" and v is None)
    }
    return [(key, source)]


_KNOBS = dict.fromkeys(JAVA_MEDIA_KEYS["video"], _drop_null)
_FROM_JAVA: dict[str, dict[str, _Rule]] = {
    "text": {"text": _null_as("")},
    "thinking": {"thinking": _null_as(""), "metadata": _drop_null},
    "tool_use": {
        "id": _null_as(""),
        "name": _null_as(""),
        "input": _null_as({}),
        "content": _raw_content,
        "metadata": _tool_metadata,
        "state": _state_in(_TOOL_CALL_STATES),
    },
    "tool_result": {
        "id": _null_as(""),
        "name": _null_as(""),
        "metadata": _drop_null,
        "state": _state_in(RESULT_STATES),
    },
    "image": {"source": _source, "min_pixels": _drop_null, "max_pixels": _drop_null},
    "audio": {"source": _source},
    "video": {"source": _source, **_KNOBS},
}
# What agentscope-java holds for a missing key that 1.x requires.
_JAVA_DEFAULTS: dict[str, dict[str, Any]] = {
    "text": {"text": ""},
    "thinking": {"thinking": ""},
    "tool_use": {"id": "", "name": "", "input": {}},
    "tool_result": {"id": "", "name": "", "output": None},
}


def _from_java_block(kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """An agentscope-java block dict as the 1.x-shaped dict it means."""
    rules = _FROM_JAVA[kind]
    out: dict[str, Any] = {}
    for key, value in data.items():
        rule = rules.get(key)
        out.update(rule(key, value, data) if rule else [(key, value)])
    for key, default in _JAVA_DEFAULTS.get(kind, {}).items():
        out.setdefault(key, default)
    return out


def _java_block(item: Any, path: str) -> ContentBlock | None:
    if item is None:
        # agentscope-java drops null blocks.
        return None
    if not isinstance(item, Mapping):
        raise MessageFormatError(path, f"expected a block object, got {type_name(item)}")
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in _FROM_JAVA:
        return block_from_dict(item, path)
    data = _from_java_block(kind, item)
    if kind == "tool_result":
        return with_output(data, path, _java_block)
    return block_from_dict(data, path)


def from_java(data: Mapping[str, Any]) -> Msg:
    msg = Msg()
    if (msg_id := optional_str(data, "id")) is not None:
        msg.id = msg_id
    if (name := optional_str(data, "name")) is not None:
        msg.name = name
    msg.role = read_role(required(data, "role"), ANY_CASE_ROLES, any_case=True)
    content = data.get("content")
    set_content(msg, [] if content is None else content, _java_block)
    set_metadata(msg, data.get("metadata"))
    msg.timestamp = optional_str(data, "timestamp") or ""
    set_usage(msg, data.get("usage"), _JAVA_USAGE)
    set_extras(msg, data, _JAVA_MSG_KEYS)
    return msg


def _known_state(value: Any, known: Any) -> str | None:
    """A known state value in lowercase, else None."""
    state = _java_state(value, known)
    return state if isinstance(state, str) and state in known else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _object_or(value: Any, default: dict[str, Any] | None) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else default


def _to_java_source(source: Any) -> Any:
    if not isinstance(source, Mapping):
        return source
    if source.get("type") == "base64":
        return {
            "type": "base64",
            "media_type": source.get("media_type"),
            "data": source.get("data"),
        }
    out = {"type": source.get("type"), "url": source.get("url")}
    if (media_type := _str_or_none(source.get("media_type"))) is not None:
        out["mime_type"] = media_type
    return out


def _to_java_block(block: ContentBlock) -> dict[str, Any]:
    inner = unwrap(block)
    if isinstance(inner, OpaqueBlock):
        value: dict[str, Any] = _json.loads(inner.block_json)
        return value
    data = block_to_dict(inner)
    kind = data["type"]
    if kind == "text":
        return {"type": "text", "text": data["text"]}
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": data["thinking"],
            "metadata": _object_or(data.get("metadata"), None),
        }
    if kind == "tool_use":
        metadata = _object_or(data.get("metadata"), {}) or {}
        if (signature := _str_or_none(data.get("thought_signature"))) is not None:
            metadata = {"thoughtSignature": signature, **metadata}
        state = _known_state(data.get("state"), _TOOL_CALL_STATES)
        return {
            "type": "tool_use",
            "id": data["id"],
            "name": data["name"],
            "input": data["input"],
            "content": _str_or_none(data.get("raw_input")),
            "metadata": metadata,
            "state": state or "pending",
        }
    if isinstance(inner, ToolResultBlock):
        which = inner.WhichOneof("output")
        output: list[dict[str, Any]] = []
        if which == "text":
            output = [{"type": "text", "text": inner.text}]
        elif which == "blocks":
            output = [_to_java_block(b) for b in inner.blocks.items]
        state = _known_state(data.get("state"), RESULT_STATES)
        return {
            "type": "tool_result",
            "id": data["id"],
            "name": data["name"],
            "output": output,
            "metadata": _object_or(data.get("metadata"), {}),
            "state": state or "running",
        }
    out: dict[str, Any] = {"type": kind, "source": _to_java_source(data["source"])}
    for key in JAVA_MEDIA_KEYS.get(kind, ()):
        if data.get(key) is not None:
            out[key] = data[key]
    return out


def _java_role(msg: Msg) -> str:
    if msg.role not in _JAVA_ROLE_NAMES:
        raise MessageFormatError("role", "unset")
    if msg.role == Role.ROLE_SYSTEM and any(
        b.WhichOneof("block") == "tool_result" for b in msg.blocks.items
    ):
        return "TOOL"
    return _JAVA_ROLE_NAMES[msg.role]


def _to_java_usage(msg: Msg) -> dict[str, Any] | None:
    if not msg.HasField("usage"):
        return None
    usage = msg.usage
    inputs = usage.input_tokens if usage.HasField("input_tokens") else 0
    outputs = usage.output_tokens if usage.HasField("output_tokens") else 0
    cached = usage.cache_read_input_tokens if usage.HasField("cache_read_input_tokens") else 0
    return {
        "inputTokens": inputs,
        "outputTokens": outputs,
        "cachedTokens": cached,
        "time": usage.time_seconds if usage.HasField("time_seconds") else 0.0,
        "totalTokens": inputs + outputs,
    }


def to_java(msg: Msg) -> dict[str, Any]:
    role = _java_role(msg)
    if msg.WhichOneof("content") == "text":
        content = [{"type": "text", "text": msg.text}]
    else:
        content = [_to_java_block(b) for b in msg.blocks.items]
    metadata: dict[str, Any] = {}
    if msg.HasField("metadata_json"):
        value = _json.loads(msg.metadata_json, "metadata")
        if not isinstance(value, dict):
            raise MessageFormatError(
                "metadata", f"agentscope-java needs an object, got {type_name(value)}"
            )
        # Msg's constructor drops entries whose value is null.
        metadata = {k: v for k, v in value.items() if v is not None}
    return {
        "id": msg.id if msg.HasField("id") else None,
        "name": msg.name if msg.HasField("name") else None,
        "role": role,
        "content": content,
        "metadata": metadata,
        "timestamp": msg.timestamp or None,
        "usage": _to_java_usage(msg),
    }
