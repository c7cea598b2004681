"""What a served agent's state store does: keep each session's state between
calls, and let one replica at a time run the session.

A store holds, per session, the `SessionState` its hosting wrote after the
session's last call, with a version that every save increments, and a lease:
the replica running a call on the session holds it (a token with a time to
live, renewed while the call runs), so that two replicas never run the same
session at once, and a replica that dies frees its sessions within the
lease's time. A call's writes (its save, its reply's log) are fenced by the
lease (`Holder`): a replica that lost its lease to another (paused past it)
cannot write over what that one writes; one whose lease ran out with nobody
taking the session since goes on, its lease taken back.

A replica may keep a session's lease a while after its call (`Save.hold_ms`:
held idle), so that the session's next call there takes no step to take it
(a conversation's calls come to one replica, one after the other). Another
replica wanting it asks the holder (`acquire` does, through the holder's
notices), which gives it up at once, or at the end of the call it runs; a
holder that died frees it within the hold. Only a lease held for a call
makes the session busy (`leased`).

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
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

__all__ = ["Entry", "Holder", "LeaseLost", "Notice", "Renewed", "Save", "StateStore", "Stored"]


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

    LOST = 0  # another took the session: the call's writes are refused
    HELD = 1
    # Held, and a caller asked (on any replica) to interrupt the call.
    INTERRUPT = 2


class Notice(enum.Enum):
    """What a replica hears from the store about a session whose lease it
    holds (`StateStore.notices`)."""

    # Its notices are being listened to (the first notice, and after a reconnection).
    LISTENING = "listening"
    # Another replica waits for the lease.
    WANTED = "w"
    # A caller asked to interrupt the call running in the session (asked
    # while the lease was held idle: the call may have begun since).
    INTERRUPT = "i"


@dataclass(frozen=True)
class Holder:
    """Who writes for a call: the replica's token, and the version of the
    stored state the call began from. Its writes are taken while it holds
    the session's lease, or while nobody does and the state is still at
    `base` (its lease ran out in a stall, and nobody took the session
    since: nothing it was fenced against happened); else `LeaseLost`."""

    owner: str
    base: int


class LeaseLost(Exception):
    """The call's replica no longer holds the session's lease (another took
    the session): nothing of the write was made."""


@dataclass(frozen=True)
class Save:
    """A save of a session's state (`StateStore.save`), alone or with a
    reply's last log entries in one step (`StateStore.append`): kept
    `idle_ms` after it; the lease given up, or kept `hold_ms` (held idle).
    A store may hold it up to `gather_ms` to write it with other sessions'
    saves (group commit: the replica runs other calls at once)."""

    holder: Holder
    state: bytes
    idle_ms: int
    hold_ms: int
    kept: int
    context: Sequence[bytes]
    gather_ms: float = 0.0


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
        """Take the session's lease for `owner` (also from its own idle hold)
        unless another holds it (None: that one is told it is wanted); the
        version of its stored state (0: none), read in the same step."""

    @abc.abstractmethod
    async def renew(self, session_id: str, holder: Holder, ttl_ms: int) -> Renewed:
        """Extend `holder`'s lease (held for a call from now on, if it was
        held idle; taken back if it ran out and nobody took the session
        since), and take a pending interrupt request."""

    @abc.abstractmethod
    async def request_interrupt(self, session_id: str, ttl_ms: int) -> None:
        """Ask whichever replica runs a call in the session to interrupt it
        (at its next renewal; a lease held idle: its holder is told, and
        interrupts the call it may have begun); void once the call ends."""

    @abc.abstractmethod
    async def release(self, session_id: str, owner: str, *, only_idle: bool = False) -> None:
        """Give the lease up if `owner` still holds it (`only_idle`: if it
        holds it idle, not if a call of its own took it back meanwhile)."""

    @abc.abstractmethod
    def notices(self, owner: str) -> AsyncIterator[tuple[Notice, str]]:
        """What the store tells `owner` about sessions whose lease it holds,
        each with the session's id: `Notice.LISTENING` first (with no id),
        then as they come, until the store fails (raised)."""

    @abc.abstractmethod
    async def version(self, session_id: str) -> int:
        """The version of the session's stored state; 0 if it has none."""

    @abc.abstractmethod
    async def load(self, session_id: str) -> Stored | None:
        """The session's stored state, None if it has none (never existed, or
        expired)."""

    @abc.abstractmethod
    async def save(self, session_id: str, save: Save) -> int:
        """Store the session's state, fenced by `save.holder`:
        `save.state` (its `SessionState` without context), and its context:
        the first `save.kept` messages stored (the holder's last save or load
        had them), then `save.context`'s; kept `save.idle_ms` after this
        save, the lease given up or held idle (`save.hold_ms`); an interrupt
        asked for meanwhile void (the call ended). The new version;
        `LeaseLost` if the holder lost the lease."""

    @abc.abstractmethod
    async def append(
        self,
        session_id: str,
        reply_id: str,
        entries: list[bytes],
        keep_ms: int,
        holder: Holder | None = None,
        save: Save | None = None,
    ) -> tuple[list[str], int | None]:
        """Append to the reply's log, kept `keep_ms` after this, fenced by
        `holder` (the reply's call's; None: not fenced) and make `save` (the
        session's) in the same step: the entries' positions, and the save's
        new version (None: no save); `LeaseLost`, and nothing written, if
        the holder lost the lease."""

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
        """Whether a replica holds the session's lease for a call (runs a
        call in it; not a lease held idle)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the store's connections."""
