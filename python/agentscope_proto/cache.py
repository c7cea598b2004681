"""`FormatCache`: an explicit, byte-bounded, thread-safe cache for `format()`.

Most of a cold `format()` call is turning each protobuf `Msg` into the
AgentScope-shaped view the formatters read (`message._codec.blocks_to_list`).
That view is a pure function of the message's content, so an agent that
re-sends its whole history every turn can reuse the views of the messages it
sent before: `format(provider, msgs, cache=cache)`.

Entries are keyed by the message's deterministic wire form itself (exact: no
hash collision to argue about; hashing it first cost more than the dict
lookup) and stored as `marshal` bytes. Serialized, not as the objects: every
hit loads a fresh copy, so nothing a formatter or a caller does to a returned
body (which shares dicts with the views it was made from) can reach the cache
or another caller. marshal keeps the exact built-in types, dict key order,
-0.0 and NaN; only this module writes what it loads, in process.
"""

from __future__ import annotations

import marshal
import threading
from collections import OrderedDict
from typing import Any

from ._generated.agentscope.message.v1.message_pb2 import Msg

__all__ = ["DEFAULT_MAX_BYTES", "FormatCache", "view_key"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# What one entry costs beyond its key and value bytes: the key tuple, the two
# `bytes` headers and the ordered dict's slot and link (CPython 3.11, 64-bit,
# rounded up).
ENTRY_OVERHEAD = 256
_VIEW = "view"

Key = tuple[str, bytes]


def view_key(msg: Msg) -> Key:
    """The cache key of `msg`'s view: its deterministic wire form.

    The view reads nothing but the message (name, role, content), so the
    message alone decides it; the tag keeps these keys apart from any other
    kind of entry the cache may hold.
    """
    return (_VIEW, msg.SerializeToString(deterministic=True))


def _cost(key: Key, data: bytes) -> int:
    return len(key[1]) + len(data) + ENTRY_OVERHEAD


class FormatCache:
    """A least-recently-used cache of message views, bounded in bytes.

    Pass one instance to every `format(..., cache=cache)` call of a
    conversation (or of a whole process: entries are keyed by content only).
    Safe to share between threads. A cache never changes an output: a hit
    yields exactly what formatting without it would.

    `max_bytes` counts each entry's key (the message's wire bytes), its
    serialized view and a fixed
    per-entry overhead; the least recently used entries go first. An entry
    bigger than a quarter of `max_bytes` is not kept (it would evict most of
    the rest for one message). `max_bytes=0` keeps nothing.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if type(max_bytes) is not int or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self._max_bytes = max_bytes
        self._entries: OrderedDict[Key, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
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

    def clear(self) -> None:
        """Drop every entry (the hit and miss counts stay)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def get(self, key: Key) -> Any:
        """A fresh copy of the value stored under `key`, or None."""
        with self._lock:
            data = self._entries.get(key)
            if data is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        # Outside the lock: loading is the slow part and needs no state.
        return marshal.loads(data)

    def put(self, key: Key, value: Any) -> None:
        """Store a copy of `value` (plain data: None, bools, numbers, str,
        bytes, tuples, lists, dicts) under `key`; anything else is not kept."""
        try:
            data = marshal.dumps(value)
        except ValueError:
            # Not plain data (or nested past marshal's depth limit): such a
            # message is simply formatted uncached.
            return
        cost = _cost(key, data)
        if cost > self._max_bytes // 4:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= _cost(key, old)
            self._entries[key] = data
            self._bytes += cost
            while self._bytes > self._max_bytes:
                evicted_key, evicted = self._entries.popitem(last=False)
                self._bytes -= _cost(evicted_key, evicted)
