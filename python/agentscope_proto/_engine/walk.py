"""The cache as one chat walk sees it: `TurnCache`, the one object the turn
skeleton (`providers/_turns.py`) is handed (`FormatContext.turns`).

It knows where the walk goes on from (`resume`: the walk over the messages
before these, the server's or a `Conversation`'s), answers for each view the
chat turn the cache holds (`find`), keeps the turns the walk formats
(`keep`) and counts those it could not keep; for the server it also keeps
the walk over the whole conversation, for the next request to go on from
(`keep_walk`).
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from .._wire import WireMessages
from ..cache import FormatCache
from ..options import FormatSettings
from .body import EncodedMessage, encoded_turn
from .entries import (
    Key,
    Prefix,
    TurnRecord,
    WalkState,
    conversation_key,
    key_bytes,
    turn_key,
)
from .views import CachedView, MsgView

__all__ = ["TurnCache", "resume_point", "settings_scope"]


def settings_scope(
    cache: FormatCache, provider: str, settings: FormatSettings, model: str | None = None
) -> int:
    """The number naming `provider`'s chat turns under `settings`, in a
    request calling `model`, in `cache` (the settings choose the variant, and
    with it the turn code; the model, which signatures it gives back)."""
    return cache.scope("chat", provider, settings, model)


def resume_point(cache: FormatCache, scope: int, wire: WireMessages) -> Prefix | None:
    """Walk the server's messages, skipping the run a cached walk of the same
    conversation covers (an agent re-sends its history with new messages
    after it); that walk, or None."""
    prefix: Prefix | None = None
    if wire.first is not None:
        prefix = cache.get(conversation_key(scope, wire.first))
        if prefix is not None and not wire.known_run(prefix.run):
            prefix = None
    if prefix is None:
        wire.walk()
        return None
    wire.walk(len(prefix.run), prefix.count)
    return prefix


class TurnCache:
    """What one chat walk reads from and keeps in a `FormatCache` (none: a
    walk that only goes on from `resume`, a `Conversation`'s).

    Turns are kept as copies, or (`shared`, the server's wire-keyed turns) as
    their `EncodedMessage`s, which the body is then written from.
    """

    __slots__ = (
        "_cache",
        "_prefix",
        "_scope",
        "_shared",
        "caching",
        "resume",
        "uncached",
        "walked",
    )

    def __init__(
        self,
        cache: FormatCache | None,
        scope: int = 0,
        *,
        shared: bool = False,
        resume: WalkState | None = None,
    ) -> None:
        self._cache = cache
        # Whether turns are looked up and kept (else `find` and `keep` do nothing).
        self.caching = cache is not None
        self._scope = scope
        self._shared = shared
        self._prefix: Prefix | None = None
        # Where the walk starts, taken by it once; None: from the beginning.
        self.resume = resume
        # Turns formatted but not kept (media, promotions, warnings about more
        # than their message): a walk with any is not kept by `keep_walk`.
        self.uncached = 0
        # Where the walk ended (its position after the last message, promoted
        # messages counting): where a walk resumed from it goes on.
        self.walked = 0

    @property
    def scope(self) -> int:
        """The number naming the provider and settings in the cache's keys."""
        return self._scope

    @classmethod
    def for_wire(cls, cache: FormatCache, scope: int, wire: WireMessages) -> TurnCache:
        """The server's: going on from the walk over the run of messages the
        request starts with, when the cache holds one (see `resume_point`)."""
        prefix = resume_point(cache, scope, wire)
        turns = cls(cache, scope, shared=True, resume=None if prefix is None else prefix.state())
        turns._prefix = prefix
        return turns

    def find(self, view: MsgView, position: int) -> TurnRecord | None:
        """The cached chat turn of `view` at `position`, or None."""
        cache = self._cache
        if cache is None or not isinstance(view, CachedView):
            return None  # a plain view (promoted, renamed, part of a message)
        first = not position
        if view.prefetched and first == (not view.index):
            # The cache's answer for this very position, looked up ahead.
            return view.turn
        if view.key is None:
            return None
        record: TurnRecord | None = cache.get(turn_key(self._scope, view.key, first))
        return record

    def keep(
        self,
        view: MsgView,
        position: int,
        out: list[Any],
        start: int,
        warned: Sequence[FormatWarning],
        last_block: int | None,
        promoted: bool,
        turns: int = 1,
    ) -> None:
        """Keep the turn of `view` at `position` that made `out[start:]` (with
        the warnings `warned`), if it is a function of its message alone
        (`turns`: the positions it took, where the message went out as
        several turns)."""
        cache = self._cache
        if cache is None:
            return
        kept = (
            not promoted
            and isinstance(view, CachedView)
            and view.key is not None
            and view.plain()
            and self._store(
                cache, view.key, view.index, position, out, start, warned, last_block, turns
            )
        )
        if not kept:
            self.uncached += 1

    def _store(
        self,
        cache: FormatCache,
        content: Key,
        index: int,
        position: int,
        out: list[Any],
        start: int,
        warned: Sequence[FormatWarning],
        last_block: int | None,
        turns: int,
    ) -> bool:
        """Cache the turn that made `out[start:]`; whether it could be.

        A shared turn's messages in `out` become their `EncodedMessage`s (equal
        dicts), so that the body is written from their JSON."""
        # Warnings are kept relative to the message (its index changes when the
        # list grows at the front or is truncated); one naming anything else
        # means the turn depended on more than its message: not cached.
        prefix = f"messages[{index}]"
        relative: list[tuple[int | None, str, str]] = []
        for warning in warned:
            rest = warning.path[len(prefix) :] if warning.path.startswith(prefix) else None
            if rest == "":
                relative.append((None, warning.block_type, warning.message))
            elif rest and rest.startswith(".content[") and rest.endswith("]"):
                number = rest[len(".content[") : -1]
                if not number.isdigit():
                    return False
                relative.append((int(number), warning.block_type, warning.message))
            else:
                return False
        key = turn_key(self._scope, content, not position)
        if not self._shared:
            try:
                blob = marshal.dumps(out[start:])
            except ValueError:
                # Not plain data (or nested past marshal's depth limit): the
                # message is simply formatted again next time.
                return True
            record = TurnRecord(blob, tuple(relative), last_block, turns)
            cache.put(key, record, key_bytes(key) + len(blob))
            return True
        encoded = encoded_turn(out[start:])
        if encoded is None:
            return False
        out[start:] = encoded
        # The key's bytes, the JSON, and the dicts (about twice their JSON).
        size = len(content[-1]) + 3 * sum(len(message.json) for message in encoded)
        cache.put(key, TurnRecord(encoded, tuple(relative), last_block, turns), size)
        return True

    def keep_walk(
        self,
        wire: WireMessages,
        messages: list[Any],
        warnings: Sequence[FormatWarning],
        at_message: int,
        at_block: int | None,
    ) -> None:
        """Keep the state of a chat walk over all of the server's messages (one
        entry per conversation, replaced as it grows). Only a walk whose every
        turn came from or went into the cache (a pure function of its message's
        bytes) is kept, and only when its messages are one run of bytes."""
        cache = self._cache
        run = wire.run()
        if cache is None or run is None or wire.first is None or self.uncached:
            return
        resumed = self._prefix
        known = 0 if resumed is None else len(resumed.messages)
        fresh = []
        for message in messages[known:]:
            if type(message) is not EncodedMessage:
                return
            fresh.append(message.json)
        joined = b",".join(fresh)
        if resumed is None:
            json = b"[" + joined
        elif joined:
            json = resumed.json + b"," + joined if known else resumed.json + joined
        else:
            json = resumed.json
        prefix = Prefix(
            run, tuple(messages), json, tuple(warnings), len(wire), at_message, at_block
        )
        # The run's bytes, its messages' JSON, and (conservatively) the dicts it
        # keeps alive as if nothing else held them, about twice their JSON.
        cache.put(conversation_key(self._scope, wire.first), prefix, len(run) + 3 * len(json))
