"""`Msg` from and to the JSON dicts AgentScope already writes.

Three dialects exist (see `../shared/notes/schema-anchors.md` §1.5-1.6):

- `"agentscope"`: AgentScope Python 1.x, `Msg.to_dict()`. The default, and the
  one `to_dict` writes unless told otherwise: exactly what AgentScope 1.0.21's
  `Msg.from_dict(d).to_dict()` returns for the same input (same keys, order,
  value types, base64 text).
- `"java"`: agentscope-java's Jackson JSON (`io.agentscope.core.message`).
  Read and written.
- `"agentscope2"`: AgentScope Python 2.x, `Msg.model_dump(mode="json")`. Read
  only; `to_dict(msg)` of such a message gives its 1.x form.

Reading
-------
`from_dict(data)` picks the dialect per message (`detect_dialect`); pass
`dialect=` to force one. The rules, first match wins:

1. A role that is a known role in another case than 1.x's lowercase
   (`"USER"`, `"TOOL"`) is agentscope-java: Jackson writes `MsgRole` names.
2. No `timestamp` but 2.x traces (`created_at`, `finished_at`,
   `finished_reason`, `structured_output`, `error`, a snake_case `usage`,
   `tool_call`/`data`/`hint` blocks, blocks with `created_at`) is 2.x.
3. String content or an `invocation_id` key is 1.x (neither exists in the
   other two).
4. Any agentscope-java trace is agentscope-java: a `usage` key that is null or
   camelCase, an explicit `"name": null`, an ISO-8601 instant as `timestamp`,
   a tool_use `content` key (the raw arguments), a thinking `metadata` key, a
   tool_result `state` or `metadata` key, a URL source `mime_type`, or image
   and video pixel knobs (`min_pixels`, `fps`, ...).
5. Otherwise 1.x. A 1.x dict holding blocks 1.x does not know (`tool_call`,
   `hint`, `data`) keeps them as `OpaqueBlock`s.

How agentscope-java JSON maps (one line per difference in the notes' §1.6):
roles are read in any case, `"TOOL"` as `ROLE_TOOL` (1, 2); content may be a
string (3); `name` and `id` may be null or absent, leaving the field unset (4
and 5); `timestamp` is kept verbatim, ISO-8601 instants included (6); `usage`
`{inputTokens, outputTokens, cachedTokens, time}` becomes `Msg.usage`
(`cachedTokens` as `cache_read_input_tokens`, `time` as `time_seconds`;
`totalTokens` is derived and not stored; `metadata["_chat_usage"]` stays in the
metadata) (7); agentscope-java has no `invocation_id` (8) and keeps what 2.x
has as message fields in the metadata (`agentscope_generate_reason`,
`_structured_output`), which is kept verbatim (9); unknown top-level keys go to
`Msg.extra_json`; explicit nulls mean "not set", so the keys agentscope-java
writes as null are not kept (10); `hint` and `data` blocks are kept as
`OpaqueBlock`s (11, 21); thinking `metadata`, tool_use `metadata` and `state`,
tool_result `metadata` are kept as extra keys, except a tool_use
`metadata["thoughtSignature"]` (the Gemini signature as base64) which becomes
`thought_signature` (12, 14, 16); tool_use `content` becomes `raw_input` (13);
a tool_result's output may be a string or a list of any block kind (15); the
tool_result `state` becomes `ToolResultBlock.state` (16); image and video pixel
knobs stay as extra keys (17); a URL source's `mime_type` becomes
`MediaSource.media_type` (18); URLs are kept as given, resolving local ones is
the formatters' business (19); `state` values are read in any case (20). A null
tool id or name reads as `""` (the schema's ids are plain strings).

How AgentScope 2.x JSON maps: `created_at` is the timestamp (verbatim);
`usage` `{input_tokens, output_tokens, cache_input_tokens,
cache_creation_input_tokens}` becomes `Msg.usage`; `finished_at`,
`finished_reason`, `structured_output`, `error` and other unknown top-level
keys go to `Msg.extra_json`; `tool_call` blocks become tool_use blocks (the
`input` string is parsed into `input`, `{}` if it is not a JSON object, and
kept verbatim as `raw_input`); `data` blocks become image, audio or video
blocks by their source's media type (other media types stay `OpaqueBlock`s);
`hint` blocks stay `OpaqueBlock`s. Block bookkeeping (`id`, `created_at`,
`finished_at`, `state`, `suggested_rules`, `metadata`) is kept as extra keys, so
nothing is lost; note that 1.x-style formatters pass extra keys of text blocks
on to the provider.

Writing agentscope-java JSON
----------------------------
`to_dict(msg, dialect="java")` writes what agentscope-java's shared
`ObjectMapper` (`JacksonJsonCodec`: defaults plus `JavaTimeModule`) writes for
the Java objects that reading the same data would build. Assumptions, from the
Java classes at agentscope-java `c2d43f86e` (after v2.0.2):

- Property order is Jackson's default: the `@JsonCreator` parameters in
  declaration order, then other getters; a block's `type` id comes first.
  `Msg`: `id, name, role, content, metadata, timestamp, usage`. `ChatUsage`:
  `inputTokens, outputTokens, cachedTokens, time, totalTokens` (the last from
  `getTotalTokens()`, input plus output). `ToolResultBlock.isSuspended()` is
  `@java.beans.Transient`, which Jackson treats as ignored.
- Nulls are written except in the `@JsonInclude(NON_NULL)` classes
  (`ImageBlock`, `VideoBlock`, `URLSource`, `DataBlock`): `"name": null`,
  `"usage": null`, thinking `"metadata": null`, tool_use `"content": null`.
- Defaults of the Java constructors: `Msg.metadata` is a map (`{}` when unset)
  and drops entries whose value is null; tool_use `input` and `metadata` are
  `{}` and `state` is `"pending"` when unset; tool_result `output` is a list
  (a string output becomes one text block, none becomes `[]`), `metadata` is
  `{}` and `state` is `"running"` when unset; `usage` counts are `0` and
  `time` is `0.0` when unset.
- Keys agentscope-java does not model (1.x `signature`, `cache_control`,
  `thought_signature` on text, `invocation_id`, ...) are dropped, as Jackson
  ignores them on reading. A tool_use `thought_signature` is written as
  `metadata["thoughtSignature"]`, where agentscope-java's Gemini parser keeps
  it. `OpaqueBlock`s are written verbatim.
- The role is the `MsgRole` name; a system message holding a tool result (1.x's
  convention for tool results) is written as `"TOOL"`, because agentscope-java
  only allows text in `"SYSTEM"` messages.
- Map key order (Java `HashMap`s are unordered) is kept as read.

A message read from agentscope-java JSON in that form writes back to the same
JSON, key order included.

Schema-native JSON
------------------
For clients that are not AgentScope, the schema-native JSON is ProtoJSON,
`google.protobuf.json_format.MessageToJson(msg)` and
`json_format.Parse(text, Msg())`: lowerCamelCase field names (`metadataJson`,
`inputJson`; pass `preserving_proto_field_name=True` for snake_case), enums by
name (`"ROLE_USER"`), `bytes` as base64, int64 counts as strings, unset fields
omitted. Every protobuf runtime reads and writes it, and it round-trips every
field of these messages.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, get_args

from google.protobuf.message import DecodeError

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    Msg,
    OpaqueBlock,
    Role,
    ToolResultBlock,
    ToolResultState,
    Usage,
)
from ..errors import MessageFormatError
from ..message._codec import (
    block_from_dict,
    block_to_dict,
    blocks_from_list,
    blocks_to_list,
    unwrap,
)
from ..message.helpers import new_id, new_timestamp

__all__ = ["Dialect", "detect_dialect", "from_dict", "from_json", "to_dict", "to_json"]

Dialect = Literal["agentscope", "java", "agentscope2"]
_DIALECTS: tuple[str, ...] = get_args(Dialect)

_ROLES = {"user": Role.ROLE_USER, "assistant": Role.ROLE_ASSISTANT, "system": Role.ROLE_SYSTEM}
_ANY_CASE_ROLES = {**_ROLES, "tool": Role.ROLE_TOOL}
# AgentScope Python 1.x has no tool role; it carries tool results in system
# messages, so that is where a tool message goes in its dialect.
_ROLE_NAMES = {
    Role.ROLE_USER: "user",
    Role.ROLE_ASSISTANT: "assistant",
    Role.ROLE_SYSTEM: "system",
    Role.ROLE_TOOL: "system",
}
_JAVA_ROLE_NAMES = {
    Role.ROLE_USER: "USER",
    Role.ROLE_ASSISTANT: "ASSISTANT",
    Role.ROLE_SYSTEM: "SYSTEM",
    Role.ROLE_TOOL: "TOOL",
}
_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "timestamp", "invocation_id"})
_JAVA_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "timestamp", "usage"})
_AS2_MSG_KEYS = frozenset({"id", "name", "role", "content", "metadata", "created_at", "usage"})

_AS2_TOP_KEYS = ("created_at", "finished_at", "finished_reason", "structured_output", "error")
_AS2_BLOCK_TYPES = frozenset({"tool_call", "data", "hint"})
# The DashScope media knobs of agentscope-java's ImageBlock and VideoBlock.
_JAVA_MEDIA_KEYS: dict[str, tuple[str, ...]] = {
    "image": ("min_pixels", "max_pixels"),
    "video": ("fps", "max_frames", "min_pixels", "max_pixels", "total_pixels"),
}
_TOOL_CALL_STATES = frozenset({"pending", "asking", "allowed", "submitted", "finished"})
_RESULT_STATES = {
    name.removeprefix("TOOL_RESULT_STATE_").lower(): number
    for name, number in ToolResultState.items()
    if number
}
_ISO_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)",
    re.ASCII | re.IGNORECASE,
)

# Usage keys of each dialect, as (JSON key, `Usage` field). `time` is a float,
# the rest are integer counts.
_JAVA_USAGE = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cachedTokens", "cache_read_input_tokens"),
    ("time", "time_seconds"),
)
_AS2_USAGE = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_input_tokens", "cache_read_input_tokens"),
    ("cache_creation_input_tokens", "cache_creation_input_tokens"),
)
_JAVA_USAGE_KEYS = frozenset(key for key, _ in _JAVA_USAGE) | {"totalTokens"}
_AS2_USAGE_KEYS = frozenset(key for key, _ in _AS2_USAGE)


# --- Detection ---------------------------------------------------------------


def _walk_blocks(items: Any) -> Iterator[Mapping[str, Any]]:
    """Every block dict in a content list, tool result outputs included."""
    stack = [items]
    while stack:
        current = stack.pop()
        if not isinstance(current, list):
            continue
        for item in current:
            if type(item) is dict or isinstance(item, Mapping):
                yield item
                if item.get("type") == "tool_result":
                    stack.append(item.get("output"))


def _kind(block: Mapping[str, Any]) -> str | None:
    kind = block.get("type")
    return kind if isinstance(kind, str) else None


def _has_java_block_traces(block: Mapping[str, Any]) -> bool:
    kind = _kind(block)
    if kind == "tool_use":
        return "content" in block
    if kind == "thinking":
        return "metadata" in block
    if kind == "tool_result":
        return "state" in block or "metadata" in block
    if kind in _JAVA_MEDIA_KEYS and any(key in block for key in _JAVA_MEDIA_KEYS[kind]):
        return True
    source = block.get("source")
    return isinstance(source, Mapping) and "mime_type" in source


def _has_as2_traces(data: Mapping[str, Any], blocks: list[Mapping[str, Any]]) -> bool:
    if any(key in data for key in _AS2_TOP_KEYS):
        return True
    usage = data.get("usage")
    if isinstance(usage, Mapping) and any(key in _AS2_USAGE_KEYS for key in usage):
        return True
    return any(_kind(b) in _AS2_BLOCK_TYPES or "created_at" in b for b in blocks)


def _has_java_traces(data: Mapping[str, Any], blocks: list[Mapping[str, Any]]) -> bool:
    if "usage" in data:
        usage = data["usage"]
        if usage is None or (
            isinstance(usage, Mapping) and any(key in _JAVA_USAGE_KEYS for key in usage)
        ):
            return True
    if "name" in data and data["name"] is None:
        return True
    timestamp = data.get("timestamp")
    # 1.x timestamps have no "T": skip the regex for them.
    if (
        isinstance(timestamp, str)
        and ("T" in timestamp or "t" in timestamp)
        and _ISO_INSTANT.fullmatch(timestamp)
    ):
        return True
    return any(_has_java_block_traces(b) for b in blocks)


def detect_dialect(data: Any) -> Dialect:
    """The dialect `from_dict` reads `data` in when none is given.

    See the module docstring for the rules. Anything that is not clearly
    agentscope-java or AgentScope 2.x is AgentScope 1.x.
    """
    if not isinstance(data, Mapping):
        return "agentscope"
    role = data.get("role")
    if isinstance(role, str) and role not in _ROLES and role.lower() in _ANY_CASE_ROLES:
        return "java"
    content = data.get("content")
    blocks = list(_walk_blocks(content))
    if "timestamp" not in data and _has_as2_traces(data, blocks):
        return "agentscope2"
    if isinstance(content, str) or "invocation_id" in data:
        return "agentscope"
    if _has_java_traces(data, blocks):
        return "java"
    return "agentscope"


# --- Shared readers ----------------------------------------------------------


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _required(data: Mapping[str, Any], key: str) -> Any:
    if key not in data:
        raise MessageFormatError(key, "missing")
    return data[key]


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise MessageFormatError(key, f"expected a string or null, got {_type_name(value)}")
    return value


def _read_role(value: Any, roles: Mapping[str, Role.ValueType], any_case: bool) -> Role.ValueType:
    key = value.lower() if any_case and isinstance(value, str) else value
    if not isinstance(key, str) or key not in roles:
        expected = ", ".join(map(repr, roles)) + (" in any case" if any_case else "")
        raise MessageFormatError("role", f"expected one of {expected}, got {value!r}")
    return roles[key]


def _set_content(
    msg: Msg, content: Any, read_block: Callable[[Any, str], ContentBlock | None]
) -> None:
    if isinstance(content, str):
        msg.text = content
        return
    if not isinstance(content, list):
        raise MessageFormatError(
            "content", f"expected a string or a list of blocks, got {_type_name(content)}"
        )
    msg.blocks.SetInParent()
    items = msg.blocks.items
    if read_block is block_from_dict:
        # The plain 1.x reader: build the blocks in place instead of copying them in.
        blocks_from_list(content, "content", items)
        return
    for index, item in enumerate(content):
        block = read_block(item, f"content[{index}]")
        if block is not None:
            items.append(block)


def _set_metadata(msg: Msg, metadata: Any) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, Mapping):
        raise MessageFormatError(
            "metadata", f"expected an object or null, got {_type_name(metadata)}"
        )
    msg.metadata_json = _json.dumps(metadata, "metadata")


def _set_extras(msg: Msg, data: Mapping[str, Any], known: frozenset[str]) -> None:
    extras = {k: v for k, v in data.items() if k not in known}
    if extras:
        for key, value in extras.items():
            _json.dumps(value, str(key))
        msg.extra_json = _json.dumps(extras, "")


def _set_usage(msg: Msg, value: Any, keys: tuple[tuple[str, str], ...]) -> None:
    """Read a usage object; unknown keys (Java's derived `totalTokens`) are ignored."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise MessageFormatError("usage", f"expected an object or null, got {_type_name(value)}")
    usage = Usage()
    for key, field in keys:
        number = value.get(key)
        if number is None:
            continue
        path = f"usage.{key}"
        if field == "time_seconds":
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise MessageFormatError(path, f"expected a number, got {_type_name(number)}")
            usage.time_seconds = float(number)
        else:
            if isinstance(number, bool) or not isinstance(number, int):
                raise MessageFormatError(path, f"expected an integer, got {_type_name(number)}")
            if not -(2**63) <= number < 2**63:
                raise MessageFormatError(path, f"{number} does not fit in 64 bits")
            setattr(usage, field, number)
    msg.usage.CopyFrom(usage)


def _with_output(
    data: Mapping[str, Any], path: str, read_block: Callable[[Any, str], ContentBlock | None]
) -> ContentBlock:
    """A tool_result block whose list output may hold any block kind."""
    output = data.get("output")
    if not isinstance(output, list):
        return block_from_dict(data, path)
    wrapper = block_from_dict({**data, "output": []}, path)
    items = wrapper.tool_result.blocks.items
    for index, item in enumerate(output):
        block = read_block(item, f"{path}.output[{index}]")
        if block is not None:
            items.append(block)
    return wrapper


def _is_canonical_b64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return base64.b64encode(base64.b64decode(value, validate=True)).decode() == value
    except (binascii.Error, ValueError):
        return False


# --- AgentScope 1.x ----------------------------------------------------------


def _from_agentscope(data: Mapping[str, Any]) -> Msg:
    msg = Msg()
    name = _required(data, "name")
    if name is not None:
        if not isinstance(name, str):
            raise MessageFormatError("name", f"expected a string, got {_type_name(name)}")
        msg.name = name
    msg.role = _read_role(_required(data, "role"), _ROLES, any_case=False)
    _set_content(msg, _required(data, "content"), block_from_dict)
    if "id" not in data:
        msg.id = new_id()
    elif (msg_id := _optional_str(data, "id")) is not None:
        msg.id = msg_id
    metadata = data.get("metadata")
    if metadata is not None:
        msg.metadata_json = _json.dumps(metadata, "metadata")
    msg.timestamp = _optional_str(data, "timestamp") or new_timestamp()
    invocation_id = _optional_str(data, "invocation_id")
    if invocation_id is not None:
        msg.invocation_id = invocation_id
    _set_extras(msg, data, _MSG_KEYS)
    return msg


def _to_agentscope(msg: Msg) -> dict[str, Any]:
    if msg.role not in _ROLE_NAMES:
        raise MessageFormatError("role", "unset")
    content: str | list[dict[str, Any]]
    content = msg.text if msg.WhichOneof("content") == "text" else blocks_to_list(msg.blocks.items)
    metadata = _json.loads(msg.metadata_json, "metadata") if msg.HasField("metadata_json") else None
    return {
        "id": msg.id if msg.HasField("id") else None,
        "name": msg.name if msg.HasField("name") else None,
        "role": _ROLE_NAMES[msg.role],
        "content": content,
        # AgentScope stores `metadata or {}`.
        "metadata": metadata or {},
        "timestamp": msg.timestamp,
    }


# --- agentscope-java ---------------------------------------------------------


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
        if _is_canonical_b64(signature):
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


_KNOBS = dict.fromkeys(_JAVA_MEDIA_KEYS["video"], _drop_null)
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
        "state": _state_in(_RESULT_STATES),
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
        raise MessageFormatError(path, f"expected a block object, got {_type_name(item)}")
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in _FROM_JAVA:
        return block_from_dict(item, path)
    data = _from_java_block(kind, item)
    if kind == "tool_result":
        return _with_output(data, path, _java_block)
    return block_from_dict(data, path)


def _from_java(data: Mapping[str, Any]) -> Msg:
    msg = Msg()
    if (msg_id := _optional_str(data, "id")) is not None:
        msg.id = msg_id
    if (name := _optional_str(data, "name")) is not None:
        msg.name = name
    msg.role = _read_role(_required(data, "role"), _ANY_CASE_ROLES, any_case=True)
    content = data.get("content")
    _set_content(msg, [] if content is None else content, _java_block)
    _set_metadata(msg, data.get("metadata"))
    msg.timestamp = _optional_str(data, "timestamp") or ""
    _set_usage(msg, data.get("usage"), _JAVA_USAGE)
    _set_extras(msg, data, _JAVA_MSG_KEYS)
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
        state = _known_state(data.get("state"), _RESULT_STATES)
        return {
            "type": "tool_result",
            "id": data["id"],
            "name": data["name"],
            "output": output,
            "metadata": _object_or(data.get("metadata"), {}),
            "state": state or "running",
        }
    out: dict[str, Any] = {"type": kind, "source": _to_java_source(data["source"])}
    for key in _JAVA_MEDIA_KEYS.get(kind, ()):
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


def _to_java(msg: Msg) -> dict[str, Any]:
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
                "metadata", f"agentscope-java needs an object, got {_type_name(value)}"
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


# --- AgentScope 2.x ----------------------------------------------------------


def _rebuild(first: dict[str, Any], data: Mapping[str, Any], handled: set[str]) -> dict[str, Any]:
    """`first`, then the keys of `data` not yet handled, in their order."""
    for key, value in data.items():
        if key not in handled and key not in first:
            first[key] = value
    return first


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
    return _rebuild({k: source[k] for k in first if k in source}, source, set(first))


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
        raise MessageFormatError(f"{path}.input", f"expected a JSON string, got {_type_name(raw)}")
    return _rebuild(out, data, {"type", "id", "name", "input"})


# 2.x blocks whose keys are put in 1.x order (modelled keys first, then the
# rest as extra keys, so that no `key_order` is needed).
_AS2_FIRST: dict[str, tuple[str, ...]] = {
    "text": ("type", "text"),
    "thinking": ("type", "thinking", "signature"),
    "tool_result": ("type", "id", "name", "output", "state"),
}


def _as2_block(item: Any, path: str) -> ContentBlock | None:
    if not isinstance(item, Mapping):
        raise MessageFormatError(path, f"expected a block object, got {_type_name(item)}")
    kind = item.get("type")
    if kind == "tool_call":
        return block_from_dict(_as2_tool_call(item, path), path)
    if kind == "data":
        media = _as2_media_kind(item.get("source"))
        if media is None:
            return block_from_dict(item, path)
        data = {"type": media, "source": _as2_source(item["source"])}
        return block_from_dict(_rebuild(data, item, {"type", "source"}), path)
    first = _AS2_FIRST.get(kind) if isinstance(kind, str) else None
    if first is None:
        return block_from_dict(item, path)
    data = _rebuild({k: item[k] for k in first if k in item}, item, set(first))
    if kind == "tool_result":
        return _with_output(data, path, _as2_block)
    return block_from_dict(data, path)


def _from_agentscope2(data: Mapping[str, Any]) -> Msg:
    msg = Msg()
    name = _required(data, "name")
    if name is not None:
        if not isinstance(name, str):
            raise MessageFormatError("name", f"expected a string, got {_type_name(name)}")
        msg.name = name
    msg.role = _read_role(_required(data, "role"), _ROLES, any_case=True)
    _set_content(msg, _required(data, "content"), _as2_block)
    if "id" not in data:
        msg.id = uuid.uuid4().hex
    elif (msg_id := _optional_str(data, "id")) is not None:
        msg.id = msg_id
    _set_metadata(msg, data.get("metadata"))
    created_at = _optional_str(data, "created_at")
    msg.timestamp = created_at or _optional_str(data, "timestamp") or new_timestamp()
    _set_usage(msg, data.get("usage"), _AS2_USAGE)
    _set_extras(msg, data, _AS2_MSG_KEYS | ({"timestamp"} if created_at is None else set()))
    return msg


# --- Public API --------------------------------------------------------------

_READERS: dict[str, Callable[[Mapping[str, Any]], Msg]] = {
    "agentscope": _from_agentscope,
    "java": _from_java,
    "agentscope2": _from_agentscope2,
}
_WRITERS: dict[str, Callable[[Msg], dict[str, Any]]] = {
    "agentscope": _to_agentscope,
    "java": _to_java,
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
    1.x dialect a missing id or timestamp is generated as AgentScope does.
    Raises `MessageFormatError` naming the offending path.
    """
    if dialect is not None:
        _check_dialect(dialect, _READERS)
    if not isinstance(data, Mapping):
        raise MessageFormatError("", f"expected a message object, got {_type_name(data)}")
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
    the `Msg`. `"java"` follows the rules in the module docstring.
    `"agentscope2"` is read-only.
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
