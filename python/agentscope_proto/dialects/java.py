"""agentscope-java: its Jackson JSON (`io.agentscope.core.message`), read and written.

Reading refuses what agentscope-java's reader refuses and normalizes what it
normalizes; writing gives what its writer gives, and maps or refuses (with
`MessageFormatError` naming the path and the rule) a message Java would not
read. The rules and the mapping table are in docs/dialects.md.
"""

from __future__ import annotations

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
from . import _java_rules as rules
from ._common import is_canonical_b64, set_extras, type_name, with_output

__all__ = ["block_from_java", "from_java", "to_java"]

_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "timestamp", "usage"})
# (JSON key, `Usage` field) of `ChatUsage`; `totalTokens` is derived.
_COUNTS = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cachedTokens", "cache_read_input_tokens"),
)
_SIGNATURE = "thoughtSignature"

# --- Reading -----------------------------------------------------------------

_Pairs = list[tuple[str, Any]]
# How one key of a Java block reads: (key, value, block, path) -> the pairs of
# the 1.x-shaped dict, in place, so the block keeps its layout.
_Rule = Callable[[str, Any, Mapping[str, Any], str], _Pairs]


def _keep(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    return [(key, value)]


def _null_as(default: Any) -> _Rule:
    def rule(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
        return [(key, default if value is None else value)]

    return rule


def _object(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    value = rules.object_or_null(value, f"{path}.{key}")
    return [] if value is None else [(key, value)]


def _state(known: tuple[str, ...]) -> _Rule:
    def rule(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
        if value is None:
            return []
        return [(key, rules.state(value, known, f"{path}.{key}", any_case=False))]

    return rule


def _input(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    if value is None:
        return [(key, {})]
    if not isinstance(value, Mapping):
        raise rules.refuse(
            f"{path}.input", f"a tool call's input is an object, not {type_name(value)}"
        )
    return [(key, value)]


def _raw_content(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    """A tool_use `content` (the raw argument text) is 1.x's `raw_input`."""
    if value is None:
        return []
    if not isinstance(value, str):
        raise rules.refuse(f"{path}.content", f"expected a string, got {type_name(value)}")
    return [("raw_input" if "raw_input" not in data else key, value)]


def _tool_metadata(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    """Gemini's `thoughtSignature` is also the block's `thought_signature`.

    A metadata holding only the signature moves there entirely; with other
    keys it stays as it is (keeping its key order), signature included.
    """
    metadata = rules.object_or_null(value, f"{path}.{key}")
    if metadata is None:
        return []
    signature = metadata.get(_SIGNATURE)
    if "thought_signature" in data or not is_canonical_b64(signature):
        return [(key, metadata)]
    if len(metadata) == 1:
        return [("thought_signature", signature)]
    return [("thought_signature", signature), (key, metadata)]


def _output(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    if value is None:
        return [(key, [])]
    if not isinstance(value, list):
        raise rules.refuse(f"{path}.output", f"output is a list of blocks, not {type_name(value)}")
    return [(key, value)]


def _result_metadata(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    metadata = rules.object_or_null(value, f"{path}.{key}")
    if metadata is None:
        return []
    for name, item in metadata.items():
        if item is None:
            # ToolResultBlock copies it with Map.copyOf, which refuses nulls.
            raise rules.refuse(f"{path}.{key}.{name}", "a tool result's metadata holds no null")
    return [(key, metadata)]


def _source(key: str, value: Any, data: Mapping[str, Any], path: str) -> _Pairs:
    """URLSource's `mime_type` is `media_type`; its `media_type` key Java ignores."""
    if not isinstance(value, Mapping) or value.get("type") != "url":
        return [(key, value)]
    source = {k: v for k, v in value.items() if k not in ("media_type", "mime_type")}
    if (mime := value.get("mime_type")) is not None:
        if not isinstance(mime, str):
            raise rules.refuse(
                f"{path}.{key}.mime_type", f"expected a string, got {type_name(mime)}"
            )
        source["media_type"] = mime
    return [(key, source)]


_MEDIA: dict[str, _Rule] = {"source": _source}
_READ: dict[str, dict[str, _Rule]] = {
    "text": {"text": _null_as("")},
    "thinking": {"thinking": _null_as(""), "metadata": _object},
    "tool_use": {
        "id": _keep,
        "name": _keep,
        "input": _input,
        "content": _raw_content,
        "metadata": _tool_metadata,
        "state": _state(rules.TOOL_CALL_STATES),
    },
    "tool_result": {
        "id": _keep,
        "name": _keep,
        "output": _output,
        "metadata": _result_metadata,
        "state": _state(rules.TOOL_RESULT_STATES),
    },
    "image": _MEDIA,
    "audio": _MEDIA,
    "video": _MEDIA,
}
# What agentscope-java holds for a key it was not given.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "text": {"text": ""},
    "thinking": {"thinking": ""},
    "tool_use": {"id": None, "name": None, "input": {}},
    "tool_result": {"id": None, "name": None, "output": []},
}


def _check_hint_or_data(kind: str, data: Mapping[str, Any], path: str) -> None:
    """Refuse a hint or data block Java's reader would refuse."""
    for key in ("id", "hint", "source") if kind == "hint" else ("id", "name"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise rules.refuse(f"{path}.{key}", f"expected a string, got {type_name(data[key])}")
    if kind == "data":
        _java_source(data.get("source"), f"{path}.source")


def _read_hint_or_data(kind: str, data: Mapping[str, Any], path: str) -> ContentBlock:
    _check_hint_or_data(kind, data, path)
    if kind == "hint":
        return block_from_dict(data, path)
    # A URL source's `mime_type` is its media type, as in the media blocks.
    return block_from_dict(
        {k: (_source(k, v, data, path)[0][1] if k == "source" else v) for k, v in data.items()},
        path,
    )


def _read_block(item: Any, path: str) -> ContentBlock | None:
    if item is None:
        # agentscope-java drops null blocks.
        return None
    if not isinstance(item, Mapping):
        raise MessageFormatError(path, f"expected a block object, got {type_name(item)}")
    kind = rules.check_kind(item.get("type"), path)
    if kind in ("hint", "data"):
        return _read_hint_or_data(kind, item, path)
    read = _READ[kind]
    knobs = rules.KNOBS.get(kind, ())
    knob_keys = {name for camel, snake, _ in knobs for name in (camel, snake)}
    data: dict[str, Any] = {}
    for key, value in item.items():
        if key not in knob_keys:
            rule = read.get(key)
            data.update(rule(key, value, item, path) if rule else [(key, value)])
    for key, default in _DEFAULTS.get(kind, {}).items():
        data.setdefault(key, default)
    data.update(rules.knobs(kind, item, path))
    if kind == "tool_result":
        return with_output(data, path, _read_block)
    return block_from_dict(data, path)


def block_from_java(item: Any, path: str) -> ContentBlock | None:
    """One block as agentscope-java's Jackson writes it (None for Java's null block),
    refusing what Java's reader refuses. The A2A mapping reads Java's parts with it."""
    return _read_block(item, path)


def _text_field(data: Mapping[str, Any], key: str) -> str | None:
    """A string field as Jackson reads it: an integer becomes its digits."""
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is not None and not isinstance(value, str):
        raise MessageFormatError(key, f"expected a string or null, got {type_name(value)}")
    return value


def _read_usage(msg: Msg, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise MessageFormatError("usage", f"expected an object or null, got {type_name(value)}")
    usage = msg.usage
    usage.SetInParent()
    for key, field in _COUNTS:
        if value.get(key) is not None:
            setattr(usage, field, rules.int32(value[key], f"usage.{key}"))
    if value.get("time") is not None:
        usage.time_seconds = rules.double(value["time"], "usage.time")


def from_java(data: Mapping[str, Any]) -> Msg:
    rules.check_limits(data)
    msg = Msg()
    if (msg_id := _text_field(data, "id")) is not None:
        msg.id = msg_id
    if (name := _text_field(data, "name")) is not None:
        msg.name = name
    # Java's reader takes a message without a role (or a null one) and writes
    # it back as `"role": null`: here it stays ROLE_UNSPECIFIED, which only
    # this dialect writes (formatters and the 1.x writer refuse it).
    role = data.get("role")
    if role is not None:
        if not isinstance(role, str) or role not in rules.ROLES:
            names = ", ".join(map(repr, rules.ROLES))
            raise MessageFormatError(
                "role", f"expected one of {names} (upper case) or null, got {role!r}"
            )
        msg.role = rules.ROLES[role]
    content = data.get("content")
    if content is not None and not isinstance(content, list):
        raise rules.refuse("content", f"content is a list of blocks, not {type_name(content)}")
    msg.blocks.SetInParent()
    items = msg.blocks.items
    for index, item in enumerate(content or ()):
        path = f"content[{index}]"
        if isinstance(item, Mapping):
            rules.check_role_content(msg.role, rules.check_kind(item.get("type"), path), path)
        block = _read_block(item, path)
        if block is not None:
            items.append(block)
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise MessageFormatError(
            "metadata", f"expected an object or null, got {type_name(metadata)}"
        )
    if metadata:
        msg.metadata_json = _json.dumps(metadata, "metadata")
    msg.timestamp = _text_field(data, "timestamp") or ""
    _read_usage(msg, data.get("usage"))
    set_extras(msg, data, _MSG_KEYS)
    return msg


# --- Writing -----------------------------------------------------------------


def _java_source(source: Any, path: str) -> dict[str, Any]:
    """A source in Java's shape (URLSource is NON_NULL), refusing what Java refuses."""
    if not isinstance(source, Mapping):
        raise rules.refuse(path, f"a source is an object, got {type_name(source)}")
    kind = source.get("type")
    if kind == "base64":
        out = {"type": kind, "media_type": source.get("media_type"), "data": source.get("data")}
        needed: tuple[str, ...] = ("media_type", "data")
    elif kind == "url":
        out = {"type": kind, "url": source.get("url")}
        mime = source.get("mime_type", source.get("media_type"))
        if mime is not None:
            out["mime_type"] = mime
        needed = ("url",)
    else:
        raise rules.refuse(f"{path}.type", f"a source is 'url' or 'base64', got {kind!r}")
    for key, value in out.items():
        if not isinstance(value, str) and (key in needed or value is not None):
            raise rules.refuse(f"{path}.{key}", f"expected a string, got {type_name(value)}")
    return out


def _hint_or_data(kind: str, data: Mapping[str, Any], path: str) -> dict[str, Any]:
    _check_hint_or_data(kind, data, path)
    if kind == "hint":
        return {"type": kind, **{key: data.get(key) for key in ("id", "hint", "source")}}
    # DataBlock is NON_NULL; Java gives a block without an id a fresh one.
    out: dict[str, Any] = {
        "type": kind,
        "source": _java_source(data.get("source"), f"{path}.source"),
    }
    out.update((key, data[key]) for key in ("id", "name") if data.get(key) is not None)
    return out


def _tool_use(data: Mapping[str, Any], path: str) -> dict[str, Any]:
    tool_input = data["input"]
    if not isinstance(tool_input, dict):
        raise rules.refuse(
            f"{path}.input", f"a tool call's input is an object, not {type_name(tool_input)}"
        )
    metadata = rules.object_or_null(data.get("metadata"), f"{path}.metadata") or {}
    signature = data.get("thought_signature")
    if isinstance(signature, str):
        # Where agentscope-java's Gemini parser keeps it; a metadata read with
        # the signature keeps its place.
        if _SIGNATURE in metadata:
            metadata = {**metadata, _SIGNATURE: signature}
        else:
            metadata = {_SIGNATURE: signature, **metadata}
    state = data.get("state")
    raw = data.get("raw_input")
    return {
        "type": "tool_use",
        "id": data["id"],
        "name": data["name"],
        "input": tool_input,
        "content": raw if isinstance(raw, str) else None,
        "metadata": metadata,
        "state": "pending"
        if state is None
        else rules.state(state, rules.TOOL_CALL_STATES, f"{path}.state", any_case=True),
    }


def _tool_result(inner: ToolResultBlock, data: Mapping[str, Any], path: str) -> dict[str, Any]:
    which = inner.WhichOneof("output")
    output: list[dict[str, Any]] = []
    if which == "text":
        output = [{"type": "text", "text": inner.text}]
    elif which == "blocks":
        # `data` holds each nested block's dict already: converting them again
        # at each level would be quadratic in the nesting.
        output = [
            _block(b, f"{path}.output[{i}]", data["output"][i])
            for i, b in enumerate(inner.blocks.items)
        ]
    metadata = rules.object_or_null(data.get("metadata"), f"{path}.metadata") or {}
    state = data.get("state")
    return {
        "type": "tool_result",
        "id": data["id"],
        "name": data["name"],
        "output": output,
        # Map.copyOf refuses null values; a null entry reads as an absent one.
        "metadata": {k: v for k, v in metadata.items() if v is not None},
        "state": "running"
        if state is None
        else rules.state(state, rules.TOOL_RESULT_STATES, f"{path}.state", any_case=True),
    }


def _block(block: ContentBlock, path: str, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`block` in Java's JSON; `data`: its AgentScope dict, where made already."""
    inner = unwrap(block)
    data = block_to_dict(inner) if data is None else data
    kind = data["type"]
    if isinstance(inner, OpaqueBlock):
        # Java has no class for any other kind: refused as Java refuses it.
        rules.check_kind(kind, path)
    if kind in ("hint", "data"):
        return _hint_or_data(kind, data, path)
    if kind == "text":
        return {"type": "text", "text": data["text"]}
    if kind == "thinking":
        metadata = rules.object_or_null(data.get("metadata"), f"{path}.metadata")
        return {"type": "thinking", "thinking": data["thinking"], "metadata": metadata}
    if kind == "tool_use":
        return _tool_use(data, path)
    if isinstance(inner, ToolResultBlock):
        return _tool_result(inner, data, path)
    if kind not in ("image", "audio", "video"):
        # Provider-fidelity kinds (server tool use/result, grounding): Java has
        # no class for them, so they are refused as any unknown kind is.
        rules.check_kind(kind, path)
    out = {"type": kind, "source": _java_source(data["source"], f"{path}.source")}
    out.update(rules.knobs(kind, data, path))
    return out


def _kind(block: ContentBlock) -> str:
    inner = unwrap(block)
    return inner.block_type if isinstance(inner, OpaqueBlock) else str(block.WhichOneof("block"))


def _role(msg: Msg) -> str | None:
    """The MsgRole name; a 1.x user or system message of tool results is TOOL;
    an unset role is Java's null role."""
    if msg.role == Role.ROLE_UNSPECIFIED:
        return None
    if msg.role not in rules.ROLE_NAMES:
        raise MessageFormatError("role", f"unknown role {msg.role}")
    if msg.role in rules.ALLOWED and msg.WhichOneof("content") == "blocks":
        kinds = [_kind(b) for b in msg.blocks.items]
        if kinds and all(kind == "tool_result" for kind in kinds):
            return "TOOL"
        for index, kind in enumerate(kinds):
            rules.check_role_content(msg.role, kind, f"content[{index}]")
    return rules.ROLE_NAMES[msg.role]


def _usage(msg: Msg) -> dict[str, Any] | None:
    if not msg.HasField("usage"):
        return None
    usage = msg.usage
    out: dict[str, Any] = {}
    for key, field in _COUNTS:
        out[key] = rules.int32(getattr(usage, field), f"usage.{field}")
    out["time"] = usage.time_seconds
    # ChatUsage.getTotalTokens(): an int sum, which wraps past 2^31-1.
    out["totalTokens"] = rules.wrap32(out["inputTokens"] + out["outputTokens"])
    return out


def to_java(msg: Msg) -> dict[str, Any]:
    role = _role(msg)
    if msg.WhichOneof("content") == "text":
        content = [{"type": "text", "text": msg.text}]
    else:
        content = [_block(b, f"content[{i}]") for i, b in enumerate(msg.blocks.items)]
    metadata: dict[str, Any] = {}
    if msg.HasField("metadata_json"):
        value = _json.loads(msg.metadata_json, "metadata")
        if not isinstance(value, dict):
            raise rules.refuse("metadata", f"metadata is an object, not {type_name(value)}")
        # Msg's constructor drops entries whose value is null.
        metadata = {k: v for k, v in value.items() if v is not None}
    out = {
        "id": msg.id if msg.HasField("id") else None,
        "name": msg.name if msg.HasField("name") else None,
        "role": role,
        "content": content,
        "metadata": metadata,
        "timestamp": msg.timestamp or None,
        "usage": _usage(msg),
    }
    rules.check_limits(out)
    return out
