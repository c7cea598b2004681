"""Content blocks between AgentScope's open dicts and the schema's messages.

AgentScope blocks are plain dicts: producers add keys (`signature`,
`thought_signature`, `cache_control`, anything) and readers pass them on. So a
block converts losslessly: modelled keys go to typed fields, every other key to
`extra_json` in its original order, and `key_order` records the dict's key
order whenever it is not the canonical one. A modelled key whose value does not
fit its typed field is either an error (core keys such as `text`) or, for
provider annotations, kept as an extra key unchanged. A tool call's or result's
`id` and `name` may be `null` (agentscope-java writes `ToolResultBlock.error`'s
name so): the string field stays empty and the `null` is kept as an extra key
that overrides it, so the dict comes back with its `null`.

The provider-fidelity kinds (`server_tool_use`, `server_tool_result`,
`grounding`) hold what providers send, so no key of theirs is required: a
JSON-valued key (`input`, `output`, `raw`) is absent when its field is empty; a
string, bool or list key is always written (its zero value when unset) unless
the block's `key_order` leaves it out, which is how a dict without it comes
back without it; a misfit value of such a key is kept as an extra key that
overrides the zero field. A text block's `citations` key is written only when
it has citations (see `_fields.py` for how they map).

Each block kind is described by a table of `_Key`s rather than by code, so the
two directions cannot drift apart.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeAlias

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import (
    AudioBlock,
    ContentBlock,
    ContentBlocks,
    DataBlock,
    GroundingBlock,
    HintBlock,
    ImageBlock,
    MediaSource,
    OpaqueBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from ..errors import MessageFormatError
from ._fields import (
    ABSENT,
    Misfit,
    citation_dicts,
    dump_citations,
    dump_queries,
    dump_rules,
    dump_sources,
    load_citations,
    load_object,
    load_queries,
    load_rules,
    load_sources,
    read_b64,
    read_bool,
    read_call_state,
    read_json,
    read_object,
    read_state,
    read_str,
    rule_dicts,
    source_dicts,
    write_b64,
    write_call_state,
    write_state,
)

__all__ = [
    "AnyBlock",
    "block_from_dict",
    "block_kind",
    "block_to_dict",
    "blocks_from_list",
    "blocks_to_list",
    "wrap",
]

AnyBlock: TypeAlias = (
    TextBlock
    | ThinkingBlock
    | ToolUseBlock
    | ToolResultBlock
    | ImageBlock
    | AudioBlock
    | VideoBlock
    | DataBlock
    | HintBlock
    | ServerToolUseBlock
    | ServerToolResultBlock
    | GroundingBlock
    | OpaqueBlock
)


class _Key(NamedTuple):
    """One modelled dict key of a block kind and how it maps to the message.

    A scalar key names its `field`, how a dict value is `read` into it (raising
    `Misfit` if it does not fit) and how the field's value is `write`n back
    (None: as it is). A composite key (`source`, `output`) has no field but a
    `load` into and a `dump` from the message instead.
    """

    key: str
    field: str | None = None
    read: Callable[[Any], Any] = read_str
    write: Callable[[Any], Any] | None = None
    # The key may be absent: the message then holds it only when set.
    optional: bool = False
    # A misfit value is kept as an extra key instead of raising.
    soft: bool = False
    load: Callable[[Any, Any, str], None] | None = None
    dump: Callable[[Any], Any] | None = None
    # `null` is kept (as an extra key overriding the empty field).
    nullable: bool = False
    # Always written, but may be absent (the key order then leaves it out) or
    # a misfit (kept as an extra key overriding the zero field).
    lenient: bool = False


def _scalar(
    key: str,
    field: str,
    read: Callable[[Any], Any] = read_str,
    write: Callable[[Any], Any] | None = None,
    *,
    presence: bool = False,
    soft: bool = False,
) -> _Key:
    return _Key(key, field, read, write, optional=presence, soft=soft)


def _lenient(key: str, field: str | None, read: Callable[[Any], Any] = read_str) -> _Key:
    return _Key(key, field, read, lenient=True)


def _lenient_list(key: str, load: Callable[..., None], dump: Callable[[Any], Any]) -> _Key:
    return _Key(key, load=load, dump=dump, lenient=True)


def _json_key(key: str, field: str, read: Callable[[Any], Any] = read_json) -> _Key:
    # Any JSON value encodes to non-empty text, so an empty field is an absent key.
    return _Key(key, field, read, _json.loads, optional=True, soft=True)


def _load_source(message: Any, value: Any, path: str) -> None:
    if not isinstance(value, Mapping):
        raise MessageFormatError(path, f"expected an object, got {type(value).__name__}")
    kind = value.get("type")
    keys = _SOURCE_KEYS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        raise MessageFormatError(f"{path}.type", f"expected 'url' or 'base64', got {kind!r}")
    source = message.source
    source.SetInParent()
    _fill(source, keys, value, path)


def _dump_source(message: Any) -> dict[str, Any]:
    return _source_dict(message.source)


def _load_list(message: Any, value: Any, path: str) -> None:
    """A tool result's `output` or a hint's `hint`: a string or a block list
    (`null` output is none)."""
    if value is None and isinstance(message, ToolResultBlock):
        return
    if isinstance(value, str):
        message.text = value
    elif isinstance(value, list):
        message.blocks.SetInParent()
        # Any kind, as AgentScope 1.x holds any dict there (its formatters take
        # text and media only) and agentscope-java's outputs hold any block.
        blocks_from_list(value, path, message.blocks.items)
    else:
        expected = (
            "a string, a list or null"
            if isinstance(message, ToolResultBlock)
            else ("a string or a list")
        )
        raise MessageFormatError(path, f"expected {expected}, got {type(value).__name__}")


def _dump_list(message: Any) -> Any:
    which = message.WhichOneof("output" if isinstance(message, ToolResultBlock) else "hint")
    if which == "text":
        return message.text
    if which == "blocks":
        return blocks_to_list(message.blocks.items)
    return None


def _load_b64(message: MediaSource, value: Any, path: str) -> None:
    """Base64 `data`: the bytes when the text is their canonical encoding, else
    the text itself (AgentScope keeps the string as given)."""
    if not isinstance(value, str):
        raise MessageFormatError(path, f"expected base64 text, got {type(value).__name__}")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        message.base64_text = value
        return
    if base64.b64encode(data).decode("ascii") == value:
        message.data = data
    else:
        message.base64_text = value


def _dump_b64(message: MediaSource) -> str:
    if message.WhichOneof("source") == "base64_text":
        return message.base64_text
    return write_b64(message.data)


_SIGNATURE = _scalar(
    "thought_signature", "thought_signature", read_b64, write_b64, presence=True, soft=True
)
_ID = _scalar("id", "id")._replace(nullable=True)
_NAME = _scalar("name", "name")._replace(nullable=True)
_SOURCE = _Key("source", load=_load_source, dump=_dump_source)


def _optional(key: str) -> _Key:
    """A string key the block may lack; a non-string value stays an extra key."""
    return _scalar(key, key, presence=True, soft=True)


# AgentScope 2.x's bookkeeping of every block (docs/dialects.md).
_BLOCK_ID = _optional("id")
_TIMES = (_optional("created_at"), _optional("finished_at"))
_MEDIA = (_SOURCE, _BLOCK_ID, _optional("name"), *_TIMES)
_RAW = _json_key("raw", "raw_json", read_object)
_PROVIDER_TYPE = _lenient("provider_type", "provider_type")

_KEYS: dict[str, tuple[_Key, ...]] = {
    "text": (
        _scalar("text", "text"),
        _SIGNATURE,
        _Key("citations", optional=True, soft=True, load=load_citations, dump=dump_citations),
        _BLOCK_ID,
        *_TIMES,
    ),
    "thinking": (
        _scalar("thinking", "thinking"),
        _optional("signature"),
        _SIGNATURE,
        _optional("redacted_data"),
        _optional("encrypted_content"),
        _optional("reasoning_id"),
        _BLOCK_ID,
        *_TIMES,
    ),
    "tool_use": (
        _ID,
        _NAME,
        _scalar("input", "input_json", read_json, _json.loads),
        _optional("raw_input"),
        _SIGNATURE,
        _scalar("state", "state", read_call_state, write_call_state, presence=True, soft=True),
        _Key("suggested_rules", optional=True, soft=True, load=load_rules, dump=dump_rules),
        *_TIMES,
    ),
    "tool_result": (
        _ID,
        _NAME,
        _Key("output", load=_load_list, dump=_dump_list),
        _scalar("state", "state", read_state, write_state, presence=True, soft=True),
        _json_key("metadata", "metadata_json", read_object),
        *_TIMES,
    ),
    "image": _MEDIA,
    "audio": _MEDIA,
    "video": _MEDIA,
    "data": (_BLOCK_ID, _SOURCE, _optional("name"), *_TIMES),
    "hint": (
        _Key("hint", load=_load_list, dump=_dump_list),
        _BLOCK_ID,
        _optional("source"),
        *_TIMES,
    ),
    "server_tool_use": (
        _lenient("id", "id"),
        _lenient("name", "name"),
        _json_key("input", "input_json"),
        _PROVIDER_TYPE,
        _RAW,
    ),
    "server_tool_result": (
        _lenient("tool_use_id", "tool_use_id"),
        _PROVIDER_TYPE,
        _json_key("output", "output_json"),
        _lenient("is_error", "is_error", read_bool),
        _RAW,
    ),
    "grounding": (
        _PROVIDER_TYPE,
        _lenient_list("sources", load_sources, dump_sources),
        _lenient_list("queries", load_queries, dump_queries),
        _RAW,
    ),
}
_SOURCE_KEYS: dict[str, tuple[_Key, ...]] = {
    "url": (_scalar("url", "url"), _optional("media_type")),
    "base64": (_scalar("media_type", "media_type"), _Key("data", load=_load_b64, dump=_dump_b64)),
}
_CLASSES: dict[str, type[AnyBlock]] = {
    "text": TextBlock,
    "thinking": ThinkingBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
    "image": ImageBlock,
    "audio": AudioBlock,
    "video": VideoBlock,
    "data": DataBlock,
    "hint": HintBlock,
    "server_tool_use": ServerToolUseBlock,
    "server_tool_result": ServerToolResultBlock,
    "grounding": GroundingBlock,
}
# Kinds the schema modelled after carrying them as opaque blocks.
_LATER_KINDS = frozenset({"data", "hint"})
_KIND_OF_CLASS: dict[type[Any], str] = {cls: kind for kind, cls in _CLASSES.items()}
# Modelled keys whose `null` an extra key may carry, per kind.
_NULLABLE: dict[str, frozenset[str]] = {
    kind: frozenset(spec.key for spec in keys if spec.nullable) for kind, keys in _KEYS.items()
}
# Lenient keys, per kind: an extra key may override their zero value, and the
# key order may leave them out.
_LENIENT: dict[str, frozenset[str]] = {
    kind: frozenset(spec.key for spec in keys if spec.lenient) for kind, keys in _KEYS.items()
}

# How `_emit` writes a key back, compiled from the tables above so that the hot
# path makes no descriptor lookups: (key, field or None for a composite key,
# writer or dumper, presence test).
_ALWAYS, _HAS_FIELD, _NONZERO = 0, 1, 2
_Step: TypeAlias = tuple[str, str | None, Callable[[Any], Any] | None, int]
_Plan: TypeAlias = tuple[_Step, ...]


def _plan(cls: Any, keys: tuple[_Key, ...]) -> _Plan:
    steps: list[_Step] = []
    for spec in keys:
        if spec.field is None:
            steps.append((spec.key, None, spec.dump, _ALWAYS))
            continue
        presence = _ALWAYS
        if spec.optional:
            # Enums and plain proto3 strings have no presence: their zero value
            # means "not reported".
            field = cls.DESCRIPTOR.fields_by_name[spec.field]
            has = field.has_presence and field.enum_type is None
            presence = _HAS_FIELD if has else _NONZERO
        steps.append((spec.key, spec.field, spec.write, presence))
    return tuple(steps)


_PLANS: dict[str, _Plan] = {kind: _plan(_CLASSES[kind], keys) for kind, keys in _KEYS.items()}
_SOURCE_PLANS: dict[str, _Plan] = {
    kind: _plan(MediaSource, keys) for kind, keys in _SOURCE_KEYS.items()
}


# The fast path of `blocks_to_list`: one `ListFields()` call (a single C call)
# shows a block's set fields at once, in field number order, which for every
# kind is the order of its keys in `_KEYS`. A block whose set fields include
# every required key and no `extra_json`/`key_order` converts straight from
# them; any other block (an empty required string, extras, a custom key order)
# takes `_emit`. Composite keys read their field's value directly.
def _source_dict(source: MediaSource) -> dict[str, Any]:
    which = source.WhichOneof("source")
    if which is None:
        raise MessageFormatError("source", "media source has neither url nor data")
    kind = "url" if which == "url" else "base64"
    return _emit(kind, source, _SOURCE_PLANS[kind])


def _result_blocks(blocks: ContentBlocks) -> list[dict[str, Any]]:
    return blocks_to_list(blocks.items)


# Composite key -> (field, how its value converts) as ListFields reports it.
_COMPOSITE_FIELDS: dict[str, tuple[tuple[str, Callable[[Any], Any] | None], ...]] = {
    "source": (("source", _source_dict),),
    "output": (("text", None), ("blocks", _result_blocks)),
    "hint": (("text", None), ("blocks", _result_blocks)),
    "suggested_rules": (("suggested_rules", rule_dicts),),
    "citations": (("citations", citation_dicts),),
    "sources": (("sources", source_dicts),),
    "queries": (("queries", list),),
}
# Field descriptor -> (key, writer, whether the key is required).
_QuickKeys: TypeAlias = dict[Any, tuple[str, Callable[[Any], Any] | None, bool]]


def _quick(cls: Any, keys: tuple[_Key, ...]) -> tuple[_QuickKeys, int]:
    """The fast path's table of a kind, and how many of its keys are required."""
    fields = cls.DESCRIPTOR.fields_by_name
    table: _QuickKeys = {}
    numbers = []
    for spec in keys:
        pairs = _COMPOSITE_FIELDS[spec.key] if spec.field is None else ((spec.field, spec.write),)
        for name, write in pairs:
            table[fields[name]] = (spec.key, write, not spec.optional)
            numbers.append(fields[name].number)
    # The fast path relies on field number order being key order.
    assert numbers == sorted(numbers), cls
    return table, sum(not spec.optional for spec in keys)


_QUICK: dict[str, tuple[_QuickKeys, int]] = {
    kind: _quick(_CLASSES[kind], keys) for kind, keys in _KEYS.items()
}


def _fill(message: Any, keys: tuple[_Key, ...], data: Mapping[str, Any], path: str) -> None:
    """Copy a block dict into `message`: modelled keys to fields, the rest to extras."""
    canonical = ["type"]
    # A lenient key absent or kept as an extra: only the key order tells.
    ordered = False
    for spec in keys:
        key = spec.key
        if key not in data:
            # Optional and lenient keys may be absent; the others are required.
            if spec.lenient:
                ordered = True
            elif not spec.optional:
                raise MessageFormatError(f"{path}.{key}", "missing")
            continue
        if spec.nullable and data[key] is None:
            continue
        try:
            if spec.field is not None:
                setattr(message, spec.field, spec.read(data[key]))
            else:
                spec.load(message, data[key], f"{path}.{key}")  # type: ignore[misc]
        except Misfit as exc:
            if spec.lenient:
                ordered = True
            elif not spec.soft:
                raise MessageFormatError(f"{path}.{key}", str(exc)) from None
            continue
        canonical.append(key)
    # Every canonical key is in `data`; any other key is an extra.
    if len(data) > len(canonical):
        modelled = set(canonical)
        extras = {key: value for key, value in data.items() if key not in modelled}
        message.extra_json = _json.dumps(extras, path)
        canonical.extend(extras)
    if ordered or list(data) != canonical:
        message.key_order.extend(data)


def _emit(kind: str, message: Any, plan: _Plan) -> dict[str, Any]:
    """The dict of a message built by `_fill`, keys in their original order."""
    out: dict[str, Any] = {"type": kind}
    for key, field, write, presence in plan:
        if field is None:
            value = write(message)  # type: ignore[misc]
            if value is not ABSENT:
                out[key] = value
            continue
        if presence == _HAS_FIELD and not message.HasField(field):
            continue
        value = getattr(message, field)
        if presence == _NONZERO and not value:
            continue
        out[key] = value if write is None else write(value)
    # A message not built by `_fill` (one sent over the wire) may hold anything
    # in `extra_json` and `key_order`; an extra key overriding a modelled one
    # would hand the formatters a value no reader checked, so both are checked.
    extra = message.extra_json
    if extra:
        extras = load_object(extra, "extra_json")
        lenient = _LENIENT.get(kind, ())
        for key, value in extras.items():
            if key in out and not (
                (value is None and out[key] == "" and key in _NULLABLE.get(kind, ()))
                or (key in lenient and not out[key])
            ):
                raise MessageFormatError("extra_json", f"repeats the modelled key {key!r}")
        out.update(extras)
    order = message.key_order
    if order:
        if len(order) != len(out) or set(order) != out.keys():
            # Only a lenient key still at its zero value may be left out.
            lenient = _LENIENT.get(kind, ())
            left_out = out.keys() - set(order)
            if (
                len(set(order)) != len(order)
                or not out.keys() >= set(order)
                or any(key not in lenient or out[key] for key in left_out)
            ):
                raise MessageFormatError("key_order", "is not an order of the block's keys")
        return {key: out[key] for key in order}
    return out


def _opaque_to_dict(block: OpaqueBlock) -> dict[str, Any]:
    value = _json.loads(block.block_json, "block_json")
    if type(value) is not dict or value.get("type") != block.block_type:
        raise MessageFormatError(
            "block_json", f"expected a JSON object of type {block.block_type!r}"
        )
    if block.block_type in _KEYS:
        if block.block_type in _LATER_KINDS:
            # Sent as opaque by a peer on a schema older than the kind: given
            # the checks of its typed form.
            return block_to_dict(unwrap(block_from_dict(value, "block_json")))
        # Modelled kinds are always typed blocks; an opaque "text" or "image"
        # would reach the formatters without the checks its typed form gets.
        raise MessageFormatError("block_json", f"{block.block_type!r} blocks cannot be opaque")
    return value


def _fill_block(
    wrapper: ContentBlock, data: Any, path: str, allowed: frozenset[str] | None
) -> None:
    """Fill an empty `ContentBlock` from one AgentScope block dict."""
    if type(data) is not dict and not isinstance(data, Mapping):
        raise MessageFormatError(path, f"expected a block object, got {type(data).__name__}")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise MessageFormatError(f"{path}.type", f"expected a block type string, got {kind!r}")
    if allowed is not None and kind not in allowed:
        raise MessageFormatError(
            f"{path}.type", f"{kind!r} is not allowed here (expected one of {sorted(allowed)})"
        )
    keys = _KEYS.get(kind)
    if keys is None:
        opaque = wrapper.opaque
        opaque.block_type = kind
        opaque.block_json = _json.dumps(data, path)
        return
    inner = getattr(wrapper, kind)
    inner.SetInParent()
    _fill(inner, keys, data, path)


def block_from_dict(
    data: Any, path: str = "block", allowed: frozenset[str] | None = None
) -> ContentBlock:
    """One AgentScope block dict as a `ContentBlock`."""
    wrapper = ContentBlock()
    _fill_block(wrapper, data, path, allowed)
    return wrapper


def wrap(block: AnyBlock) -> ContentBlock:
    """Put a typed block into a `ContentBlock` wrapper (copying it)."""
    kind = "opaque" if isinstance(block, OpaqueBlock) else _KIND_OF_CLASS.get(type(block))
    if kind is None:
        raise MessageFormatError(
            "block", f"expected a typed block (TextBlock, ...), got {type(block).__name__}"
        )
    wrapper = ContentBlock()
    getattr(wrapper, kind).CopyFrom(block)
    return wrapper


def block_kind(block: AnyBlock) -> str:
    """The AgentScope `type` of a typed block (an opaque block's own type)."""
    if isinstance(block, OpaqueBlock):
        return block.block_type
    return _KIND_OF_CLASS[type(block)]


def block_to_dict(block: AnyBlock) -> dict[str, Any]:
    """A typed block as the AgentScope dict it came from."""
    if isinstance(block, OpaqueBlock):
        return _opaque_to_dict(block)
    kind = _KIND_OF_CLASS[type(block)]
    return _emit(kind, block, _PLANS[kind])


def unwrap(block: ContentBlock) -> AnyBlock:
    """The typed block inside a `ContentBlock`."""
    which = block.WhichOneof("block")
    if which is None:
        raise MessageFormatError("block", "empty ContentBlock (unknown or unset kind)")
    inner: AnyBlock = getattr(block, which)
    return inner


def blocks_from_list(
    items: list[Any],
    path: str,
    target: Any,
    allowed: frozenset[str] | None = None,
) -> None:
    """Append AgentScope block dicts to a repeated `ContentBlock` field.

    Blocks are built in place; if a block is invalid, the error leaves it half
    built at the end of `target`.
    """
    add = target.add
    for index, item in enumerate(items):
        _fill_block(add(), item, f"{path}[{index}]", allowed)


def blocks_to_list(blocks: Any) -> list[dict[str, Any]]:
    """A repeated `ContentBlock` field as AgentScope block dicts."""
    out = []
    for block in blocks:
        which = block.WhichOneof("block")
        if which is None:
            raise MessageFormatError("block", "empty ContentBlock (unknown or unset kind)")
        inner = getattr(block, which)
        if which == "opaque":
            out.append(_opaque_to_dict(inner))
            continue
        table, required = _QUICK[which]
        fields = inner.ListFields()
        # extra_json and key_order have the highest field numbers, so they come
        # last: a block with either takes `_emit` before anything is converted
        # (converting its nested blocks here, then again there, would double
        # the work at each level of nested tool results).
        if fields and fields[-1][0] not in table:
            out.append(_emit(which, inner, _PLANS[which]))
            continue
        data: dict[str, Any] = {"type": which}
        composite = []
        for field, value in fields:
            key, write, needed = table[field]
            data[key] = value
            if write is not None:
                composite.append((key, write))
            required -= needed
        if required:  # a required key at its zero value: `_emit` says which
            out.append(_emit(which, inner, _PLANS[which]))
            continue
        # Composite values convert only now, once the block is known to stay here.
        for key, write in composite:
            data[key] = write(data[key])
        out.append(data)
    return out


def new_blocks(items: list[ContentBlock]) -> ContentBlocks:
    """A `ContentBlocks` list holding `items`."""
    return ContentBlocks(items=items)
