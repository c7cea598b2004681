"""What a served agent's state store does: keep each session's state between
calls, and let one replica at a time run the session.

A store holds, per session, the `SessionState` its hosting wrote after the
session's last call, with a version that every save increments, and a lease:
the replica running a call on the session holds it (a token with a time to
live, renewed while the call runs), so that two replicas never run the same
session at once, and a replica that dies frees its sessions within the
lease's time. A save is fenced by the lease: a replica that lost its lease
(paused past it) cannot overwrite what the next one wrote.

It also holds each reply's log: the reply's responses (and its error, if it
failed), appended as the reply produces them whether anyone reads them or
not, each at a position (`Entry.position`: opaque, increasing), kept for a
while after the last one, so that a caller can take the reply up where it
stopped reading (`AgentService.Resume`), on any replica sharing the store.

`memory` keeps no session state outside the process (`durable` is false):
sessions live in the server's memory, as they always did; its reply logs
are the process's own. `redis://`
keeps them in Redis, shared by every replica using it (`redis_store.py`).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Entry", "Renewed", "Save", "StateStore", "Stored"]


@dataclass(frozen=True)
class Stored:
    """A session's stored state: the bytes of its `SessionState` without its
    context and of each context message, oldest first (`hosting.encoded`
    makes the whole), and their version."""

    state: bytes
    version: int
    context: tuple[bytes, ...] = ()


class Renewed(enum.IntEnum):
    """What renewing a lease found."""

    LOST = 0  # another holds it, or none: the call's state is not saved
    HELD = 1
    # Held, and a caller asked (on any replica) to interrupt the call.
    INTERRUPT = 2


@dataclass(frozen=True)
class Save:
    """A save of a session's state (`StateStore.save`), alone or with a
    reply's last log entries in one step (`StateStore.append`)."""

    owner: str
    state: bytes
    idle_ms: int
    release: bool
    kept: int
    context: Sequence[bytes]


@dataclass(frozen=True)
class Entry:
    """One entry of a reply's log: its position and its bytes."""

    position: str
    data: bytes


class StateStore(abc.ABC):
    """Sessions' states and leases (see the module doc)."""

    # Whether sessions outlive the process (and are shared by replicas).
    durable: bool = True

    @abc.abstractmethod
    async def acquire(self, session_id: str, owner: str, ttl_ms: int) -> int | None:
        """Take the session's lease for `owner` unless another holds it (None);
        the version of its stored state (0: none), read in the same step."""

    @abc.abstractmethod
    async def renew(self, session_id: str, owner: str, ttl_ms: int) -> Renewed:
        """Extend `owner`'s lease, and take a pending interrupt request."""

    @abc.abstractmethod
    async def request_interrupt(self, session_id: str, ttl_ms: int) -> None:
        """Ask whichever replica runs a call in the session to interrupt it
        (at its next renewal); void once a new call takes the session."""

    @abc.abstractmethod
    async def release(self, session_id: str, owner: str) -> None:
        """Give the lease up, if `owner` still holds it."""

    @abc.abstractmethod
    async def version(self, session_id: str) -> int:
        """The version of the session's stored state; 0 if it has none."""

    @abc.abstractmethod
    async def load(self, session_id: str) -> Stored | None:
        """The session's stored state, None if it has none (never existed, or
        expired)."""

    @abc.abstractmethod
    async def save(self, session_id: str, save: Save) -> int | None:
        """Store the session's state if `save.owner` holds its lease:
        `save.state` (its `SessionState` without context), and its context:
        the first `save.kept` messages stored (the owner's last save or load
        had them), then `save.context`'s; kept `save.idle_ms` after this
        save, the lease given up if `save.release`. The new version, or None
        if the lease was lost."""

    @abc.abstractmethod
    async def append(
        self,
        session_id: str,
        reply_id: str,
        entries: list[bytes],
        keep_ms: int,
        save: Save | None = None,
    ) -> tuple[list[str], int | None]:
        """Append to the reply's log, kept `keep_ms` after this, and make
        `save` (the session's) in the same step: the entries' positions, and
        the save's new version (None: no save, or its lease was lost)."""

    @abc.abstractmethod
    async def read(
        self, session_id: str, reply_id: str, after: str, wait_ms: int
    ) -> list[Entry] | None:
        """The reply's entries after position `after` ("": from the first),
        waiting up to `wait_ms` for one if there are none yet (an empty list
        then); None if the reply has no log (never had, or it expired)."""

    @abc.abstractmethod
    async def last(self, session_id: str, reply_id: str) -> Entry | None:
        """The reply's last entry, None if its log has none."""

    @abc.abstractmethod
    async def leased(self, session_id: str) -> bool:
        """Whether a replica holds the session's lease (runs a call in it)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the store's connections."""
