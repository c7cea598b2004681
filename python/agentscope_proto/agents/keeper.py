"""A session's turn across replicas: its lease, its agent brought up to the
stored state, and its state saved after the call.

With a durable state store (`serve-agent --state redis://...`) any replica
may take any session. A call's turn, once the session's own lock is held
(`sessions.py`), is: take the session's lease in the store (waiting while
another replica runs a call on it: calls queue, across replicas as within
one, within their deadline), renew it while the call runs, load the stored
state into the session's agent if another replica saved a newer one since
this replica's agent last saw it, then after the call (a reply that ended,
asked, failed or was interrupted alike) save the agent's state and, in the
same step, hold the lease idle for a lease's time: a conversation's next
call, which comes to this replica, goes on that lease within the first third
of it (with the margin a fresh lease has at its first renewal), taking no
step to take it or to load the state (nobody else can have saved). Another
replica wanting the session says so (`Notice.WANTED`): the lease is given up
at once, or at the end of the call running here. A replica that dies holds
its leases, idle or not, no longer than `AgentConfig.lease_seconds`; one
stopping (`drain`) gives its idle ones up at once. A call's writes are
fenced by its `holder` (its lease, and the state's version it began from):
a replica stalled past its lease goes on while nobody took the session
(its renewal takes the lease back), and writes nothing once another did
(its reply is interrupted there). A stored state this
server cannot read is refused (`StoredStateError`, DATA_LOSS) and left as it
is: never replaced by a new session's.

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
from .state.store import Holder, LeaseLost, Notice, Renewed, Save


class Session(Protocol):
    """What a turn needs of a session (`sessions.Session`)."""

    id: str
    agent: Any
    # The version of the stored state its agent holds: 0 none, -1 untrusted.
    stored: int
    # What the hosting's last save converted of its context (`save_state`).
    saved: list[Any]
    # Its context's messages as the store has them (its last save or load).
    context: list[bytes]
    publish: Any
    # Kept in this process alone, even with a durable store (`sessions.Session`).
    local: bool
    # The reply running in it on this replica, if one does (`replies.Reply`).
    reply: Any


__all__ = ["Keeper"]

logger = logging.getLogger("agentscope_proto.agents")

# The first and the longest wait between two tries for a busy session's
# lease (its holder, told, gives an idle one up in about a round trip).
_FIRST_TRY_S, _LAST_TRY_S = 0.001, 0.2
# The first and the longest wait before listening again to the store's notices.
_FIRST_LISTEN_S, _LAST_LISTEN_S = 0.1, 5.0
# How long a save may wait for other sessions' saves to go with it (one
# write to the store and one wake-up of it for several): the store's calls
# wait so only while they come together anyway (`_redis.ScriptCalls`), so a
# lone caller's save goes at once. Measured at 16 callers (bench/NOTES.md,
# "Sessions in Redis, 2026-12-06 (midday)"): saves sent at once, 1.6 a
# write; waiting up to 1 ms, 1.9; 2 ms, 2.3 (each a p50 up to that much later).
_GATHER_MS = 1.0


class Keeper:
    """Takes sessions' turns on a state store (see the module doc)."""

    def __init__(self, store: StateStore, hosting: Hosting, config: AgentConfig) -> None:
        self.store = store
        self._hosting = hosting
        # This replica's token: leases name who holds them.
        self._owner = uuid.uuid4().hex
        self._lease_ms = round(config.lease_seconds * 1000)
        # A lease held idle lasts as long as a call's; a call within its
        # first third goes on it with the margin a fresh lease has at its
        # first renewal (two thirds of it for the loop's stalls).
        self._hold_ms = self._lease_ms
        self._idle_ms = round(config.session_idle_seconds * 1000)
        # Set as the server stops with replies running (`Sessions.hand_over`):
        # calls end without saving, their replies left to other replicas.
        self.handing_over = False
        # Leases held idle here: session id -> (until when, on this
        # process's clock, the state version saved with it).
        self._held: dict[str, tuple[float, int]] = {}
        # Sessions in a call's turn here, and those of them another wants.
        self._turns: dict[str, Session] = {}
        self._wanted: set[str] = set()
        # Leases are held idle only while this replica hears its notices
        # (else another would wait out the hold), and until it stops.
        self._listener: asyncio.Task[None] | None = None
        self._listening = False
        self._holding = True
        self._giving_up: set[asyncio.Task[None]] = set()

    @property
    def durable(self) -> bool:
        """Whether sessions live in the store (else in this process alone)."""
        return self.store.durable

    def holder(self, session: Session) -> Holder | None:
        """Who writes for the call in `session`'s turn here (None: none is,
        or sessions do not live in the store): its writes are fenced by it."""
        if self._turns.get(session.id) is not session:
            return None
        return Holder(self._owner, session.stored)

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
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen())
        held = self._take_held(session)
        self._turns[session.id] = session
        released = False
        try:
            if held is None:
                await self._refresh(session, await self._lease(session.id))
                first_renewal = self._lease_ms / 3000
            else:  # held idle since this replica's last save: the state is its own
                first_renewal = held - self._lease_ms * 2 / 3000
            renewing = _Renewing(self._renew(session), first_renewal)
            try:
                yield
            finally:
                renewing.cancel()  # before the save gives the lease up
                released = await self._save(session, save_by)
        finally:
            del self._turns[session.id]
            self._wanted.discard(session.id)
            if not released:
                await self.store.release(session.id, self._owner)

    def _take_held(self, session: Session) -> float | None:
        """The time left (s) on the lease this replica holds idle on
        `session`, if its call can go on it (two thirds of a lease left, and
        its agent holds the state saved with it); else None (the lease must
        be taken: `acquire` takes an idle one of this replica's back)."""
        held = self._held.pop(session.id, None)
        if held is None:
            return None
        until, version = held
        left = until - time.monotonic()
        if version != session.stored or left < self._lease_ms * 2 / 3000:
            return None
        return left

    async def _listen(self) -> None:
        """Hear the store's notices about this replica's sessions, again
        after a failure, for as long as the keeper runs."""
        wait = _FIRST_LISTEN_S
        while True:
            try:
                async for notice, session_id in self.store.notices(self._owner):
                    self._heard(notice, session_id)
                    wait = _FIRST_LISTEN_S
            except AgentScopeProtoError as exc:
                logger.warning("the state store's notices stopped: %s", exc)
            finally:
                self._listening = False
                self._give_up_held()  # nobody could tell this replica they wait
            await asyncio.sleep(wait)
            wait = min(wait * 2, _LAST_LISTEN_S)

    def _heard(self, notice: Notice, session_id: str) -> None:
        if notice is Notice.LISTENING:
            self._listening = True
        elif session_id in self._turns:
            if notice is Notice.WANTED:
                self._wanted.add(session_id)  # given up as the call ends
            elif (reply := self._turns[session_id].reply) is not None:
                reply.interrupt()
        elif notice is Notice.WANTED and self._held.pop(session_id, None) is not None:
            self._give_up(session_id)

    def _give_up(self, session_id: str) -> None:
        """Give the idle lease on `session_id` up (it is no longer in `_held`:
        a call beginning meanwhile takes the lease as any other would)."""

        async def give_up() -> None:
            try:
                await self.store.release(session_id, self._owner, only_idle=True)
            except AgentScopeProtoError as exc:  # it runs out within its hold
                # (DEBUG: with the store down, one line per session held.)
                logger.debug("session %r: giving its lease up failed: %s", session_id, exc)

        task = asyncio.create_task(give_up())
        self._giving_up.add(task)
        task.add_done_callback(self._giving_up.discard)

    def _give_up_held(self) -> None:
        held, self._held = self._held, {}
        for session_id in held:
            self._give_up(session_id)

    async def drain(self) -> None:
        """Hold no lease idle from now on, and give those held up (the
        server stops: other replicas take its sessions at once)."""
        self._holding = False
        self._give_up_held()
        await asyncio.gather(*self._giving_up, return_exceptions=True)

    async def close(self) -> None:
        """`drain`, and stop hearing the store's notices."""
        await self.drain()
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)

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
        holder = Holder(self._owner, session.stored)
        while True:
            try:
                renewed = await self.store.renew(session.id, holder, self._lease_ms)
            except AgentScopeProtoError as exc:
                logger.warning("session %r: renewing its lease failed: %s", session.id, exc)
                await asyncio.sleep(self._lease_ms / 3000)
                continue
            if renewed is not Renewed.HELD and session.reply is not None:
                # Asked on another replica; or the call can no longer write
                # anything (its reply goes on from its log: resumed, taken over).
                session.reply.interrupt()
            if renewed is Renewed.LOST:
                logger.warning(
                    "session %r: its lease ran out while a call ran, and another replica "
                    "took the session; this call writes nothing more",
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
        hold = self._listening and self._holding and session.id not in self._wanted
        save = Save(
            Holder(self._owner, session.stored),
            saved.rest.SerializeToString(),
            self._idle_ms,
            self._hold_ms if hold else 0,
            kept,
            saved.context[kept:],
            _GATHER_MS,
        )
        save_to = save_by or partial(self.store.save, session.id)
        sent = time.monotonic()  # the hold ends after this, in the store
        try:
            version = await save_to(save)
        except LeaseLost:
            version = None
        if version is None:
            logger.warning(
                "session %r: this call's state is not saved (its lease was lost, or the store "
                "failed while its reply ran)",
                session.id,
            )
            session.stored = -1
            return False
        session.stored, session.context = version, saved.context
        if save.hold_ms and session.id in self._wanted:
            self._give_up(session.id)  # asked for while the save was on its way
        elif save.hold_ms:
            self._held[session.id] = (sent + save.hold_ms / 1000, version)
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
    objects, told by `is` without reading them: under load they are cold)."""
    kept = 0
    for old, new in zip(stored, context, strict=False):
        if old is not new and old != new:
            break
        kept += 1
    return kept
