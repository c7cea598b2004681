"""`FormatCache`: an explicit, byte-bounded, thread-safe cache for `format()`.

Most of a cold `format()` call is turning each protobuf `Msg` into the
AgentScope-shaped view the formatters read (`message._codec.blocks_to_list`).
That view is a pure function of the message's content, so an agent that
re-sends its whole history every turn can reuse the views of the messages it
sent before: `format(provider, msgs, cache=cache)`.

Entries are keyed by what they read of a message, exactly: its name, role and
text or blocks' deterministic wire form (no hash collision to argue about;
hashing first cost more than the dict lookup). Values are stored as
`marshal` bytes, not as objects: every hit loads a fresh copy, so nothing a
formatter or a caller does to a returned body (which shares dicts with the
views it was made from) can reach the cache or another caller. marshal keeps
the exact built-in types, dict key order, -0.0 and NaN; only this module
writes what it loads, in process.

Two kinds of entries share one LRU: a message's view, and (chat mode, plain
messages: text, thinking, tool calls, text tool results) its formatted chat
turn for one provider and settings, with its warnings kept relative to the
message so they can name its new position.
"""

from __future__ import annotations

import base64
import itertools
import marshal
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import orjson

from ._generated.agentscope.message.v1.message_pb2 import Msg

__all__ = [
    "DEFAULT_MAX_BYTES",
    "EncodedMessage",
    "FormatCache",
    "JsonRun",
    "PrefixEntry",
    "TurnEntry",
    "content_turn_key",
    "conversation_key",
    "plain_content",
    "turn_key",
    "view_key",
    "wire_key",
    "wire_turn_key",
    "without_first",
]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# What one entry costs beyond its key and value bytes: the key tuple, the two
# `bytes` headers and the ordered dict's slot and link (CPython 3.11, 64-bit,
# rounded up).
ENTRY_OVERHEAD = 256
_VIEW = "view"
_TURN = "turn"
_WIRE = "wire"
_PREFIX = "prefix"

Key = tuple[Any, ...]
# A chat turn's cached result: what it appended to the provider's message
# list, its warnings as (block index or None, block type, text), and the
# index of the last block it handed to a handler (for `ctx.at`).
TurnEntry = tuple[list[Any], list[tuple[int | None, str, str]], int | None]
# Distinct (provider, settings) pairs remembered before starting over.
_MAX_SCOPES = 4096
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


def plain_content(content: Any) -> bool:
    """Whether a view holds only blocks no formatter needs media access,
    saved media or promotion for: text, thinking, tool calls and tool results
    of text. Only those turns are a function of the message and settings."""
    if isinstance(content, str):
        return True
    for block in content:
        kind = block.get("type")
        if kind in _PLAIN_BLOCKS:
            continue
        if kind != "tool_result":
            return False
        output = block.get("output")
        if output is None or isinstance(output, str):
            continue
        if not isinstance(output, list):
            return False
        for item in output:
            if not isinstance(item, dict) or item.get("type") != "text":
                return False
    return True


def turn_key(scope: int, cache_id: Key | None, first: bool) -> Key | None:
    """The cache key of one chat turn, or None when the turn is not cached.

    A chat turn reads its message's view, the provider and settings (`scope`,
    see `FormatCache.scope`) and whether it is the first of the list
    (Anthropic turns a later system message into a user's); with media, also
    files, downloads and the media saved by earlier turns, so only plain
    turns are cached: views `format()` marked with what names their content
    (`MsgView.cache_id`: a view key, set for plain messages that came through
    the cache, or the server's wire key).
    """
    if cache_id is None:
        return None
    return content_turn_key(scope, cache_id, first)


def content_turn_key(scope: int, cache_id: Key, first: bool) -> Key:
    """`turn_key` of a view whose content has a name (`cache_id`)."""
    return (_TURN, scope, first, cache_id)


def wire_key(data: bytes) -> Key:
    """The cache id of a message known by its serialized bytes (the server's
    messages, as they arrived): it names everything in the message, so it
    can stand for any view of it."""
    return (_WIRE, data)


# The state of a chat walk over the run of messages a conversation started
# with (the server's): the run's bytes, then what `FormatContext.resume`
# takes (the provider messages made, the warnings, the turns walked, the block
# last handed to a handler, the messages' JSON as `JsonRun.json` holds it).
PrefixEntry = tuple[bytes, tuple[Any, ...], tuple[Any, ...], int, int, int | None, bytes]


def conversation_key(scope: int, first: bytes) -> Key:
    """Where the walk over a conversation's messages so far is kept: found by
    its first message's bytes (AgentScope gives every message a unique id),
    confirmed by comparing the run's bytes."""
    return (_PREFIX, scope, first)


def wire_turn_key(scope: int, data: bytes, first: bool) -> Key:
    """`turn_key` of a message known by its bytes (`wire_key`)."""
    return content_turn_key(scope, wire_key(data), first)


def _cost(key: Key, data: bytes) -> int:
    # Both kinds of keys end in a view key: (tag, name, role, kind, content),
    # or a wire key (tag, bytes).
    view = key[-1] if key[0] == _TURN else key
    return len(view[1]) + len(view[-1]) + len(data) + ENTRY_OVERHEAD


class FormatCache:
    """A least-recently-used cache of message views, bounded in bytes.

    Pass one instance to every `format(..., cache=cache)` call of a
    conversation (or of a whole process: entries are keyed by content only).
    Safe to share between threads. A cache never changes an output: a hit
    yields exactly what formatting without it would.

    `max_bytes` counts each entry's key (the message's name and content), its
    serialized value and a fixed
    per-entry overhead; the least recently used entries go first. An entry
    bigger than a quarter of `max_bytes` is not kept (it would evict most of
    the rest for one message). `max_bytes=0` keeps nothing.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if type(max_bytes) is not int or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self._max_bytes = max_bytes
        # key -> (cost in bytes, marshal bytes or a shared object)
        self._entries: OrderedDict[Key, tuple[int, Any]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._scopes: dict[tuple[Hashable, ...], int] = {}
        self._scope_numbers = itertools.count()
        self.hits = 0
        self.misses = 0

    @property
    def max_bytes(self) -> int:
        """The configured bound."""
        return self._max_bytes

    @property
    def size_bytes(self) -> int:
        """What the entries held now count for (never above `max_bytes`)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return (
            f"FormatCache(max_bytes={self._max_bytes}, entries={len(self._entries)}, "
            f"size_bytes={self._bytes}, hits={self.hits}, misses={self.misses})"
        )

    def scope(self, *parts: Hashable) -> int:
        """A small number standing for `parts` (a provider's turn code and the
        settings) in this cache's keys: hashed once per call, not per message.
        Numbers are never reused, so forgetting them only costs misses."""
        with self._lock:
            number = self._scopes.get(parts)
            if number is None:
                if len(self._scopes) >= _MAX_SCOPES:
                    self._scopes.clear()
                number = self._scopes[parts] = next(self._scope_numbers)
            return number

    def clear(self) -> None:
        """Drop every entry (the hit and miss counts stay)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def get(self, key: Key) -> Any:
        """The value stored under `key` (a fresh copy, unless it was stored
        with `put_shared`), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        # Outside the lock: loading is the slow part and needs no state.
        return _loaded(entry[1])

    def get_many(self, keys: list[Key]) -> list[Any]:
        """`get` of every key, under one lock (the server's chat turns)."""
        found: list[Any] = []
        hits = 0
        with self._lock:
            entries = self._entries
            for key in keys:
                entry = entries.get(key)
                if entry is None:
                    found.append(None)
                    continue
                entries.move_to_end(key)
                found.append(entry[1])
                hits += 1
            self.hits += hits
            self.misses += len(keys) - hits
        return [_loaded(value) for value in found]

    def put(self, key: Key, value: Any) -> None:
        """Store a copy of `value` (plain data: None, bools, numbers, str,
        bytes, tuples, lists, dicts) under `key`; anything else is not kept."""
        try:
            data = marshal.dumps(value)
        except ValueError:
            # Not plain data (or nested past marshal's depth limit): such a
            # message is simply formatted uncached.
            return
        self._store(key, data, _cost(key, data))

    def put_shared(self, key: Key, value: Any, size: int) -> None:
        """Store `value` itself, not a copy, counted as `size` bytes: every hit
        returns the same object. Only for values nobody changes: the server's
        encoded chat turns (see `EncodedMessage`), which go into a response
        body that is encoded and dropped, never handed to a caller."""
        self._store(key, value, size + ENTRY_OVERHEAD)

    def _store(self, key: Key, data: Any, cost: int) -> None:
        if cost > self._max_bytes // 4:
            return
        with self._lock:
            # The total is published once, after eviction: `size_bytes` is
            # read without the lock and must never show a value above the bound.
            total = self._bytes
            old = self._entries.pop(key, None)
            if old is not None:
                total -= old[0]
            self._entries[key] = (cost, data)
            total += cost
            while total > self._max_bytes:
                _, (evicted_cost, _) = self._entries.popitem(last=False)
                total -= evicted_cost
            self._bytes = total


def _loaded(data: Any) -> Any:
    """A stored value: a fresh copy of what `put` kept, `put_shared`'s as it is."""
    return marshal.loads(data) if type(data) is bytes else data


def _base64(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encoded_turn(messages: list[dict[str, Any]]) -> tuple[EncodedMessage, ...] | None:
    """`messages` with their JSON text, as `body_to_json` writes them (bytes
    as base64), or None when orjson cannot write one (the turn is then not
    cached: the body takes the slow, checked path)."""
    try:
        return tuple(EncodedMessage(m, orjson.dumps(m, default=_base64)) for m in messages)
    except orjson.JSONEncodeError:
        return None


class JsonRun(list[Any]):
    """A provider message list whose first `known` items are `EncodedMessage`s
    whose JSON, joined, is `json[start:]` (`json` begins with `[`; no closing
    bracket): what a resumed chat walk starts from, so that the body's list is
    written by appending to it instead of joining every item again. `json`
    may be a `bytearray` its owner appends to (a `Conversation`'s), never
    changed in what `start` and the items cover."""

    __slots__ = ("json", "known", "start")

    def __init__(self, items: tuple[Any, ...], json: bytes | bytearray, start: int = 1) -> None:
        super().__init__(items)
        self.known = len(items)
        self.json = json
        self.start = start

    def known_json(self) -> memoryview:
        """The joined JSON of the `known` items, without copying it."""
        return memoryview(self.json)[self.start :]


def without_first(messages: list[Any]) -> list[Any]:
    """`messages[1:]`, a `JsonRun` still one (its JSON starting after the first
    message's): Anthropic takes its system prompt out of the list."""
    if type(messages) is not JsonRun or not messages.known:
        return messages[1:]
    known = messages.known
    # Past the first message's JSON and the comma after it (if another follows).
    start = messages.start + len(messages[0].json) + (known > 1)
    rest = JsonRun(tuple(messages[1:known]), messages.json, start)
    rest.extend(messages[known:])
    return rest


class EncodedMessage(dict[str, Any]):
    """A provider message of a cached chat turn together with its JSON text.

    The server's body encoder (`formatting.body_to_json`) writes `json` for it
    as it is instead of encoding the dict again: a turn replayed from the
    cache costs a lookup, not its formatting nor its encoding. It is shared
    between requests, so it must never change; `format()` only makes these
    for the server's wire-keyed messages (`wire_views`), whose bodies are
    encoded and dropped.
    """

    __slots__ = ("json",)

    def __init__(self, message: dict[str, Any], json: bytes) -> None:
        super().__init__(message)
        self.json = json
