"""AgentScope Python 2.x: `Msg.model_dump(mode="json")`, read and written exactly.

Reading validates as 2.x's `Msg.model_validate` does (pydantic 2 in lax mode,
`_agentscope2_rules.py`: `"5"`, `7.0` and `true` are integers, a block without
`type` is the kind whose model uses most of its keys, missing ids and
timestamps are generated) and refuses what it refuses, naming the path and
the rule; unknown keys, which 2.x drops, are kept
(in `extra_json`) but not written back. Writing gives what `model_dump` gives
for the 2.x message holding the same content, and refuses, like 2.x's
validation, what a 2.x message cannot hold. The rules and the conversion table
of every dialect pair are in docs/dialects.md.

Blocks pass through the codec's dict shape (`message/_codec.py`), as in the
other dialects: 2.x `tool_call` is `tool_use` there (its `input` string the
`raw_input`), a `data` block of an image, audio or video is that media block,
and the thinking keys `redacted_thinking_data` and `reasoning_item_id` are the
typed `redacted_data` and `reasoning_id`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    ErrorType,
    FinishedReason,
    Msg,
    OpaqueBlock,
    Role,
    ToolResultBlock,
)
from ..errors import MessageFormatError
from ..message._codec import block_from_dict, block_to_dict, blocks_to_list, unwrap
from ..message._fields import BEHAVIORS, CALL_STATES, RESULT_STATES, load_object
from ._agentscope2_rules import (
    MISSING,
    Field,
    Tally,
    choice,
    fail,
    model,
    read_dict,
    read_int,
    read_opt_str,
    read_str,
    union,
)
from ._common import type_name
from ._url import normalize_url

__all__ = [
    "AS2_BLOCK_TYPES",
    "AS2_TOP_KEYS",
    "AS2_USAGE_KEYS",
    "block_from_agentscope2",
    "block_to_agentscope2",
    "from_agentscope2",
    "parts_from_agentscope2",
    "parts_to_agentscope2",
    "to_agentscope2",
]

AS2_TOP_KEYS = ("created_at", "finished_at", "finished_reason", "structured_output", "error")
AS2_BLOCK_TYPES = frozenset({"tool_call", "data", "hint"})
# (2.x usage key, `Usage` field), in 2.x's order.
_USAGE = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_input_tokens", "cache_read_input_tokens"),
    ("cache_creation_input_tokens", "cache_creation_input_tokens"),
)
AS2_USAGE_KEYS = frozenset(key for key, _ in _USAGE)
_MSG_KEYS = frozenset(
    {"name", "content", "role", "id", "metadata", "created_at", "usage", *AS2_TOP_KEYS}
)
_ROLES = {"user": Role.ROLE_USER, "assistant": Role.ROLE_ASSISTANT, "system": Role.ROLE_SYSTEM}
# What each role may hold (2.x's validator after the fields).
_ROLE_KINDS = {"user": frozenset({"text", "data"}), "system": frozenset({"text"})}
_FINISHED = {
    "completed": FinishedReason.FINISHED_REASON_COMPLETED,
    "interrupted": FinishedReason.FINISHED_REASON_INTERRUPTED,
    "exceed_max_iters": FinishedReason.FINISHED_REASON_EXCEED_MAX_ITERS,
    "error": FinishedReason.FINISHED_REASON_ERROR,
}
_FINISHED_NAMES = {number: name for name, number in _FINISHED.items()}
_ERROR_TYPES = {
    name.removeprefix("ERROR_TYPE_").lower(): number for name, number in ErrorType.items() if number
} | {"unknown": ErrorType.ERROR_TYPE_UNSPECIFIED}
_ERROR_NAMES = {number: name for name, number in _ERROR_TYPES.items()}
# 2.x thinking keys with a typed place under another name.
_THINKING_RENAMES = {"redacted_thinking_data": "redacted_data", "reasoning_item_id": "reasoning_id"}
_MEDIA_KINDS = ("image", "audio", "video")


# --- Reading -----------------------------------------------------------------


def _new_id() -> str:
    return uuid.uuid4().hex


def _new_timestamp() -> str:
    # 2.x's default factory.
    return datetime.now().isoformat()


_RULE: tuple[Field, ...] = (
    ("tool_name", read_str, MISSING),
    ("rule_content", read_opt_str, MISSING),
    ("behavior", choice(BEHAVIORS.numbers, "a permission behavior"), MISSING),
    ("source", read_str, MISSING),
)
# A source's declared keys but `type`; the union tries base64 first.
_SOURCES: dict[str, tuple[Field, ...]] = {
    "base64": (("data", read_str, MISSING), ("media_type", read_str, MISSING)),
    "url": (("url", read_str, MISSING), ("media_type", read_str, MISSING)),
}


def _rules(value: Any, path: str, tally: Tally | None = None) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise fail(path, f"expected a list, got {type_name(value)}")
    return [model(_RULE, item, f"{path}[{i}]", tally) for i, item in enumerate(value)]


def _with_url(kind: str, source: dict[str, Any], path: str) -> dict[str, Any]:
    """A source with its URL as 2.x's `AnyUrl` holds it (normalized)."""
    if kind == "url":
        try:
            source["url"] = normalize_url(source["url"])
        except ValueError as exc:
            raise fail(f"{path}.url", str(exc)) from None
    return {"type": kind, **{k: v for k, v in source.items() if k != "type"}}


def _source(value: Any, path: str, tally: Tally | None = None) -> dict[str, Any]:
    tally = tally or Tally()
    if not isinstance(value, Mapping):
        raise fail(path, f"expected a source object, got {type_name(value)}")
    kind = value.get("type", MISSING)
    if kind is MISSING:
        return union(tuple(_SOURCES), _SOURCES, value, path, tally, _with_url)
    if not isinstance(kind, str) or kind not in _SOURCES:
        raise fail(f"{path}.type", f"a source is 'base64' or 'url', got {kind!r}")
    return _with_url(kind, model(_SOURCES[kind], value, path, tally), path)


def _parts(value: Any, path: str, tally: Tally | None = None) -> Any:
    """A hint or a tool result's output: a string, or text and data blocks."""
    tally = tally or Tally()
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise fail(path, f"expected a string or a list of blocks, got {type_name(value)}")
    return [_block(item, f"{path}[{i}]", tally, _PARTS) for i, item in enumerate(value)]


_TIMES: tuple[Field, ...] = (
    ("created_at", read_str, _new_timestamp),
    ("finished_at", read_opt_str, None),
)
_PARTS = ("text", "data")
# Each block model's declared keys but `type`, in 2.x's order (the order
# `model_dump` writes them in). The union tries the models in this order.
_BLOCKS: dict[str, tuple[Field, ...]] = {
    "text": (("text", read_str, MISSING), ("id", read_str, _new_id), *_TIMES),
    "thinking": (("thinking", read_str, MISSING), ("id", read_str, _new_id), *_TIMES),
    "hint": (
        ("hint", _parts, MISSING),
        ("id", read_str, _new_id),
        ("source", read_opt_str, None),
        ("created_at", read_str, _new_timestamp),
        ("finished_at", read_opt_str, _new_timestamp),
    ),
    "tool_call": (
        ("id", read_str, MISSING),
        ("name", read_str, MISSING),
        ("input", read_str, MISSING),
        ("state", choice(CALL_STATES.numbers, "a tool call state"), "pending"),
        ("suggested_rules", _rules, list),
        *_TIMES,
    ),
    "tool_result": (
        ("id", read_str, MISSING),
        ("name", read_str, MISSING),
        ("output", _parts, MISSING),
        ("state", choice(RESULT_STATES.numbers, "a tool result state"), "running"),
        ("metadata", read_dict, dict),
        *_TIMES,
    ),
    "data": (
        ("id", read_str, _new_id),
        ("source", _source, MISSING),
        ("name", read_opt_str, None),
        *_TIMES,
    ),
}
_ALL_KINDS = tuple(_BLOCKS)


def _with_type(data: Mapping[str, Any]) -> Callable[[str, dict[str, Any], str], dict[str, Any]]:
    def build(kind: str, fields: dict[str, Any], path: str) -> dict[str, Any]:
        out = {"type": kind, **fields}
        if kind == "thinking":
            # The one model that keeps unknown keys, after its own, in their order.
            out.update((k, v) for k, v in data.items() if k not in out)
        return out

    return build


def _block(
    item: Any, path: str, tally: Tally, kinds: tuple[str, ...] = _ALL_KINDS
) -> dict[str, Any]:
    """One 2.x block, validated as 2.x's union of block models validates it."""
    if not isinstance(item, Mapping):
        raise fail(path, f"expected a block object, got {type_name(item)}")
    kind = item.get("type", MISSING)
    if kind is MISSING:
        # Every model defaults its `type`, so the union decides by the keys.
        return union(kinds, _BLOCKS, item, path, tally, _with_type(item))
    if not isinstance(kind, str) or kind not in kinds:
        raise fail(
            f"{path}.type", f"unknown block type {kind!r} here (expected one of {list(kinds)})"
        )
    tally.count += 1
    return _with_type(item)(kind, model(_BLOCKS[kind], item, path, tally), path)


def _call_input(raw: str) -> dict[str, Any]:
    """A tool call's arguments as a dict: the object its text holds, if the
    schema can hold it exactly, else `{}` (AgentScope's rule for unparsable
    arguments); the text itself is kept as `raw_input`."""
    try:
        value = _json.loads(raw, "input")
        if isinstance(value, dict):
            _json.dumps(value, "input")
            return value
    except MessageFormatError:
        pass
    return {}


def _media_kind(source: Mapping[str, Any]) -> str | None:
    kind = source["media_type"].split("/", 1)[0].strip().lower()
    return kind if kind in _MEDIA_KINDS else None


def _codec_source(source: Mapping[str, Any]) -> dict[str, Any]:
    if source["type"] == "base64":
        return {"type": "base64", "media_type": source["media_type"], "data": source["data"]}
    return {"type": "url", "url": source["url"], "media_type": source["media_type"]}


def _drop_none(block: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """2.x's `None` defaults are absent keys in the codec's shape."""
    for key in keys:
        if key in block and block[key] is None:
            del block[key]
    return block


def _to_codec(block: dict[str, Any]) -> dict[str, Any]:
    """A validated 2.x block in the codec's dict shape."""
    kind = block["type"]
    if kind == "tool_call":
        out = {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": _call_input(block["input"]),
            "raw_input": block["input"],
            "state": block["state"],
            "suggested_rules": block["suggested_rules"],
            "created_at": block["created_at"],
            "finished_at": block["finished_at"],
        }
        if not out["suggested_rules"]:
            del out["suggested_rules"]
        return _drop_none(out, ("finished_at",))
    if kind == "data":
        source = block["source"]
        media = _media_kind(source)
        out = {"type": media or "data"}
        # Each kind's own key order: a media block's `source` comes first.
        order = ("source", "id") if media else ("id", "source")
        out.update((key, _codec_source(source) if key == "source" else block[key]) for key in order)
        out.update((k, block[k]) for k in ("name", "created_at", "finished_at"))
        return _drop_none(out, ("name", "finished_at"))
    if kind in ("hint", "tool_result"):
        key = "hint" if kind == "hint" else "output"
        out = dict(block)
        if isinstance(out[key], list):
            out[key] = [_to_codec(item) for item in out[key]]
        # A hint's `finished_at` defaults to a time: its `None` is said.
        return _drop_none(out, ("source",) if kind == "hint" else ("finished_at",))
    if kind == "thinking":
        renamed = {
            _THINKING_RENAMES[k]
            if k in _THINKING_RENAMES and _THINKING_RENAMES[k] not in block
            else k: v
            for k, v in block.items()
        }
        return _drop_none(renamed, ("finished_at",))
    return _drop_none(dict(block), ("finished_at",))


def _check_role(role: str, blocks: list[dict[str, Any]]) -> None:
    allowed = _ROLE_KINDS.get(role)
    if allowed is None:
        return
    for index, block in enumerate(blocks):
        if block["type"] not in allowed:
            names = " and ".join(sorted(allowed))
            raise fail(
                f"content[{index}].type",
                f"a {role} message holds only {names} blocks, not {block['type']!r}",
            )


def _usage(value: Any, msg: Msg) -> None:
    if value is None:
        return
    usage = read_dict(value, "usage")
    counts = {}
    for key, _ in _USAGE:
        if key in usage:
            counts[key] = read_int(usage[key], f"usage.{key}")
        elif key in ("input_tokens", "output_tokens"):
            raise fail(f"usage.{key}", "missing")
        else:
            counts[key] = 0
    for key, field in _USAGE:
        if not -(2**63) <= counts[key] < 2**63:
            # 2.x takes any integer; the schema's counts are 64-bit.
            raise MessageFormatError(f"usage.{key}", f"{counts[key]} does not fit in 64 bits")
        setattr(msg.usage, field, counts[key])


def _error(value: Any, msg: Msg) -> None:
    if value is None:
        return
    error = read_dict(value, "error")
    kind = choice(_ERROR_TYPES, "an error type")(error.get("type", "unknown"), "error.type")
    if "message" not in error:
        raise fail("error.message", "missing")
    msg.error.type = _ERROR_TYPES[kind]
    msg.error.message = read_str(error["message"], "error.message")


def from_agentscope2(data: Mapping[str, Any]) -> Msg:
    for key in ("name", "content", "role"):
        if key not in data:
            raise fail(key, "missing")
    msg = Msg(name=read_str(data["name"], "name"))
    content = data["content"]
    if not isinstance(content, list):
        raise fail("content", f"content is a list of blocks, got {type_name(content)}")
    tally = Tally()
    blocks = [_block(item, f"content[{i}]", tally) for i, item in enumerate(content)]
    role = data["role"]
    if not isinstance(role, str) or role not in _ROLES:
        raise fail("role", f"expected one of 'user', 'assistant', 'system', got {role!r}")
    msg.role = _ROLES[role]
    msg.id = read_str(data["id"], "id") if "id" in data else _new_id()
    metadata = read_dict(data.get("metadata", {}), "metadata")
    if metadata:
        msg.metadata_json = _json.dumps(metadata, "metadata")
    created_at = data.get("created_at", MISSING)
    msg.timestamp = (
        _new_timestamp() if created_at is MISSING else read_str(created_at, "created_at")
    )
    _usage(data.get("usage"), msg)
    if (finished_at := read_opt_str(data.get("finished_at"), "finished_at")) is not None:
        msg.finished_at = finished_at
    reason = data.get("finished_reason")
    if reason is not None:
        msg.finished_reason = _FINISHED[
            choice(_FINISHED, "a finished reason")(reason, "finished_reason")
        ]
    structured = data.get("structured_output")
    if structured is not None:
        value = read_dict(structured, "structured_output")
        msg.structured_output_json = _json.dumps(value, "structured_output")
    _error(data.get("error"), msg)
    _check_role(role, blocks)
    msg.blocks.SetInParent()
    items = msg.blocks.items
    for index, block in enumerate(blocks):
        items.append(block_from_dict(_to_codec(block), f"content[{index}]"))
    extras = {k: v for k, v in data.items() if k not in _MSG_KEYS}
    if extras:
        msg.extra_json = _json.dumps(extras, "")
    return msg


def block_from_agentscope2(
    data: Any, path: str, kinds: tuple[str, ...] = _ALL_KINDS
) -> ContentBlock:
    """One 2.x block (its `model_dump` dict) as a `ContentBlock`, validated as
    2.x validates a block of one of `kinds` (e.g. `("tool_call",)` where 2.x
    declares a `ToolCallBlock`)."""
    block = _block(data, path, Tally(), kinds)
    return block_from_dict(_to_codec(block), path)


def parts_from_agentscope2(value: Any, path: str) -> str | list[ContentBlock]:
    """A hint's or a tool result's content: a string, or text and data blocks."""
    parts = _parts(value, path)
    if isinstance(parts, str):
        return parts
    return [block_from_dict(_to_codec(part), f"{path}[{i}]") for i, part in enumerate(parts)]


# --- Writing -----------------------------------------------------------------


class _Writer:
    """Writes the blocks of one message (or event); ids and times a block
    lacks are derived from its owner's (docs/dialects.md)."""

    def __init__(self, owner_id: str, created_at: str) -> None:
        self.owner_id = owner_id
        self.created_at = created_at

    def block_id(self, path: str) -> str:
        # Derived, not random: the same message converts to the same 2.x dict.
        return uuid.uuid5(uuid.NAMESPACE_URL, f"agentscope-proto:{self.owner_id}:{path}").hex

    def times(self, data: Mapping[str, Any], finished: Any = None) -> dict[str, Any]:
        return {
            "created_at": data.get("created_at", self.created_at),
            "finished_at": data.get("finished_at", finished),
        }

    def media(self, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        kind = data["type"]
        source = data["source"]
        media_type = source.get("media_type")
        if source["type"] == "base64":
            out = {"type": "base64", "data": source["data"], "media_type": media_type}
        else:
            url = _local_url(source["url"], f"{path}.source.url")
            if media_type is None:
                media_type = _guess_media_type(kind, url, f"{path}.source.media_type")
            out = {"type": "url", "url": url, "media_type": media_type}
        if not isinstance(media_type, str):
            raise fail(f"{path}.source.media_type", "a source needs a media type")
        return {
            "type": "data",
            "id": data["id"] if "id" in data else self.block_id(path),
            "source": out,
            "name": data.get("name"),
            **self.times(data),
        }

    def parts(self, value: Any, path: str) -> Any:
        """A hint or a tool result's output: a string, or text and data blocks."""
        if isinstance(value, str):
            return value
        if not isinstance(value, list):  # an unset hint or output: 2.x requires one
            raise fail(path, f"expected text or a list of blocks, got {type_name(value)}")
        out = []
        for index, item in enumerate(value):
            where = f"{path}[{index}]"
            kind = item["type"]
            if kind == "text":
                out.append(self.text(item, where))
            elif kind in (*_MEDIA_KINDS, "data"):
                out.append(self.media(item, where))
            else:
                raise fail(f"{where}.type", f"only text and data blocks may be here, not {kind!r}")
        return out

    def text(self, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {
            "type": "text",
            "text": data["text"],
            "id": data["id"] if "id" in data else self.block_id(path),
            **self.times(data),
        }

    def thinking(self, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        out = {
            "type": "thinking",
            "thinking": data["thinking"],
            "id": data["id"] if "id" in data else self.block_id(path),
            **self.times(data),
        }
        extras = [k for k in data if k not in out]
        taken = set(extras)
        for key in extras:
            name = key
            for as2, codec in _THINKING_RENAMES.items():
                if key == codec and as2 not in taken:
                    name = as2
            out[name] = data[key]
        return out

    def tool_call(self, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        for key in ("id", "name"):
            if not isinstance(data.get(key), str):
                raise fail(f"{path}.{key}", f"a tool call's {key} is a string")
        raw = data.get("raw_input")
        if not isinstance(raw, str):
            # AgentScope 2.x writes a call's arguments as json.dumps does.
            raw = json.dumps(data["input"], ensure_ascii=False)
        rules = data.get("suggested_rules", [])
        if not isinstance(rules, list) or any(not isinstance(r, dict) for r in rules):
            raise fail(f"{path}.suggested_rules", "expected a list of permission rules")
        return {
            "type": "tool_call",
            "id": data["id"],
            "name": data["name"],
            "input": raw,
            "state": _enum_value(
                data.get("state", "pending"), CALL_STATES.numbers, f"{path}.state"
            ),
            "suggested_rules": [
                model(_RULE, r, f"{path}.suggested_rules[{i}]") for i, r in enumerate(rules)
            ],
            **self.times(data),
        }

    def tool_result(self, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        for key in ("id", "name"):
            if not isinstance(data.get(key), str):
                raise fail(f"{path}.{key}", f"a tool result's {key} is a string")
        output = data["output"]
        metadata = data.get("metadata", {})
        if not isinstance(metadata, dict):
            raise fail(f"{path}.metadata", f"expected an object, got {type_name(metadata)}")
        return {
            "type": "tool_result",
            "id": data["id"],
            "name": data["name"],
            # AgentScope 1.x's `None` output: no output, which 2.x says with "".
            "output": "" if output is None else self.parts(output, f"{path}.output"),
            "state": _enum_value(
                data.get("state", "running"), RESULT_STATES.numbers, f"{path}.state"
            ),
            "metadata": metadata,
            **self.times(data),
        }

    def hint(self, data: Mapping[str, Any], path: str) -> dict[str, Any]:
        source = data.get("source")
        if source is not None and not isinstance(source, str):
            raise fail(f"{path}.source", f"a hint's source is a string, got {type_name(source)}")
        times = self.times(data)
        if "finished_at" not in data:
            # 2.x stamps a hint finished when it is made.
            times["finished_at"] = times["created_at"]
        return {
            "type": "hint",
            "hint": self.parts(data["hint"], f"{path}.hint"),
            "id": data["id"] if "id" in data else self.block_id(path),
            "source": source,
            **times,
        }

    def block(self, block: ContentBlock, path: str) -> dict[str, Any]:
        inner = unwrap(block)
        if isinstance(inner, OpaqueBlock):
            raise fail(f"{path}.type", f"AgentScope 2.x has no {inner.block_type!r} block")
        try:
            data = block_to_dict(inner)
        except MessageFormatError as exc:  # a field the codec cannot name (`state`): place it
            raise MessageFormatError(f"{path}.{exc.path}".rstrip("."), exc.reason) from None
        kind = data["type"]
        if kind == "text":
            return self.text(data, path)
        if kind == "thinking":
            return self.thinking(data, path)
        if kind == "tool_use":
            return self.tool_call(data, path)
        if isinstance(inner, ToolResultBlock):
            return self.tool_result(data, path)
        if kind == "hint":
            return self.hint(data, path)
        if kind in (*_MEDIA_KINDS, "data"):
            return self.media(data, path)
        raise fail(f"{path}.type", f"AgentScope 2.x has no {kind!r} block")


def _enum_value(value: Any, names: Mapping[str, Any], path: str) -> str:
    if not isinstance(value, str) or value.lower() not in names:
        raise fail(path, f"expected one of {', '.join(map(repr, names))}, got {value!r}")
    return value.lower()


# Media types by URL extension, for a 1.x or Java URL source that has none
# (2.x requires one); the kind of block must agree with the type.
_EXTENSIONS = {
    "image": {
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
        "bmp": "image/bmp",
        "tif": "image/tiff",
        "tiff": "image/tiff",
        "heic": "image/heic",
        "heif": "image/heif",
    },
    "audio": {
        "mp3": "audio/mpeg",
        "wav": "audio/wav",
        "ogg": "audio/ogg",
        "flac": "audio/flac",
        "aac": "audio/aac",
        "m4a": "audio/mp4",
        "opus": "audio/opus",
        "webm": "audio/webm",
    },
    "video": {
        "mp4": "video/mp4",
        "mov": "video/quicktime",
        "webm": "video/webm",
        "mkv": "video/x-matroska",
        "avi": "video/x-msvideo",
        "mpeg": "video/mpeg",
        "mpg": "video/mpeg",
        "3gp": "video/3gpp",
    },
}


def _guess_media_type(kind: str, url: str, path: str) -> str:
    stem = url.split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1]
    extension = stem.rsplit(".", 1)[-1].lower() if "." in stem else ""
    found = _EXTENSIONS.get(kind, {}).get(extension)
    if found is None:
        raise fail(path, "a URL source needs a media type, and none follows from the URL")
    return found


def _local_url(url: str, path: str) -> str:
    """The URL as 2.x holds it: normalized; an absolute local path (which 1.x
    allows) as a `file://` URL."""
    if url.startswith("/"):
        from urllib.parse import quote

        url = "file://" + quote(url)
    try:
        return normalize_url(url)
    except ValueError as exc:
        raise fail(path, str(exc)) from None


def _role(msg: Msg, blocks: list[dict[str, Any]]) -> str:
    if msg.role == Role.ROLE_ASSISTANT:
        return "assistant"
    if msg.role not in (Role.ROLE_USER, Role.ROLE_SYSTEM, Role.ROLE_TOOL):
        raise fail("role", "a message needs a role")
    kinds = [block["type"] for block in blocks]
    if msg.role == Role.ROLE_TOOL or (kinds and all(kind == "tool_result" for kind in kinds)):
        # 2.x keeps tool results in the assistant's messages; a tool message
        # (Java) or a 1.x user/system message of tool results is one.
        return "assistant"
    role = "user" if msg.role == Role.ROLE_USER else "system"
    _check_role(role, blocks)
    return role


def to_agentscope2(msg: Msg) -> dict[str, Any]:
    if not msg.HasField("name"):
        raise fail("name", "a message needs a name")
    if not msg.HasField("id"):
        raise fail("id", "a message needs an id")
    writer = _Writer(msg.id, msg.timestamp)
    if msg.WhichOneof("content") == "text":
        content = [writer.text({"text": msg.text}, "content[0]")]
    else:
        content = [writer.block(b, f"content[{i}]") for i, b in enumerate(msg.blocks.items)]
    out: dict[str, Any] = {
        "name": msg.name,
        "content": content,
        "role": _role(msg, content),
        "id": msg.id,
        "metadata": load_object(msg.metadata_json, "metadata")
        if msg.HasField("metadata_json")
        else {},
        "created_at": msg.timestamp,
        "usage": _write_usage(msg),
        "finished_at": msg.finished_at if msg.HasField("finished_at") else None,
        "finished_reason": _write_finished(msg),
        "structured_output": (
            load_object(msg.structured_output_json, "structured_output_json")
            if msg.HasField("structured_output_json")
            else None
        ),
        "error": _write_error(msg),
    }
    return out


def _write_usage(msg: Msg) -> dict[str, int] | None:
    if not msg.HasField("usage"):
        return None
    return {key: getattr(msg.usage, field) for key, field in _USAGE}


def _write_finished(msg: Msg) -> str | None:
    if not msg.finished_reason:
        return None
    name = _FINISHED_NAMES.get(msg.finished_reason)
    if name is None:
        raise MessageFormatError(
            "finished_reason", f"unknown finished reason {msg.finished_reason}"
        )
    return name


def _write_error(msg: Msg) -> dict[str, str] | None:
    if not msg.HasField("error"):
        return None
    name = _ERROR_NAMES.get(msg.error.type)
    if name is None:
        raise MessageFormatError("error.type", f"unknown error type {msg.error.type}")
    return {"type": name, "message": msg.error.message}


def block_to_agentscope2(
    block: ContentBlock, path: str, owner_id: str, created_at: str
) -> dict[str, Any]:
    """A `ContentBlock` as 2.x's `model_dump` of it. A block without an id or
    a creation time takes one derived from its owner (the message or event
    it belongs to: `owner_id`, `created_at`), as in a message."""
    return _Writer(owner_id, created_at).block(block, path)


def parts_to_agentscope2(
    value: str | Sequence[ContentBlock], path: str, owner_id: str, created_at: str
) -> Any:
    """A hint's or a tool result's content as 2.x writes it: the string, or
    its text and data blocks."""
    if isinstance(value, str):
        return value
    return _Writer(owner_id, created_at).parts(blocks_to_list(list(value)), path)
