"""A session's turn across replicas: its lease, its agent brought up to the
stored state, and its state saved after the call.

With a durable state store (`serve-agent --state redis://...`) any replica
may take any session. A call's turn, once the session's own lock is held
(`sessions.py`), is: take the session's lease in the store (waiting while
another replica runs a call on it: calls queue, across replicas as within
one, within their deadline), renew it while the call runs, load the stored
state into the session's agent if another replica saved a newer one since
this replica's agent last saw it, then after the call (a reply that ended,
asked, failed or was interrupted alike) save the agent's state and give the
lease up. A replica that dies holds its leases no longer than
`AgentConfig.lease_seconds`. A stored state this server cannot read is
refused (`StoredStateError`, DATA_LOSS) and left as it is: never replaced
by a new session's.

With the `memory` store a turn is the lock alone, as it always was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, Protocol

from google.protobuf.message import DecodeError

from .._generated.agentscope.agent.v1 import state_pb2
from ..errors import AgentScopeProtoError, StoredStateError
from .config import AgentConfig
from .hosting import Hosting, encoded
from .state import StateStore
from .state.store import Renewed, Save


class Session(Protocol):
    """What a turn needs of a session (`sessions.Session`)."""

    id: str
    agent: Any
    # The version of the stored state its agent holds: 0 none, -1 untrusted.
    stored: int
    # Its context's messages as the last save converted them (`save_state`).
    saved: dict[str, tuple[Any, bytes]]
    # Its context's messages as the store has them (its last save or load).
    context: list[bytes]
    publish: Any
    # Kept in this process alone, even with a durable store (`sessions.Session`).
    local: bool
    # The reply running in it on this replica, if one does (`replies.Reply`).
    reply: Any


__all__ = ["Keeper"]

logger = logging.getLogger("agentscope_proto.agents")

# The first and the longest wait between two tries for a busy session's lease.
_FIRST_TRY_S, _LAST_TRY_S = 0.005, 0.2


class Keeper:
    """Takes sessions' turns on a state store (see the module doc)."""

    def __init__(self, store: StateStore, hosting: Hosting, config: AgentConfig) -> None:
        self.store = store
        self._hosting = hosting
        # This replica's token: leases name who holds them.
        self._owner = uuid.uuid4().hex
        self._lease_ms = round(config.lease_seconds * 1000)
        self._idle_ms = round(config.session_idle_seconds * 1000)
        # Set as the server stops with replies running (`Sessions.hand_over`):
        # calls end without saving, their replies left to other replicas.
        self.handing_over = False

    @property
    def durable(self) -> bool:
        """Whether sessions live in the store (else in this process alone)."""
        return self.store.durable

    async def exists(self, session_id: str) -> bool:
        """Whether the store holds the session: a replica saved it, or runs
        its first call now."""
        return await self.store.version(session_id) > 0 or await self.store.leased(session_id)

    @contextlib.asynccontextmanager
    async def turn(
        self, session: Session, save_by: Callable[[Save], Awaitable[int | None]] | None = None
    ) -> AsyncIterator[None]:
        """The call's turn on `session` (held under the session's lock);
        `save_by` makes the save at its end (a reply's: with the reply's
        last log entries, in one step) instead of the store alone."""
        if not self.durable or session.local:
            yield
            return
        version = await self._lease(session.id)
        renewing = _Renewing(self._renew(session), self._lease_ms / 3000)
        released = False
        try:
            await self._refresh(session, version)
            try:
                yield
            finally:
                renewing.cancel()  # before the save gives the lease up
                released = await self._save(session, save_by)
        finally:
            renewing.cancel()
            if not released:
                await self.store.release(session.id, self._owner)

    async def _lease(self, session_id: str) -> int:
        """Take the session's lease (waiting while another holds it); the
        stored state's version."""
        wait = _FIRST_TRY_S
        while (
            version := await self.store.acquire(session_id, self._owner, self._lease_ms)
        ) is None:
            await asyncio.sleep(wait)
            wait = min(wait * 2, _LAST_TRY_S)
        return version

    async def _renew(self, session: Session) -> None:
        while True:
            try:
                renewed = await self.store.renew(session.id, self._owner, self._lease_ms)
            except AgentScopeProtoError as exc:
                logger.warning("session %r: renewing its lease failed: %s", session.id, exc)
                await asyncio.sleep(self._lease_ms / 3000)
                continue
            if renewed is Renewed.INTERRUPT and session.reply is not None:
                session.reply.interrupt()  # asked on another replica
            if renewed is Renewed.LOST:
                logger.warning(
                    "session %r: its lease ran out while a call ran; its state will not be "
                    "saved over the next holder's",
                    session.id,
                )
                return
            await asyncio.sleep(self._lease_ms / 3000)

    async def interrupt(self, session_id: str) -> None:
        """Ask the replica running a call in the session to interrupt it."""
        if self.durable:
            await self.store.request_interrupt(session_id, self._lease_ms)

    async def _refresh(self, session: Session, version: int) -> None:
        """Load the stored state (at `version`) into the session's agent,
        unless the agent has it already (this replica saved it last)."""
        if version == session.stored:
            return
        stored = await self.store.load(session.id)
        if stored is None:
            session.stored = 0  # expired since: the agent goes on as it is
            return
        try:
            state = state_pb2.SessionState.FromString(encoded(stored.state, stored.context))
            self._hosting.load_state(session.agent, state)
        except (DecodeError, ValueError, TypeError, KeyError, AgentScopeProtoError) as exc:
            session.stored = -1  # its agent is no longer any stored state's
            raise StoredStateError(
                "session_id",
                f"session {session.id!r}: its stored state cannot be read "
                f"({type(exc).__name__}: {str(exc)[:200]}); it is left as stored",
            ) from None
        session.stored = stored.version
        session.context = list(stored.context)

    async def _save(
        self, session: Session, save_by: Callable[[Save], Awaitable[int | None]] | None
    ) -> bool:
        """Save the agent's state and give the lease up in one step; whether
        the lease was given up so."""
        if session.stored < 0 or self.handing_over:
            return False  # never loaded, or left: saving would replace what is stored
        saved = self._hosting.save_state(session.agent, session.saved)
        if saved is None:
            return False  # the agent keeps nothing between calls
        saved.rest.saved_at_ms = time.time_ns() // 1_000_000
        kept = _same_start(session.context, saved.context)
        save = Save(
            self._owner,
            saved.rest.SerializeToString(),
            self._idle_ms,
            True,
            kept,
            saved.context[kept:],
        )
        save_to = save_by or partial(self.store.save, session.id)
        version = await save_to(save)
        if version is None:
            logger.warning(
                "session %r: its lease was lost; this call's state is not saved", session.id
            )
            session.stored = -1
            return False
        session.stored, session.context = version, saved.context
        return True


class _Renewing:
    """A turn's lease renewal, begun a third of the lease into the turn (a
    timer until then: most turns end before, and a timer costs less than a
    task)."""

    __slots__ = ("_renewal", "_task", "_timer")

    def __init__(self, renewal: Coroutine[Any, Any, None], delay: float) -> None:
        self._renewal = renewal
        self._task: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(delay, self._start)

    def _start(self) -> None:
        self._task = asyncio.create_task(self._renewal)

    def cancel(self) -> None:
        self._timer.cancel()
        if self._task is not None:
            self._task.cancel()
        else:
            self._renewal.close()  # never started: no "never awaited" warning


def _same_start(stored: list[bytes], context: list[bytes]) -> int:
    """How many of `context`'s first messages the store has as they are (a
    context grows at its end; the messages a save reuses are the same
    objects, compared at once)."""
    kept = 0
    for old, new in zip(stored, context, strict=False):
        if old != new:
            break
        kept += 1
    return kept
