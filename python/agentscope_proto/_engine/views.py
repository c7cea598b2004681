"""Each input message as AgentScope's formatters see it (`MsgView`): built
fresh, from a `FormatCache`, or (the server) found by the bytes the message
arrived as.

A view the cache knows is a `CachedView`: its content has a key, and its
chat turn may be looked up or kept (`walk.TurnCache`). Every other view (a
promoted message, a part of a message, a renamed turn) is a plain `MsgView`,
formatted afresh.
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import Msg, Role
from .._wire import WireMessages
from ..cache import FormatCache
from ..dialects import from_dict
from ..errors import FormatError, MessageFormatError
from ..message._codec import blocks_to_list
from ..message._sniff import inline_media_type
from .entries import (
    Key,
    TurnRecord,
    ViewRecord,
    key_bytes,
    plain_content,
    turn_keys,
    view_key,
    view_keys,
    wire_key,
)

__all__ = [
    "CachedView",
    "MsgView",
    "build_view",
    "cached_view",
    "keyed_views",
    "message_from_input",
    "message_metadata",
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


@dataclass(slots=True)
class MsgView:
    """One input message as AgentScope's formatters see it.

    `index` is the message's position in the caller's list (a promoted message
    shares the index of the message it was promoted from), for error paths.
    `paths`, when set, names each block's place in that message (a view made
    of part of a message, see `_turns.agent_turns`); else block `i` is
    `content[i]`.
    """

    name: str | None
    role: str
    content: str | list[dict[str, Any]]
    index: int
    paths: tuple[str, ...] | None = None

    def path(self, block_index: int | None = None) -> str:
        """The path of the message, or of one of its blocks, in the caller's list."""
        if block_index is None:
            return f"messages[{self.index}]"
        if self.paths is None:
            return f"messages[{self.index}].content[{block_index}]"
        return f"messages[{self.index}].{self.paths[block_index]}"

    def get_content_blocks(self, block_type: str | None = None) -> list[dict[str, Any]]:
        """AgentScope's `Msg.get_content_blocks`: string content is one text block."""
        if isinstance(self.content, str):
            blocks = [{"type": "text", "text": self.content}]
        else:
            blocks = self.content
        if block_type is None:
            return blocks
        return [b for b in blocks if b.get("type") == block_type]

    def has_content_blocks(self, block_type: str | None = None) -> bool:
        """AgentScope's `Msg.has_content_blocks`."""
        return len(self.get_content_blocks(block_type)) > 0

    def get_text_content(self, separator: str = "\n") -> str | None:
        """AgentScope's `Msg.get_text_content`."""
        if isinstance(self.content, str):
            return self.content
        texts = [b["text"] for b in self.content if b.get("type") == "text"]
        return separator.join(texts) if texts else None

    def has_tool_blocks(self) -> bool:
        """Whether the message holds a tool call or a tool result."""
        return self.has_content_blocks("tool_use") or self.has_content_blocks("tool_result")


# The slots behind `MsgView`'s fields, for the views below that load them late.
_NAME = MsgView.__dict__["name"]
_ROLE = MsgView.__dict__["role"]
_CONTENT = MsgView.__dict__["content"]


class CachedView(MsgView):
    """A view of a message the cache knows by `key` (None: its turn is not
    to be cached). A `prefetched` view carries the cache's answer for its
    chat turn at its own position (`turn`, None for a miss), looked up ahead
    for all the messages at once."""

    __slots__ = ("key", "prefetched", "turn")

    def __init__(
        self,
        name: str | None,
        role: str,
        content: str | list[dict[str, Any]],
        index: int,
        key: Key | None,
    ) -> None:
        super().__init__(name, role, content, index)
        self.key = key
        self.turn: TurnRecord | None = None
        self.prefetched = False

    def plain(self) -> bool:
        """Whether its turn may be stored: a keyed view is plain unless it
        says otherwise (see `entries.plain_content`)."""
        return True


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


def message_metadata(msgs: Sequence[Msg | Mapping[str, Any]], start: int = 0) -> list[Any]:
    """Each message's metadata (what a provider-fidelity parse kept there, such
    as Anthropic's container), None where it has none; the messages were
    checked already (`msgs[0]` is the caller's `messages[start]`)."""
    found: list[Any] = []
    for index, msg in enumerate(msgs, start):
        if type(msg) is not Msg:
            found.append(msg.get("metadata") if isinstance(msg, Mapping) else None)
        elif msg.metadata_json:
            found.append(_json.loads(msg.metadata_json, f"messages[{index}].metadata_json"))
        else:
            found.append(None)
    return found


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
    """`view`, reusing a view of the same content kept in `cache`; a plain
    one is keyed, so that its turn may be cached."""
    msg = message_from_input(msg, index)
    key = view_key(msg)
    hit: ViewRecord | None = cache.get(key)
    if hit is not None:
        return _StoredView(hit.name, hit.role, hit.content, index, key if hit.plain else None)
    made = build_view(msg, index)
    plain = plain_content(made.content)
    try:
        stored = marshal.dumps(made.content)
    except ValueError:  # not plain data, or nested past marshal's limit
        return made
    # Errors are never cached: they name the message's position.
    record = ViewRecord(made.name, made.role, stored, plain)
    cache.put(key, record, key_bytes(key) + len(stored))
    if plain:
        return CachedView(made.name, made.role, made.content, index, key)
    return made


class _StoredView(CachedView):
    """A view from the cache whose content is loaded (a fresh copy) on first
    use: a chat turn found in the cache never reads it."""

    __slots__ = ("_stored",)

    def __init__(
        self,
        name: str | None,
        role: str,
        stored: bytes,
        index: int,
        key: Key | None,
    ) -> None:
        self.name = name
        self.role = role
        self.index = index
        self.key = key
        self.turn = None
        self.prefetched = False
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


class _LazyView(CachedView):
    """A message whose chat turn `format()` looked up ahead (`turn`), known
    by what names its content in the cache (`key`: its view key, or the
    server's wire key). Name, role and content are read from the `Msg` only
    when something asks: a turn replayed from the cache never does."""

    __slots__ = ("_loaded", "_msg")
    # Looked up ahead, always (a class attribute: one store less per message).
    prefetched = True

    def __init__(self, msg: Msg, index: int, key: Key, turn: TurnRecord | None) -> None:
        self.index = index
        self.key = key
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

    def plain(self) -> bool:
        return plain_content(self.content)


def _missed(view: _LazyView, msg: Msg | Mapping[str, Any], index: int) -> _LazyView:
    """`view` of a message no cached turn covers, checked and built now, as
    `view` does: errors then come in the same order as without a cache."""
    msg = message_from_input(msg, index)
    view._msg = msg
    view.role = _role(msg, index)
    view.content = _content(msg, index)
    return view


def keyed_views(msgs: Sequence[Msg], cache: FormatCache, scope: int) -> list[MsgView]:
    """Views of `msgs` (all `Msg`s) for a chat walk with `cache`: each with
    the turn the cache holds for its content (`entries.view_key`), looked up
    all at once. A message with a cached turn is not checked again: the same
    content in the same position and scope passed every check before."""
    ids = view_keys(msgs)
    found = cache.get_many(turn_keys(scope, ids))
    views: list[MsgView] = []
    for index, (msg, key, turn) in enumerate(zip(msgs, ids, found, strict=True)):
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
    the chat turn the cache holds for its bytes (looked up all at once).

    A message with a cached turn is not checked again: the same bytes in the
    same position and scope were formatted before, so they passed every check
    then. Every other message is checked first, in order, as `view` does.
    """
    start = wire.skipped
    slices = wire.messages
    contents = [wire_key(data) for data in slices]
    turns = cache.get_many(turn_keys(scope, contents, start))
    views: list[MsgView] = []
    # Sliced: iterating a protobuf repeated field makes a wrapper object per
    # message, which is what skipping the run saves.
    for index, (msg, key, turn) in enumerate(
        zip(msgs[start:], contents, turns, strict=True), start
    ):
        view = _LazyView(msg, index, key, turn)  # type: ignore[arg-type]
        views.append(view if turn is not None and type(msg) is Msg else _missed(view, msg, index))
    return views
