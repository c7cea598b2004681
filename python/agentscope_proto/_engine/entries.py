"""What the engine keeps in a `FormatCache`, and how it is found.

Two kinds of entries share the cache's one LRU: a message's view (its
content, as the formatters read it: `ViewRecord`), and a chat turn of one
provider under one set of settings (`TurnRecord`). The server also keeps, once per
conversation, where the walk over the messages it has seen ended (`Prefix`).

Keys are what an entry reads, exactly: a message's name, role and text or
blocks' deterministic wire form, or the bytes a message arrived as (no hash
collision to argue about; hashing first cost more than the dict lookup).
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from .._generated.agentscope.message.v1.message_pb2 import Msg
from .body import EncodedMessage, JsonRun

__all__ = [
    "Key",
    "Prefix",
    "TurnRecord",
    "ViewRecord",
    "WalkState",
    "conversation_key",
    "key_bytes",
    "plain_content",
    "reads_media",
    "runs_key",
    "turn_key",
    "turn_keys",
    "view_key",
    "view_keys",
    "wire_key",
]

Key = tuple[Any, ...]
_VIEW = "view"
_TURN = "turn"
_WIRE = "wire"
_PREFIX = "prefix"
_RUNS = "runs"
_PLAIN_BLOCKS = frozenset({"text", "thinking", "tool_use"})


def view_key(msg: Msg) -> Key:
    """The cache key of `msg`'s view: what the view reads of the message.

    That is its name, role and content (the text, or the blocks' deterministic
    wire form), never its id, timestamp or metadata: a message dict without
    an id gets a fresh one every time it is read, and must still be found.
    The tag keeps these keys apart from any other kind of entry.
    """
    if msg.WhichOneof("content") == "text":
        return (_VIEW, msg.name, msg.role, False, msg.text)
    return (_VIEW, msg.name, msg.role, True, msg.blocks.SerializeToString(deterministic=True))


def view_keys(msgs: Sequence[Msg]) -> list[Key]:
    """`view_key` of each message (one list: a chat walk asks for all of its
    messages at once)."""
    return [
        (_VIEW, msg.name, msg.role, False, msg.text)
        if msg.WhichOneof("content") == "text"
        else (_VIEW, msg.name, msg.role, True, msg.blocks.SerializeToString(deterministic=True))
        for msg in msgs
    ]


def wire_key(data: bytes) -> Key:
    """The key of a message known by its serialized bytes (the server's
    messages, as they arrived): it names everything in the message, so it
    can stand for any view of it."""
    return (_WIRE, data)


def turn_key(scope: int, content: Key, first: bool) -> Key:
    """The key of one chat turn of the message `content` names (a view key or
    a wire key).

    A chat turn reads its message's view, the provider and settings (`scope`,
    see `FormatCache.scope`) and whether it is the first of the list
    (Anthropic turns a later system message into a user's); with media, also
    files, downloads and the media saved by earlier turns, so only plain
    turns are cached (`plain_content`).
    """
    return (_TURN, scope, first, content)


def turn_keys(scope: int, contents: Sequence[Key], start: int = 0) -> list[Key]:
    """`turn_key` of each content, the first at position `start` (one list:
    a chat walk asks for all of its messages at once)."""
    return [(_TURN, scope, not position, key) for position, key in enumerate(contents, start)]


def conversation_key(scope: int, first: bytes) -> Key:
    """Where the walk over a conversation's messages so far is kept: found by
    its first message's bytes (AgentScope gives every message a unique id),
    confirmed by comparing the run's bytes."""
    return (_PREFIX, scope, first)


def runs_key(scope: int, first: bytes) -> Key:
    """Where the provider pass's runs over a conversation's walk are kept
    (`providers._runs.PassedRuns`): found as the walk is (`conversation_key`),
    confirmed by the walk's messages being the very objects they cover."""
    return (_RUNS, scope, first)


def key_bytes(key: Key) -> int:
    """What a view or turn key counts for in the cache's bound: the name and
    content of the view key it ends in (a wire key's bytes, twice)."""
    view = key[-1] if key[0] == _TURN else key
    return len(view[1]) + len(view[-1])


def plain_content(content: Any) -> bool:
    """Whether a view holds only blocks no formatter needs media access,
    saved media or promotion for: text, thinking, tool calls, and tool results
    and AgentScope 2.x hints of text. Only those turns are a function of the
    message and settings."""
    if isinstance(content, str):
        return True
    for block in content:
        kind = block.get("type")
        if kind in _PLAIN_BLOCKS:
            continue
        if kind not in _PARTED:
            return False
        parts = block.get(_PARTED[kind])
        if parts is None or isinstance(parts, str):
            continue
        if not isinstance(parts, list):
            return False
        for item in parts:
            if not isinstance(item, dict) or item.get("type") != "text":
                return False
    return True


# The blocks whose key holds a string or a list of parts (text, media).
_PARTED = {"tool_result": "output", "hint": "hint"}


def reads_media(content: Any) -> bool:
    """Whether formatting a view may read a file or download: a block, or an
    item of a tool result's output, whose source is a URL or a path (inline
    base64 is in the message itself, and tool-result media "saved" by an
    earlier turn are the walk's own)."""
    if isinstance(content, str):
        return False
    for block in content:
        if _by_reference(block):
            return True
        output = block.get("output") if block.get("type") == "tool_result" else None
        if isinstance(output, list) and any(_by_reference(item) for item in output):
            return True
    return False


def _by_reference(block: Any) -> bool:
    source = block.get("source") if isinstance(block, dict) else None
    return isinstance(source, dict) and source.get("type") != "base64"


@dataclass(frozen=True, slots=True)
class ViewRecord:
    """A message's view as the cache keeps it: its name and role, its content
    as marshal bytes (each use loads a copy of its own), and whether the
    content is plain (`plain_content`: then its chat turns may be cached)."""

    name: str | None
    role: str
    content: bytes
    plain: bool


@dataclass(slots=True)
class TurnRecord:
    """One chat turn as the cache keeps it: what it appended to the provider's
    message list, its warnings relative to its message (block index or None,
    block type, text) so that they can name the message's new position, and
    the index of the last block it handed a handler (for `ctx.at`). One
    record may hold several turns of one message (`turns`).

    Kept as itself and never changed. Its messages are the marshal bytes of
    the dicts, which every replay loads afresh (nothing a caller does to a
    body reaches the cache), or, for the server's wire-keyed turns, shared
    `EncodedMessage`s, which the server only encodes.
    """

    messages: bytes | tuple[EncodedMessage, ...]
    warnings: tuple[tuple[int | None, str, str], ...]
    last_block: int | None
    # The walk's positions it covers: more than one where the message went
    # out as several turns (`_turns.PieceView`).
    turns: int = 1

    def replayed(self) -> Sequence[Any]:
        """The messages to append: a fresh copy, or the shared ones."""
        messages = self.messages
        return marshal.loads(messages) if type(messages) is bytes else messages


@dataclass(slots=True)
class WalkState:
    """Where a chat walk ended: what a walk over the same messages and more
    goes on from (`TurnCache.resume`)."""

    # The provider messages made so far, with their JSON; the walk appends to it.
    messages: JsonRun
    warnings: Sequence[FormatWarning]
    # Turns walked (promoted messages count).
    position: int
    # The block last handed to a handler (`FormatContext.at`).
    at_message: int
    at_block: int | None


@dataclass(slots=True)
class Prefix:
    """The server's walk over the run of messages a conversation started
    with, kept once per conversation (`conversation_key`) and replaced as it
    grows. Shared by the requests that resume from it: never changed."""

    # The run's bytes, each message with its framing.
    run: bytes
    # The provider messages made (`EncodedMessage`s) and their joined JSON,
    # from "[" on (no closing bracket).
    messages: tuple[Any, ...]
    json: bytes
    warnings: tuple[FormatWarning, ...]
    # Messages in the run.
    count: int
    at_message: int
    at_block: int | None

    def state(self) -> WalkState:
        """Where a walk over the run and more messages starts (its own list)."""
        run = JsonRun(self.messages, self.json)
        return WalkState(run, self.warnings, self.count, self.at_message, self.at_block)
