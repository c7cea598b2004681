"""`Msg` to and from A2A 1.0 `Message` and `Artifact`, exactly (docs/a2a.md).

Every block is one A2A part in A2A's own terms (text, raw bytes, a URL, JSON
data), so any peer reads the text and the media. What A2A has no place for
travels in the AgentScope extension (`EXTENSION_URI`): each message's fields
and what a part does not hold of its block, as the ProtoJSON of this package's
schema in metadata. ProtoJSON keeps tool input and metadata as JSON text and
64-bit counts as strings, so a `google.protobuf.Struct` carries them exactly.
agentscope-java's `_agentscope_*` part keys are written too, and read when the
extension is absent. The A2A envelope of a message (context, task, ids, other
extensions, foreign metadata) is kept on its last `Msg`, in `metadata["a2a"]`,
where AgentScope 2.x's own A2A agent keeps A2A ids.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeVar

from a2a.types import AgentExtension, Artifact, Message, Part
from a2a.types import Role as A2ARole
from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message as ProtoMessage

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    ContentBlocks,
    HintBlock,
    Msg,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
)
from ..dialects.java import block_from_java
from ..errors import MessageFormatError
from ..message._codec import block_from_dict, block_to_dict
from .times import restore_times, times_to_utc

__all__ = [
    "BLOCK_KEY",
    "ENVELOPE_KEY",
    "EVENTS_KEY",
    "EXTENSION_URI",
    "JAVA_KEYS",
    "MSGS_KEY",
    "MSG_KEY",
    "REQUEST_KEY",
    "RESUME_KEY",
    "TIMES_KEY",
    "a2a_to_msg",
    "a2a_to_msgs",
    "agent_extension",
    "artifact_to_msg",
    "msg_to_a2a",
    "msg_to_artifact",
    "msgs_to_a2a",
    "prefix_speaker_names",
]

EXTENSION_URI: Final = "https://agentscope-ai.github.io/agentscope-proto/a2a/v1"
# Message or artifact metadata: the list of its Msgs, each the ProtoJSON of a
# `Msg` whose content is emptied to its kind (`"text": ""` or `"blocks": {}`).
MSGS_KEY: Final = f"{EXTENSION_URI}/msgs"
# Part metadata: the index in that list of the Msg the part belongs to.
MSG_KEY: Final = f"{EXTENSION_URI}/msg"
# Part metadata: the ProtoJSON of the part's `ContentBlock`, less what the part holds.
BLOCK_KEY: Final = f"{EXTENSION_URI}/block"
# Status update metadata of a served agent's task (agentscope_proto.a2a.server):
# the reply's events so far, each the ProtoJSON of an `AgentEvent`.
EVENTS_KEY: Final = f"{EXTENSION_URI}/events"
# Message metadata of a caller's request: the ProtoJSON of the
# `ReplyRequest` fields besides the messages (an answer, a schema).
REQUEST_KEY: Final = f"{EXTENSION_URI}/request"
# Status update metadata of a served agent's task: where its reply's log goes
# on after the update, the ProtoJSON of a `ResumeRequest` without its
# `sessionId` (the task's context), so that any replica can follow the task.
RESUME_KEY: Final = f"{EXTENSION_URI}/resume"
# Message, part or status update metadata: the original texts of the times
# the extension's ProtoJSON there holds in UTC (A2A's form; `times.py`), by
# location (`msgs[0].timestamp`, `block.text.createdAt`, `events[2].createdAt`).
TIMES_KEY: Final = f"{EXTENSION_URI}/times"
_OURS: Final = f"{EXTENSION_URI}/"
# Msg metadata key of the A2A envelope.
ENVELOPE_KEY: Final = "a2a"

# agentscope-java's part keys (agentscope-extensions-a2a-client, MessageConstants.java).
_BLOCK_TYPE = "_agentscope_block_type"
_MSG_ID = "_agentscope_msg_id"
_MSG_SOURCE = "_agentscope_msg_source"
_MSG_ROLE = "_agentscope_msg_role"
_STREAM_CHUNK = "_agentscope_stream_chunk"
_TOOL_NAME = "_agentscope_tool_name"
_TOOL_CALL_ID = "_agentscope_tool_call_id"
_TOOL_OUTPUT = "_agentscope_tool_output"
JAVA_KEYS: Final = (
    _BLOCK_TYPE,
    _MSG_ID,
    _MSG_SOURCE,
    _MSG_ROLE,
    _STREAM_CHUNK,
    _TOOL_NAME,
    _TOOL_CALL_ID,
    _TOOL_OUTPUT,
)
_JAVA_ROLES = {
    Role.ROLE_USER: "USER",
    Role.ROLE_ASSISTANT: "ASSISTANT",
    Role.ROLE_SYSTEM: "SYSTEM",
    Role.ROLE_TOOL: "TOOL",
}
_FROM_JAVA_ROLE = {name: role for role, name in _JAVA_ROLES.items()}
# agentscope-java's rule: assistant and tool messages are the agent's.
_A2A_ROLES = {
    Role.ROLE_USER: "ROLE_USER",
    Role.ROLE_SYSTEM: "ROLE_USER",
    Role.ROLE_ASSISTANT: "ROLE_AGENT",
    Role.ROLE_TOOL: "ROLE_AGENT",
}
_A2A_ROLE_NAMES = frozenset(A2ARole.keys())
_MEDIA = ("image", "audio", "video", "data")
_NULL = struct_pb2.Value(null_value=struct_pb2.NULL_VALUE)
_MAX_EXACT = 2**53
# JSON levels a Struct value may nest: with the envelope around it (a
# streamed artifact's part metadata sits 7 messages deep) it stays well within
# the 100 nested messages protobuf's decoders accept.
_MAX_STRUCT_DEPTH = 24


# --- JSON values in A2A's Struct ---------------------------------------------


def _ints(value: Any) -> Any:
    """Integral numbers as ints (a JSON peer's `42` arrives in a Struct as 42.0)
    and object keys sorted (a Struct keeps no order, and its map's iteration
    order varies between processes: sorted, the same value reads the same)."""
    if isinstance(value, float):
        negative_zero = value == 0 and math.copysign(1.0, value) < 0
        if value.is_integer() and abs(value) <= _MAX_EXACT and not negative_zero:
            return int(value)
        return value
    if isinstance(value, dict):
        return {key: _ints(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_ints(item) for item in value]
    return value


def _py(value: ProtoMessage) -> Any:
    """A Struct, Value or ListValue as Python values: as `_ints` of
    `json_format.MessageToDict` gives them (a test holds the two equal), read
    directly where it can (its generic walk was a fifth of reading a peer's
    message)."""
    reader = _READERS.get(value.DESCRIPTOR.full_name)
    if reader is not None:
        with contextlib.suppress(_NotFinite):
            return reader(value)
    return _ints(json_format.MessageToDict(value))  # its own error for NaN and infinities


class _NotFinite(Exception):
    """A NaN or an infinity, which `MessageToDict` refuses in its own way."""


def _read_value(value: struct_pb2.Value) -> Any:
    which = value.WhichOneof("kind")
    if which == "string_value":
        return value.string_value
    if which == "struct_value":
        return _read_struct(value.struct_value)
    if which == "number_value":
        return _ints(_finite(value.number_value))
    if which == "list_value":
        return _read_list(value.list_value)
    if which == "bool_value":
        return value.bool_value
    return None  # null, or not set


def _finite(number: float) -> float:
    if not math.isfinite(number):
        raise _NotFinite
    return number


def _read_struct(struct: struct_pb2.Struct) -> dict[str, Any]:
    fields = struct.fields
    return {key: _read_value(fields[key]) for key in sorted(fields)}


def _read_list(values: struct_pb2.ListValue) -> list[Any]:
    return [_read_value(value) for value in values.values]


_READERS: dict[str, Callable[[Any], Any]] = {
    struct_pb2.Struct.DESCRIPTOR.full_name: _read_struct,
    struct_pb2.Value.DESCRIPTOR.full_name: _read_value,
    struct_pb2.ListValue.DESCRIPTOR.full_name: _read_list,
}


def _value(data: Any) -> struct_pb2.Value:
    """`data` as a Struct value (`_set`)."""
    value = struct_pb2.Value()
    _set(value, data)
    return value


def _set(value: struct_pb2.Value, data: Any) -> None:
    """`data` into `value`; nested too deep for protobuf's decoders (100
    messages, three per JSON level) it is its JSON text."""
    if isinstance(data, (dict, list)):  # what the depth check walks
        try:
            _json.check_depth(data, limit=_MAX_STRUCT_DEPTH)
        except MessageFormatError:
            value.string_value = _json.dumps(data)
            return
    fill_value(value, data)


def fill_value(value: struct_pb2.Value, data: Any) -> None:
    """`data` into `value` as `json_format.ParseDict` puts it (a test holds
    the two equal), in place: ParseDict's generic walk took half of a
    reply's mapping."""
    kind = type(data)
    if kind is str:
        value.string_value = data
    elif kind is dict:
        struct = value.struct_value
        struct.Clear()  # present even when empty
        fields = struct.fields
        for key in data:
            fill_value(fields[key], data[key])
    elif kind is list:
        value.list_value.Clear()  # present even when empty
        values = value.list_value.values
        for item in data:
            fill_value(values.add(), item)
    elif data is None:
        value.null_value = struct_pb2.NULL_VALUE
    elif kind is bool:
        value.bool_value = data
    elif kind is int or kind is float:
        value.number_value = data
    else:  # what JSON does not hold (a subclass, a tuple): as ParseDict takes it, or its error
        json_format.ParseDict(data, value)


def _put(struct: struct_pb2.Struct, items: dict[str, Any]) -> None:
    fields = struct.fields
    for key, data in items.items():
        _set(fields[key], data)


def _norm(data: Any) -> Any:
    """`data` as it reads back from a Struct, for comparisons."""
    return _py(_value(data))


def _parse(data: Any, message: ProtoMessage, path: str) -> None:
    if isinstance(data, str):
        # A payload too deep for a Struct travels as its JSON text (`_value`).
        data = _json.loads(data, path)
    if not isinstance(data, dict):
        raise MessageFormatError(
            path, f"expected the ProtoJSON object of {message.DESCRIPTOR.name}"
        )
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        reason = f"not the ProtoJSON of {message.DESCRIPTOR.name}: {error}"
        raise MessageFormatError(path, reason) from None
    except UnicodeEncodeError:
        raise MessageFormatError(path, "a string contains a lone surrogate") from None


def keep_times(metadata: struct_pb2.Struct, originals: dict[str, str]) -> None:
    """Add `originals` (from `times_to_utc`) to the times kept in `metadata`."""
    if originals:
        _put(metadata, {TIMES_KEY: {**times_of(metadata), **originals}})


def times_of(metadata: struct_pb2.Struct) -> dict[str, Any]:
    """The original times kept in `metadata` (none when a peer wrote it)."""
    value = _py(metadata.fields[TIMES_KEY]) if TIMES_KEY in metadata.fields else None
    return value if isinstance(value, dict) else {}


def _object(text: str, path: str) -> dict[str, Any]:
    value = _json.loads(text, path) if text else {}
    return value if isinstance(value, dict) else {}


# --- Msg -> parts --------------------------------------------------------------


def _texts(blocks: ContentBlocks) -> str:
    return "\n".join(b.text.text for b in blocks.items if b.WhichOneof("block") == "text")


def _lenient_b64(text: str) -> bytes:
    """What bytes non-canonical base64 text most likely means (for peers; the
    text itself travels in the extension)."""
    cleaned = re.sub(r"[^A-Za-z0-9+/]", "", text.replace("-", "+").replace("_", "/"))
    cleaned = cleaned[: len(cleaned) - (len(cleaned) % 4 == 1)]
    try:
        return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4))
    except binascii.Error:  # pragma: no cover - cleaned text always decodes
        return b""


# Each writer returns the part for a block and clears, in the block (the copy
# that becomes the payload), what the part holds exactly; `_FILL` puts it back.


def _text_part(inner: TextBlock, path: str) -> Part:
    if _part_extras(inner).get("data") is True:
        # A peer's data part, read as its JSON text: it goes back as data.
        try:
            return Part(data=_value(_json.loads(inner.text, path)))
        except MessageFormatError:
            pass
    part = Part(text=inner.text)
    inner.text = ""
    return part


def _thinking_part(inner: ThinkingBlock, path: str) -> Part:
    part = Part(text=inner.thinking)
    inner.thinking = ""
    return part


def _hint_part(inner: HintBlock, path: str) -> Part:
    which = inner.WhichOneof("hint")
    if which == "text":
        part = Part(text=inner.text)
        inner.ClearField("hint")
        return part
    return Part(text=_texts(inner.blocks)) if which == "blocks" else Part(data=_NULL)


def _media_part(inner: Any, path: str) -> Part:
    source = inner.source
    which = source.WhichOneof("source") if inner.HasField("source") else None
    if which == "data":
        part = Part(raw=source.data)
        source.ClearField("data")
    elif which == "url":
        part = Part(url=source.url)
        source.ClearField("url")
    elif which == "base64_text":
        part = Part(raw=_lenient_b64(source.base64_text))
    else:
        part = Part(data=_NULL)
    if which and source.media_type:
        part.media_type = source.media_type
        source.ClearField("media_type")
    if inner.name:
        part.filename = inner.name
        inner.ClearField("name")
    return part


def _tool_use_part(inner: Any, path: str) -> Part:
    tool_input = _json.loads(inner.input_json, f"{path}.input_json") if inner.input_json else {}
    part = Part(data=_value(tool_input))
    # agentscope-java merges the call's metadata (Gemini's signature) into the part's.
    metadata = _object(inner.extra_json, f"{path}.extra_json").get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    if inner.HasField("thought_signature"):
        metadata["thoughtSignature"] = base64.b64encode(inner.thought_signature).decode()
    _put(part.metadata, metadata)
    _tool_keys(inner, part)
    return part


def _tool_keys(inner: Any, part: Part) -> None:
    """agentscope-java's keys hold a tool call's or result's id and tool name exactly."""
    _put(part.metadata, {_TOOL_CALL_ID: inner.id, _TOOL_NAME: inner.name})
    inner.id = inner.name = ""


def _tool_result_part(inner: ToolResultBlock, path: str) -> Part:
    which = inner.WhichOneof("output")
    output = inner.text if which == "text" else _texts(inner.blocks) if which else None
    if which == "text":
        inner.ClearField("output")
    part = Part(data=_value({_TOOL_OUTPUT: output}))
    metadata = _object(inner.metadata_json, f"{path}.metadata_json")
    # agentscope-java merges the result's metadata into the part's (nulls it refuses).
    _put(part.metadata, {k: v for k, v in metadata.items() if v is not None})
    _tool_keys(inner, part)
    return part


def _dict_part(inner: Any, path: str) -> Part:
    # The dict in its canonical key order (a Struct keeps none).
    canonical = type(inner)()
    canonical.CopyFrom(inner)
    canonical.ClearField("key_order")
    return Part(data=_value(block_to_dict(canonical)))


def _opaque_part(inner: Any, path: str) -> Part:
    return Part(data=_value(_json.loads(inner.block_json, path) if inner.block_json else {}))


_WRITERS: dict[str, Callable[[Any, str], Part]] = {
    "text": _text_part,
    "thinking": _thinking_part,
    "hint": _hint_part,
    **dict.fromkeys(_MEDIA, _media_part),
    "tool_use": _tool_use_part,
    "tool_result": _tool_result_part,
    **dict.fromkeys(("server_tool_use", "server_tool_result", "grounding"), _dict_part),
    "opaque": _opaque_part,
}


def _part_extras(inner: Any) -> dict[str, Any]:
    """What a peer's part held beyond its block (`extra_json["a2a"]`; see `_plain_block`)."""
    extra = getattr(inner, "extra_json", "")
    extras = _object(extra, "extra_json").get(ENVELOPE_KEY) if extra else None
    return extras if isinstance(extras, dict) else {}


def _block_part(block: ContentBlock, keys: dict[str, Any], path: str) -> Part:
    payload = ContentBlock()
    payload.CopyFrom(block)
    kind = payload.WhichOneof("block")
    if kind is None:
        part = Part(data=_NULL)
    else:
        inner = getattr(payload, kind)
        part = _WRITERS[kind](inner, path)
        extras = _part_extras(inner)
        if isinstance(extras.get("metadata"), dict):
            for key, value in extras["metadata"].items():
                if key not in part.metadata:
                    _put(part.metadata, {key: value})
        for field in ("media_type", "filename"):
            if isinstance(extras.get(field), str) and not getattr(part, field):
                setattr(part, field, extras[field])
        _put(part.metadata, {_BLOCK_TYPE: inner.block_type if kind == "opaque" else kind})
    originals: dict[str, str] = {}
    written = times_to_utc(json_format.MessageToDict(payload), "block", originals)
    _put(part.metadata, {**keys, BLOCK_KEY: written})
    keep_times(part.metadata, originals)
    return part


def _msg_keys(msg: Msg, index: int) -> dict[str, Any]:
    keys: dict[str, Any] = {MSG_KEY: index}
    if msg.HasField("id"):
        keys[_MSG_ID] = msg.id
    if msg.HasField("name"):
        keys[_MSG_SOURCE] = msg.name
    if msg.role in _JAVA_ROLES:
        keys[_MSG_ROLE] = _JAVA_ROLES[msg.role]
    return keys


def _write_parts(
    msgs: Sequence[Msg], times: dict[str, str]
) -> tuple[list[Part], list[dict[str, Any]]]:
    """The parts and the Msgs' payloads; their original times go in `times`."""
    parts: list[Part] = []
    payloads: list[dict[str, Any]] = []
    for index, msg in enumerate(msgs):
        keys = _msg_keys(msg, index)
        shell = Msg()
        shell.CopyFrom(msg)
        which = msg.WhichOneof("content")
        if which == "text":
            part = Part(text=msg.text)
            _put(part.metadata, {_BLOCK_TYPE: "text", **keys})
            parts.append(part)
            shell.text = ""
        elif which == "blocks":
            shell.blocks.ClearField("items")
            for j, block in enumerate(msg.blocks.items):
                parts.append(_block_part(block, keys, f"msgs[{index}].content[{j}]"))
        payloads.append(times_to_utc(json_format.MessageToDict(shell), f"msgs[{index}]", times))
    return parts, payloads


# --- parts -> Msg ----------------------------------------------------------------


def _fill_text(inner: Any, part: Part, field: str) -> None:
    if part.WhichOneof("content") == "text" and not getattr(inner, field):
        setattr(inner, field, part.text)


def _fill_hint(inner: HintBlock, part: Part) -> None:
    if part.WhichOneof("content") == "text" and inner.WhichOneof("hint") is None:
        inner.text = part.text


def _fill_media(inner: Any, part: Part) -> None:
    content = part.WhichOneof("content")
    if content in ("raw", "url"):
        source = inner.source
        if source.WhichOneof("source") is None:
            setattr(source, "data" if content == "raw" else "url", getattr(part, content))
        if part.media_type and not source.HasField("media_type"):
            source.media_type = part.media_type
    if part.filename and not inner.HasField("name"):
        inner.name = part.filename


def _fill_tool(inner: Any, part: Part) -> None:
    fields = part.metadata.fields
    for key, field in ((_TOOL_CALL_ID, "id"), (_TOOL_NAME, "name")):
        value = fields.get(key)
        if (
            value is not None
            and value.WhichOneof("kind") == "string_value"
            and not getattr(inner, field)
        ):
            setattr(inner, field, value.string_value)


def _fill_tool_result(inner: ToolResultBlock, part: Part) -> None:
    _fill_tool(inner, part)
    if part.WhichOneof("content") == "data" and inner.WhichOneof("output") is None:
        value = _py(part.data)
        if isinstance(value, dict) and isinstance(value.get(_TOOL_OUTPUT), str):
            inner.text = value[_TOOL_OUTPUT]


_FILL: dict[str, Callable[[Any, Part], None]] = {
    "text": lambda inner, part: _fill_text(inner, part, "text"),
    "thinking": lambda inner, part: _fill_text(inner, part, "thinking"),
    "hint": _fill_hint,
    **dict.fromkeys(_MEDIA, _fill_media),
    "tool_use": _fill_tool,
    "tool_result": _fill_tool_result,
}


def _with_extras(block: ContentBlock, extras: dict[str, Any]) -> ContentBlock:
    """Keep what a peer's part held beyond the block in its `extra_json["a2a"]`."""
    extras = {key: value for key, value in extras.items() if value not in ("", {}, None)}
    kind = block.WhichOneof("block")
    if extras and kind is not None and kind != "opaque":
        inner = getattr(block, kind)
        inner.extra_json = _json.dumps({**_object(inner.extra_json, "extra_json"), "a2a": extras})
    return block


def _media_kind(part: Part, kind: Any) -> str:
    if kind in _MEDIA:
        return str(kind)
    top = part.media_type.split("/", 1)[0].lower()
    return top if top in ("image", "audio", "video") else "data"


def _plain_block(part: Part, meta: dict[str, Any], path: str) -> ContentBlock:
    """A part without the extension's block: agentscope-java's keys, else A2A alone.
    What the part holds beyond the block stays in the block's `extra_json["a2a"]`."""
    kind = meta.get(_BLOCK_TYPE)
    leftover = {k: v for k, v in meta.items() if k not in JAVA_KEYS and not k.startswith(_OURS)}
    content = part.WhichOneof("content")
    extras: dict[str, Any] = {"metadata": leftover}
    block = ContentBlock()
    if content == "text":
        if kind == "thinking":
            block.thinking.thinking = part.text
        elif kind == "hint":
            block.hint.text = part.text
        else:
            block.text.text = part.text
        extras.update(media_type=part.media_type, filename=part.filename)
    elif content in ("raw", "url"):
        inner = getattr(block, _media_kind(part, kind))
        setattr(inner.source, "url" if content == "url" else "data", getattr(part, content))
        if part.media_type:
            inner.source.media_type = part.media_type
        if part.filename:
            inner.name = part.filename
    elif content == "data":
        return _plain_data_block(part, meta, leftover, path)
    else:
        raise MessageFormatError(path, "a part holds no text, raw, url or data")
    return _with_extras(block, extras)


_M = TypeVar("_M", bound=ProtoMessage)


def _unordered(message: _M) -> _M:
    """`message` without key orders: read from a Struct, which keeps none."""
    for field, value in message.ListFields():
        if field.name == "key_order":
            message.ClearField("key_order")
        elif field.message_type is not None:
            for item in value if _repeated(field) else [value]:
                _unordered(item)
    return message


def _repeated(field: Any) -> bool:
    # `label` is gone in protobuf 7; `is_repeated` is not in 5.29.
    if hasattr(field, "is_repeated"):
        return bool(field.is_repeated)
    return bool(field.label == field.LABEL_REPEATED)


def _plain_data_block(
    part: Part, meta: dict[str, Any], leftover: dict[str, Any], path: str
) -> ContentBlock:
    kind = meta.get(_BLOCK_TYPE)
    value = _py(part.data)
    data_path = f"{path}.data"
    if kind in ("tool_use", "tool_result"):
        # As agentscope-java's DataPartParser reads it: the other keys are the
        # block's metadata, a string output is one text.
        item: dict[str, Any] = {"type": kind, "id": meta.get(_TOOL_CALL_ID)}
        item["name"] = meta.get(_TOOL_NAME)
        output = value.get(_TOOL_OUTPUT) if isinstance(value, dict) else None
        if kind == "tool_use":
            item["input"] = value
        elif isinstance(output, list):
            item["output"] = output
        if leftover:
            item["metadata"] = leftover
        block = block_from_java(item, data_path) or ContentBlock()
        if isinstance(output, str):
            block.tool_result.text = output
        return _unordered(block)
    if isinstance(kind, str) and isinstance(value, dict) and value.get("type") == kind:
        # The AgentScope dict of a block A2A has no part for (server tools, ...).
        return _unordered(block_from_dict(value, data_path))
    extras = {"data": True, "metadata": leftover}
    extras.update(media_type=part.media_type, filename=part.filename)
    return _with_extras(ContentBlock(text=TextBlock(text=_json.dumps(value, data_path))), extras)


def _payload_block(part: Part, data: Any, path: str) -> ContentBlock:
    times = times_of(part.metadata)
    if times:
        if isinstance(data, str):  # a block too deep for a Struct
            data = _json.loads(data, f'{path}.metadata["{BLOCK_KEY}"]')
        restore_times(data, "block", times)
    block = ContentBlock()
    _parse(data, block, f'{path}.metadata["{BLOCK_KEY}"]')
    kind = block.WhichOneof("block")
    if kind is None and data:
        # A kind this reader does not know (a newer schema's): read the part.
        return _plain_block(part, _py(part.metadata), path)
    if kind in _FILL:
        _FILL[kind](getattr(block, kind), part)
    return block


def _read_payloads(
    parts: Sequence[Part], payloads: Any, source: str, times: dict[str, Any]
) -> list[Msg]:
    """The Msgs of a message that speaks the extension, with their original times."""
    path = f'{source}.metadata["{MSGS_KEY}"]'
    if isinstance(payloads, str):
        payloads = _json.loads(payloads, path)
    if not isinstance(payloads, list) or not payloads:
        raise MessageFormatError(path, "expected a non-empty list of Msg objects")
    restore_times(payloads, "msgs", times)
    msgs = []
    for index, data in enumerate(payloads):
        msg = Msg()
        _parse(data, msg, f"{path}[{index}]")
        msgs.append(msg)
    for index, part in enumerate(parts):
        part_path = f"{source}.parts[{index}]"
        fields = part.metadata.fields
        position = _py(fields[MSG_KEY]) if MSG_KEY in fields else None
        if not isinstance(position, int) or not 0 <= position < len(msgs):
            raise MessageFormatError(
                f'{part_path}.metadata["{MSG_KEY}"]',
                f"expected the index of one of the {len(msgs)} messages, got {position!r}",
            )
        msg = msgs[position]
        if msg.WhichOneof("content") == "text":
            msg.text += part.text
        elif BLOCK_KEY in fields:
            msg.blocks.items.append(_payload_block(part, _py(fields[BLOCK_KEY]), part_path))
        else:
            msg.blocks.items.append(_plain_block(part, _py(part.metadata), part_path))
    return msgs


def _is_chunk(metadata: dict[str, Any]) -> bool:
    return str(metadata.get(_STREAM_CHUNK)).lower() == "true"


def _read_plain(
    parts: Sequence[Part],
    metadata: dict[str, Any],
    *,
    fallback_id: str,
    role: Role.ValueType,
    name: str,
    source: str,
    group: bool,
) -> list[Msg]:
    """The Msgs of a message without the extension: one per agentscope-java
    message id (`group`), else one; agentscope-java's metadata read as it writes it."""
    msgs: dict[Any, Msg] = {}
    chunked: dict[Any, str] = {}
    java = False
    for index, part in enumerate(parts):
        meta = _py(part.metadata)
        java = java or _MSG_ID in meta or _BLOCK_TYPE in meta
        java_id = meta.get(_MSG_ID) if isinstance(meta.get(_MSG_ID), str) else None
        key = java_id if group else None
        msg = msgs.get(key)
        if msg is None:
            # An artifact's one Msg is the Java message it streams, when it says.
            msg = msgs[key] = Msg(id=java_id if java_id is not None else fallback_id)
            msg.blocks.SetInParent()
        if not msg.HasField("name") and isinstance(meta.get(_MSG_SOURCE), str):
            msg.name = meta[_MSG_SOURCE]
        if msg.role == Role.ROLE_UNSPECIFIED and meta.get(_MSG_ROLE) in _FROM_JAVA_ROLE:
            msg.role = _FROM_JAVA_ROLE[meta[_MSG_ROLE]]
        block = _plain_block(part, meta, f"{source}.parts[{index}]")
        kind = block.WhichOneof("block")
        # agentscope-java streams a reply as chunks of text and thinking to merge.
        if _is_chunk(meta) and kind in ("text", "thinking"):
            if chunked.get(key) == kind:
                last = getattr(msg.blocks.items[-1], kind)
                setattr(last, kind, getattr(last, kind) + getattr(getattr(block, kind), kind))
                continue
            chunked[key] = kind
        else:
            chunked.pop(key, None)
        msg.blocks.items.append(block)
    if not msgs:
        msgs[None] = Msg(id=fallback_id)
        msgs[None].blocks.SetInParent()
    for key, msg in msgs.items():
        if not msg.HasField("name"):
            msg.name = name
        if msg.role == Role.ROLE_UNSPECIFIED:
            msg.role = role
        if group:
            own = metadata.get(key)
        else:
            own = {k: v for k, v in metadata.items() if java and not k.startswith(_OURS)}
        if isinstance(own, dict) and own:
            msg.metadata_json = _json.dumps(own, "metadata")
    return list(msgs.values())


# --- The A2A envelope ---------------------------------------------------------------
# A message's or artifact's own fields are kept on its last Msg, in
# `metadata["a2a"]`, wherever they differ from what the writer derives from the
# Msgs; the writer takes them from there (arguments first), so A2A -> Msg -> A2A
# keeps them. `metadata` holds the keys neither the extension nor
# agentscope-java's convention wrote.

_MESSAGE_FIELDS = (
    "message_id",
    "role",
    "context_id",
    "task_id",
    "reference_task_ids",
    "extensions",
    "metadata",
)
_ARTIFACT_FIELDS = ("artifact_id", "name", "description", "extensions", "metadata")
_LISTS = frozenset({"reference_task_ids", "extensions"})
_Target = Message | Artifact


def _metadata_of(msg: Msg) -> Any:
    return _json.loads(msg.metadata_json, "metadata") if msg.HasField("metadata_json") else None


def _own_metadata(msg: Msg) -> dict[str, Any]:
    metadata = _metadata_of(msg)
    if not isinstance(metadata, dict):
        return {}
    return {key: value for key, value in metadata.items() if key != ENVELOPE_KEY}


def _java_message_metadata(msgs: Sequence[Msg]) -> dict[str, Any]:
    """agentscope-java's: each message's metadata under its id."""
    return {m.id: own for m in msgs if m.HasField("id") and (own := _own_metadata(m))}


def _java_artifact_metadata(msgs: Sequence[Msg]) -> dict[str, Any]:
    """agentscope-java's: the artifact's metadata is its message's."""
    return _own_metadata(msgs[-1])


def _valid(key: str, value: Any) -> bool:
    if key in _LISTS:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if key == "metadata":
        return isinstance(value, dict)
    if key == "role":
        return value in _A2A_ROLE_NAMES or type(value) is int
    return isinstance(value, str)


def _record(msg: Msg, fields: Sequence[str]) -> dict[str, Any]:
    metadata = _metadata_of(msg)
    record = metadata.get(ENVELOPE_KEY) if isinstance(metadata, dict) else None
    if record is None:
        return {}
    path = f"metadata.{ENVELOPE_KEY}"
    if not isinstance(record, dict):
        raise MessageFormatError(path, "expected an object (the A2A envelope)")
    for key in fields:
        if key in record and not _valid(key, record[key]):
            raise MessageFormatError(f"{path}.{key}", f"not a valid A2A {key}: {record[key]!r}")
    return record


def _own_id(msgs: Sequence[Msg]) -> bool:
    return len(msgs) == 1 and bool(msgs[0].id)


def _derived_id(msgs: Sequence[Msg]) -> str:
    """A Msg's own id, else one derived from the Msgs' bytes: the same on
    every conversion, so reading back can tell it from an id given in transit."""
    if _own_id(msgs):
        return msgs[0].id
    digest = hashlib.sha256()
    for msg in msgs:
        data = msg.SerializeToString(deterministic=True)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:32]


def _default_role(msgs: Sequence[Msg]) -> str:
    roles = {_A2A_ROLES[m.role] for m in msgs if m.role in _A2A_ROLES}
    return roles.pop() if len(roles) == 1 else "ROLE_USER"


_DEFAULTS: dict[str, Callable[[Sequence[Msg]], Any]] = {
    "message_id": _derived_id,
    "artifact_id": _derived_id,
    "role": _default_role,
    "name": lambda msgs: msgs[-1].name,
    "reference_task_ids": lambda msgs: [],
    "extensions": lambda msgs: [],
    "metadata": lambda msgs: {},
}


def _default(field: str, msgs: Sequence[Msg]) -> Any:
    return _DEFAULTS[field](msgs) if field in _DEFAULTS else ""


def _envelope(msgs: Sequence[Msg], fields: Sequence[str], args: dict[str, Any]) -> dict[str, Any]:
    record = _record(msgs[-1], fields)
    values = {}
    for field in fields:
        if args.get(field) is not None:
            values[field] = args[field]
        else:
            values[field] = record[field] if field in record else _default(field, msgs)
    return values


def _set_envelope(
    target: _Target, values: dict[str, Any], java: dict[str, Any], payloads: Any
) -> None:
    for field, value in values.items():
        if field == "role":
            target.role = A2ARole.Value(value) if isinstance(value, str) else value  # type: ignore[union-attr]
        elif field == "extensions":
            target.extensions.extend([e for e in value if e != EXTENSION_URI] + [EXTENSION_URI])
        elif field in _LISTS:
            getattr(target, field).extend(value)
        elif field == "metadata":
            _put(target.metadata, java)
            _put(target.metadata, {k: v for k, v in value.items() if not k.startswith(_OURS)})
        else:
            setattr(target, field, value)
    if payloads is not None:
        _put(target.metadata, {MSGS_KEY: payloads})


def _read_envelope(target: _Target, fields: Sequence[str], java: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for field in fields:
        if field == "role":
            role = target.role  # type: ignore[union-attr]
            values[field] = A2ARole.Name(role) if role in A2ARole.values() else int(role)
        elif field == "extensions":
            values[field] = [e for e in target.extensions if e != EXTENSION_URI]
        elif field in _LISTS:
            values[field] = list(getattr(target, field))
        elif field == "metadata":
            values[field] = {
                key: value
                for key, value in _py(target.metadata).items()
                if not key.startswith(_OURS) and not (key in java and _norm(java[key]) == value)
            }
        else:
            values[field] = getattr(target, field)
    return values


def _keep_envelope(
    msgs: list[Msg],
    target: _Target,
    fields: Sequence[str],
    java_metadata: Callable[[Sequence[Msg]], dict[str, Any]],
) -> None:
    """Record in the last Msg what of `target`'s envelope the writer would not derive."""
    java = java_metadata(msgs)
    actual = _read_envelope(target, fields, java)
    written = type(target)()
    _set_envelope(written, _envelope(msgs, fields, {}), java, None)
    if _read_envelope(written, fields, java) == actual:
        return
    record = dict(_record(msgs[-1], fields))
    for field in fields:
        # A derived id depends on the metadata this changes: it is kept as given.
        pinned = field == fields[0] and not _own_id(msgs)
        if pinned or actual[field] != _default(field, msgs):
            record[field] = actual[field]
        else:
            record.pop(field, None)
    metadata = _metadata_of(msgs[-1])
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise MessageFormatError("metadata", "not an object: no place for the A2A envelope")
    if record:
        metadata[ENVELOPE_KEY] = record
    else:
        metadata.pop(ENVELOPE_KEY, None)
    if metadata:
        msgs[-1].metadata_json = _json.dumps(metadata, "metadata")
    else:
        msgs[-1].ClearField("metadata_json")


# --- Public API -----------------------------------------------------------------------


def _read(
    parts: Sequence[Part],
    metadata: struct_pb2.Struct,
    *,
    fallback_id: str,
    role: Role.ValueType,
    name: str,
    source: str,
    group: bool,
) -> list[Msg]:
    if MSGS_KEY in metadata.fields:
        return _read_payloads(parts, _py(metadata.fields[MSGS_KEY]), source, times_of(metadata))
    return _read_plain(
        parts,
        _py(metadata),
        fallback_id=fallback_id,
        role=role,
        name=name,
        source=source,
        group=group,
    )


def msgs_to_a2a(
    msgs: Iterable[Msg],
    *,
    role: A2ARole | None = None,
    message_id: str | None = None,
    context_id: str | None = None,
    task_id: str | None = None,
    reference_task_ids: Sequence[str] | None = None,
) -> Message:
    """Messages (a turn, a multi-agent history) as one A2A `Message`.

    Each block is one part, each Msg's parts in order; the extension makes the
    way back exact (`a2a_to_msgs`). The envelope comes from the arguments, else
    from the last Msg's `metadata["a2a"]`, else it is derived: the role is
    `ROLE_AGENT` when every Msg is the assistant's or a tool's (agentscope-java's
    rule), the id the Msg's own (one Msg with an id) or one derived from them.
    """
    msgs = list(msgs)
    if not msgs:
        raise ValueError("msgs_to_a2a: no messages")
    times: dict[str, str] = {}
    parts, payloads = _write_parts(msgs, times)
    message = Message(parts=parts)
    args = {
        "role": A2ARole.Name(role) if role is not None else None,
        "message_id": message_id,
        "context_id": context_id,
        "task_id": task_id,
        "reference_task_ids": list(reference_task_ids) if reference_task_ids is not None else None,
    }
    values = _envelope(msgs, _MESSAGE_FIELDS, args)
    _set_envelope(message, values, _java_message_metadata(msgs), payloads)
    keep_times(message.metadata, times)
    return message


def msg_to_a2a(
    msg: Msg,
    *,
    role: A2ARole | None = None,
    message_id: str | None = None,
    context_id: str | None = None,
    task_id: str | None = None,
    reference_task_ids: Sequence[str] | None = None,
) -> Message:
    """One message as an A2A `Message` (see `msgs_to_a2a`); `a2a_to_msg` gives it back exactly."""
    return msgs_to_a2a(
        [msg],
        role=role,
        message_id=message_id,
        context_id=context_id,
        task_id=task_id,
        reference_task_ids=reference_task_ids,
    )


def a2a_to_msgs(message: Message, *, name: str | None = None) -> list[Msg]:
    """The messages an A2A `Message` holds.

    With the extension, exactly the Msgs written. Without it, one Msg per
    agentscope-java message id (one for a peer's message: its id the
    `message_id`, its name `name`, else "user" or "assistant" by A2A role):
    text parts are text blocks, raw and URL parts media blocks by media type,
    data parts their JSON as text. The envelope is kept in the last Msg's
    `metadata["a2a"]` where the writer would not derive it.
    """
    role = Role.ROLE_ASSISTANT if message.role == A2ARole.ROLE_AGENT else Role.ROLE_USER
    default_name = "assistant" if role == Role.ROLE_ASSISTANT else "user"
    msgs = _read(
        message.parts,
        message.metadata,
        fallback_id=message.message_id,
        role=role,
        name=default_name if name is None else name,
        source="message",
        group=True,
    )
    _keep_envelope(msgs, message, _MESSAGE_FIELDS, _java_message_metadata)
    return msgs


def a2a_to_msg(message: Message, *, name: str | None = None) -> Msg:
    """The one message an A2A `Message` holds (`a2a_to_msgs` for a history)."""
    msgs = a2a_to_msgs(message, name=name)
    if len(msgs) != 1:
        raise MessageFormatError(
            "message.parts", f"holds {len(msgs)} AgentScope messages; read it with a2a_to_msgs"
        )
    return msgs[0]


def msg_to_artifact(
    msg: Msg,
    *,
    artifact_id: str | None = None,
    name: str | None = None,
    description: str | None = None,
) -> Artifact:
    """A message (an agent's result) as an A2A `Artifact`: its parts as in
    `msg_to_a2a`, its id the Msg's (or derived), its name the speaker's."""
    times: dict[str, str] = {}
    parts, payloads = _write_parts([msg], times)
    artifact = Artifact(parts=parts)
    args = {"artifact_id": artifact_id, "name": name, "description": description}
    values = _envelope([msg], _ARTIFACT_FIELDS, args)
    _set_envelope(artifact, values, _java_artifact_metadata([msg]), payloads)
    # Always, even empty: a2a-sdk merges an appended chunk's metadata into its
    # artifact's, where an earlier chunk's times would stay beside these Msgs.
    _put(artifact.metadata, {TIMES_KEY: times})
    return artifact


def artifact_to_msg(artifact: Artifact, *, name: str | None = None) -> Msg:
    """The message an A2A `Artifact` holds: exactly the Msg written with the
    extension; else an assistant message of its parts (named by agentscope-java's
    key, else `name`, else the artifact's name), as `a2a_to_msgs` reads parts."""
    default_name = name if name is not None else artifact.name or "assistant"
    msgs = _read(
        artifact.parts,
        artifact.metadata,
        fallback_id=artifact.artifact_id,
        role=Role.ROLE_ASSISTANT,
        name=default_name,
        source="artifact",
        group=False,
    )
    if len(msgs) != 1:
        raise MessageFormatError(
            f'artifact.metadata["{MSGS_KEY}"]', f"holds {len(msgs)} messages; an artifact holds one"
        )
    _keep_envelope(msgs, artifact, _ARTIFACT_FIELDS, _java_artifact_metadata)
    return msgs[0]


def prefix_speaker_names(msgs: Iterable[Msg]) -> list[Msg]:
    """Copies of `msgs` whose text starts with `[name]: `: who spoke, for a peer
    that does not read the extension (the first text block is prefixed, or a
    `[name]:` text block leads). Messages without a name are copied as they are."""
    out = []
    for msg in msgs:
        copy = Msg()
        copy.CopyFrom(msg)
        if msg.HasField("name"):
            prefix = f"[{msg.name}]: "
            if copy.WhichOneof("content") == "text":
                copy.text = prefix + copy.text
            else:
                texts = [b.text for b in copy.blocks.items if b.WhichOneof("block") == "text"]
                if texts:
                    texts[0].text = prefix + texts[0].text
                else:
                    lead = ContentBlock(text=TextBlock(text=prefix.rstrip()))
                    copy.blocks.CopyFrom(ContentBlocks(items=[lead, *copy.blocks.items]))
        out.append(copy)
    return out


def agent_extension(*, required: bool = False) -> AgentExtension:
    """The extension as an agent card lists it (`AgentCapabilities.extensions`)."""
    return AgentExtension(
        uri=EXTENSION_URI,
        description=(
            "AgentScope messages: speaker names, roles, thinking, tool calls and results, "
            "hints, usage and reply fields, exactly (agentscope-proto docs/a2a.md)"
        ),
        required=required,
    )
