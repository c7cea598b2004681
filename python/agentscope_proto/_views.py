"""The views `format()` hands the providers: each input message as AgentScope's
formatters see it (`providers._context.MsgView`), built fresh, from a
`FormatCache`, or (the server) found by the bytes the message arrived as.
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping, Sequence
from typing import Any

from ._generated.agentscope.message.v1.message_pb2 import Msg, Role
from ._wire import WireMessages
from .cache import (
    EncodedMessage,
    FormatCache,
    Key,
    PrefixEntry,
    TurnEntry,
    content_turn_key,
    conversation_key,
    plain_content,
    view_key,
    wire_key,
    wire_turn_key,
)
from .dialects import from_dict
from .errors import FormatError, MessageFormatError
from .message._codec import blocks_to_list
from .message._sniff import inline_media_type
from .options import FormatSettings
from .providers._context import FormatContext, MsgView

__all__ = [
    "build_view",
    "cached_view",
    "keep_prefix",
    "keyed_views",
    "message_from_input",
    "resume_point",
    "settings_scope",
    "view",
    "wire_views",
]

ROLE_NAMES = {
    Role.ROLE_USER: "user",
    Role.ROLE_ASSISTANT: "assistant",
    Role.ROLE_SYSTEM: "system",
    # AgentScope 1.x carries tool results in system messages.
    Role.ROLE_TOOL: "system",
}

# Blocks that are or may hold inline media.
_MEDIA_HOLDERS = frozenset({"image", "audio", "video", "tool_result"})

# The slots behind `MsgView`'s fields, for the views below that load them late.
_NAME = MsgView.__dict__["name"]
_ROLE = MsgView.__dict__["role"]
_CONTENT = MsgView.__dict__["content"]


def message_from_input(msg: Msg | Mapping[str, Any], index: int) -> Msg:
    """The `Msg` of `messages[index]`, given as a `Msg` or a message dict.

    The one rule every path (Python, CLI, gRPC) applies: a message without a
    `name` is a `FormatError` on `messages[i].name`; any other problem is a
    `MessageFormatError` whose path starts with `messages[i]`.
    """
    # `type() is` first: the ABC check of `Mapping` is slow, and protobuf
    # `Msg`s are the common input.
    if type(msg) is not Msg:
        if isinstance(msg, Mapping):
            try:
                msg = from_dict(msg)
            except MessageFormatError as exc:
                if exc.path == "name":
                    raise FormatError(f"messages[{index}].name", exc.reason) from None
                raise MessageFormatError(
                    f"messages[{index}].{exc.path}".rstrip("."), exc.reason
                ) from None
        elif not isinstance(msg, Msg):
            raise FormatError(
                f"messages[{index}]",
                f"expected a Msg or a message dict, got {type(msg).__name__}",
            )
    if not msg.HasField("name"):
        raise FormatError(f"messages[{index}].name", "missing")
    return msg


def _role(msg: Msg, index: int) -> str:
    role = ROLE_NAMES.get(msg.role)
    if role is None:
        raise FormatError(f"messages[{index}].role", "unset")
    return role


def _content(msg: Msg, index: int) -> str | list[dict[str, Any]]:
    try:
        if msg.WhichOneof("content") == "text":
            return msg.text
        blocks = blocks_to_list(msg.blocks.items)
    except MessageFormatError as exc:
        raise MessageFormatError(f"messages[{index}].{exc.path}".rstrip("."), exc.reason) from None
    _type_inline_media(blocks, index)
    return blocks


def _type_inline_media(blocks: list[dict[str, Any]], index: int, within: str = "") -> None:
    """Give inline media without a media type the one its bytes name, or refuse
    it (`messages[index].content` + `within` locates `blocks`).

    Every provider needs the type (`data:` URLs, `media_type`, `mime_type`);
    an empty one would make a body the provider refuses. Tool results are
    searched too (their media may be promoted or cited).
    """
    for block in blocks:
        if block["type"] in _MEDIA_HOLDERS:
            break
    else:
        return  # the common case: text and tool calls only
    for position, block in enumerate(blocks):
        kind = block["type"]
        if kind == "tool_result":
            if type(block.get("output")) is list:
                _type_inline_media(block["output"], index, f"{within}[{position}].output")
            continue
        source = block.get("source") if kind in _MEDIA_HOLDERS else None
        if type(source) is dict and source.get("type") == "base64" and not source.get("media_type"):
            path = f"messages[{index}].content{within}[{position}].source.media_type"
            source["media_type"] = inline_media_type(kind, source.get("data", ""), path)


def build_view(msg: Msg, index: int) -> MsgView:
    """The view of a checked message (see `message_from_input`)."""
    content = _content(msg, index)
    return MsgView(msg.name, _role(msg, index), content, index)


def view(msg: Msg | Mapping[str, Any], index: int) -> MsgView:
    """The view of `messages[index]`, checked and built."""
    return build_view(message_from_input(msg, index), index)


def cached_view(msg: Msg | Mapping[str, Any], index: int, cache: FormatCache) -> MsgView:
    """`view`, reusing a view of the same content kept in `cache`."""
    msg = message_from_input(msg, index)
    key = view_key(msg)
    hit = cache.get(key)
    if hit is not None:
        name, role, stored, plain = hit
        return _StoredView(name, role, stored, index, key if plain else None)
    made = build_view(msg, index)
    plain = plain_content(made.content)
    try:
        stored = marshal.dumps(made.content)
    except ValueError:  # not plain data, or nested past marshal's limit
        return made
    # Errors are never cached: they name the message's position.
    cache.put(key, (made.name, made.role, stored, plain))
    if plain:
        made.cache_id = key
    return made


class _StoredView(MsgView):
    """A view from the cache whose content is loaded (a fresh copy) on first
    use: a chat turn found in the cache never reads it."""

    __slots__ = ("_stored",)

    def __init__(
        self,
        name: str | None,
        role: str,
        stored: bytes,
        index: int,
        cache_id: tuple[Any, ...] | None,
    ) -> None:
        self.name = name
        self.role = role
        self.index = index
        self.cache_id = cache_id
        self.turn = None
        self.paths = None
        self._stored: bytes | None = stored

    @property
    def content(self) -> str | list[dict[str, Any]]:
        stored = self._stored
        if stored is not None:
            _CONTENT.__set__(self, marshal.loads(stored))
            self._stored = None
        value: str | list[dict[str, Any]] = _CONTENT.__get__(self, MsgView)
        return value

    @content.setter
    def content(self, value: str | list[dict[str, Any]]) -> None:
        _CONTENT.__set__(self, value)
        self._stored = None


class _LazyView(MsgView):
    """A message whose chat turn `format()` looked up ahead (`MsgView.turn`),
    known by what names its content in the cache (`cache_id`). Name, role and
    content are read from the `Msg` only when something asks: a turn replayed
    from the cache never does."""

    __slots__ = ("_loaded", "_msg")
    PREFETCHED = True

    def __init__(self, msg: Msg, index: int, cache_id: Key, turn: TurnEntry | None) -> None:
        self.index = index
        self.cache_id = cache_id
        self.turn = turn
        self.paths = None
        self._msg = msg
        self._loaded = 0  # bits: 1 name, 2 role, 4 content

    def _load(self, bit: int) -> None:
        # Only the fields asked for: reading the content of a message replayed
        # from the cache would cost what the cache saves.
        if bit == 1:
            _NAME.__set__(self, self._msg.name)
        elif bit == 2:
            _ROLE.__set__(self, _role(self._msg, self.index))
        else:
            _CONTENT.__set__(self, _content(self._msg, self.index))
        self._loaded |= bit

    @property
    def name(self) -> str | None:
        if not self._loaded & 1:
            self._load(1)
        value: str | None = _NAME.__get__(self, MsgView)
        return value

    @name.setter
    def name(self, value: str | None) -> None:
        _NAME.__set__(self, value)
        self._loaded |= 1

    @property
    def role(self) -> str:
        if not self._loaded & 2:
            self._load(2)
        value: str = _ROLE.__get__(self, MsgView)
        return value

    @role.setter
    def role(self, value: str) -> None:
        _ROLE.__set__(self, value)
        self._loaded |= 2

    @property
    def content(self) -> str | list[dict[str, Any]]:
        if not self._loaded & 4:
            self._load(4)
        value: str | list[dict[str, Any]] = _CONTENT.__get__(self, MsgView)
        return value

    @content.setter
    def content(self, value: str | list[dict[str, Any]]) -> None:
        _CONTENT.__set__(self, value)
        self._loaded |= 4

    def cacheable(self) -> bool:
        return plain_content(self.content)


class _WireView(_LazyView):
    """One of the server's messages, known by the bytes it arrived as
    (`cache.wire_key`); its turn is stored with its JSON (`MsgView.SHARED`)."""

    __slots__ = ()
    SHARED = True


def _missed(view: _LazyView, msg: Msg | Mapping[str, Any], index: int) -> _LazyView:
    """`view` of a message no cached turn covers, checked and built now, as
    `view` does: errors then come in the same order as without a cache."""
    msg = message_from_input(msg, index)
    view._msg = msg
    view.role = _role(msg, index)
    view.content = _content(msg, index)
    return view


def keyed_views(msgs: Sequence[Msg], cache: FormatCache, scope: int) -> list[MsgView]:
    """Views of `msgs` (all `Msg`s) for a chat walk with `cache`: each with the
    turn the cache holds for its content (`cache.view_key`), looked up all at
    once. A message with a cached turn is not checked again: the same content
    in the same position and scope passed every check before."""
    ids = [view_key(msg) for msg in msgs]
    turns = cache.get_many([content_turn_key(scope, key, not i) for i, key in enumerate(ids)])
    views: list[MsgView] = []
    for index, (msg, key, turn) in enumerate(zip(msgs, ids, turns, strict=True)):
        view = _LazyView(msg, index, key, turn)
        views.append(view if turn is not None else _missed(view, msg, index))
    return views


def wire_views(
    msgs: Sequence[Msg | Mapping[str, Any]],
    wire: WireMessages,
    cache: FormatCache,
    scope: int,
) -> list[MsgView]:
    """Views of the server's messages after the run `wire` skipped, each with
    the chat turn the cache holds for its bytes (looked up all at once:
    `MsgView.turn`).

    A message with a cached turn is not checked again: the same bytes in the
    same position and scope were formatted before, so they passed every check
    then. Every other message is checked first, in order, as `view` does.
    """
    start = wire.skipped
    slices = wire.messages
    keys = [wire_turn_key(scope, data, not index) for index, data in enumerate(slices, start)]
    turns = cache.get_many(keys)
    views: list[MsgView] = []
    # Sliced: iterating a protobuf repeated field makes a wrapper object per
    # message, which is what skipping the run saves.
    for index, (msg, data, turn) in enumerate(zip(msgs[start:], slices, turns, strict=True), start):
        view = _WireView(msg, index, wire_key(data), turn)  # type: ignore[arg-type]
        views.append(view if turn is not None and type(msg) is Msg else _missed(view, msg, index))
    return views


def resume_point(cache: FormatCache, scope: int, wire: WireMessages) -> PrefixEntry | None:
    """Walk the server's messages, skipping the run a cached walk of the same
    conversation covers (an agent re-sends its history with new messages
    after it); that walk's state, or None."""
    entry: PrefixEntry | None = None
    if wire.first is not None:
        entry = cache.get(conversation_key(scope, wire.first))
        if entry is not None and not wire.known_run(entry[0]):
            entry = None
    if entry is None:
        wire.walk()
        return None
    wire.walk(len(entry[0]), entry[3])
    return entry


def keep_prefix(
    cache: FormatCache,
    scope: int,
    wire: WireMessages,
    resumed: PrefixEntry | None,
    messages: list[dict[str, Any]],
    ctx: FormatContext,
) -> None:
    """Keep the state of a chat walk over all of the server's messages (one
    entry per conversation, replaced as it grows). Only a walk whose every
    turn came from or went into the cache (a pure function of its message's
    bytes) is kept, and only when its messages are one run of bytes."""
    run = wire.run()
    if run is None or wire.first is None or ctx.uncached_turns:
        return
    known = 0 if resumed is None else len(resumed[1])
    fresh = []
    for message in messages[known:]:
        if type(message) is not EncodedMessage:
            return
        fresh.append(message.json)
    joined = b",".join(fresh)
    if resumed is None:
        json = b"[" + joined
    elif joined:
        json = resumed[6] + b"," + joined if known else resumed[6] + joined
    else:
        json = resumed[6]
    entry: PrefixEntry = (
        run,
        tuple(messages),
        tuple(ctx.warnings),
        len(wire),
        ctx.at_message,
        ctx.at_block,
        json,
    )
    # The run's bytes, its messages' JSON, and (conservatively) the dicts it
    # keeps alive as if nothing else held them, about twice their JSON.
    cache.put_shared(conversation_key(scope, wire.first), entry, len(run) + 3 * len(json))


def settings_scope(cache: FormatCache, provider: str, settings: FormatSettings) -> int:
    """The number naming `provider`'s chat turns under `settings` in `cache`."""
    return cache.scope("chat", provider, settings)
