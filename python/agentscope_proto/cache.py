"""`FormatCache`: an explicit, byte-bounded, thread-safe cache for `format()`.

Most of a cold `format()` call is turning each protobuf `Msg` into the
AgentScope-shaped view the formatters read (`message._codec.blocks_to_list`).
That view is a pure function of the message's content, so an agent that
re-sends its whole history every turn can reuse the views of the messages it
sent before: `format(provider, msgs, cache=cache)`.

This is the store: one LRU of keys to values, bounded in bytes, each value
counted for the size its writer gives. What goes in it (a message's view, a
chat turn of one provider and settings, the server's walk over a
conversation) and under which keys is the format engine's
(`_engine/entries.py`): records nobody changes, which hold whatever a caller
may change as `marshal` bytes, loaded afresh on each use, so nothing a
formatter or a caller does to a returned body (which shares dicts with the
views it was made from) can reach the cache or another caller. marshal
keeps the exact built-in types, dict key order, -0.0 and NaN; only the
package writes what it loads, in process.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["DEFAULT_MAX_BYTES", "ENTRY_OVERHEAD", "FormatCache"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# What one entry costs beyond its key and value bytes: the key tuple, the two
# `bytes` headers and the ordered dict's slot and link (CPython 3.11, 64-bit,
# rounded up).
ENTRY_OVERHEAD = 256

Key = tuple[Any, ...]
# Distinct (provider, settings) pairs remembered before starting over.
_MAX_SCOPES = 4096


class FormatCache:
    """A least-recently-used cache of message views, bounded in bytes.

    Pass one instance to every `format(..., cache=cache)` call of a
    conversation (or of a whole process: entries are keyed by content only).
    Safe to share between threads. A cache never changes an output: a hit
    yields exactly what formatting without it would.

    `max_bytes` counts each entry's key (the message's name and content), its
    value (its serialized size) and a fixed per-entry overhead; the least
    recently used entries go first. An entry
    bigger than a quarter of `max_bytes` is not kept (it would evict most of
    the rest for one message). `max_bytes=0` keeps nothing.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if type(max_bytes) is not int or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self._max_bytes = max_bytes
        # key -> (cost in bytes, the value)
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
        """The value stored under `key`, or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

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
        return found

    def put(self, key: Key, value: Any, size: int) -> None:
        """Store `value` under `key`, counted as `size` bytes plus the
        entry's overhead. Every hit returns the same object: only for values
        nobody changes."""
        cost = size + ENTRY_OVERHEAD
        if cost > self._max_bytes // 4:
            return
        with self._lock:
            # The total is published once, after eviction: `size_bytes` is
            # read without the lock and must never show a value above the bound.
            total = self._bytes
            old = self._entries.pop(key, None)
            if old is not None:
                total -= old[0]
            self._entries[key] = (cost, value)
            total += cost
            while total > self._max_bytes:
                _, (evicted_cost, _) = self._entries.popitem(last=False)
                total -= evicted_cost
            self._bytes = total
