"""Sessions: one agent (one agent state) per session id, and its replies.

A session's agent comes from the operator's factory, called once when the
session is opened; its replies and observations run one at a time, in the
order they arrive (a large call, or one with media to fetch, is read in a
worker thread, so a small call could finish reading before a larger one that
came first: each waits in its session's line, `_Place`, until those before
it took their turn). Sessions
are bounded (`AgentConfig.max_sessions`) and dropped after
`session_idle_seconds` without a call.

Each reply runs in a task of its own, which does nothing but pull the agent's
reply: so when the caller goes away (cancel, deadline, disconnect) the task
is cancelled inside the agent, where it awaits, exactly as AgentScope's own
interrupt cancels a reply task, and the agent closes its reply (interrupted
tool results, its interruption message) before the session takes its next
call. The caller reads the task's items from a queue and gets them as
`ReplyResponse`s, the last one `done` with the reply's message (`Reply`; an
A2A task reads them in batches of what is ready, and interrupts the reply
while it reads on: `start`, `Reply`).

A hub topic's session (`topic.py`) is one like any other, except that it is
never dropped and that each reply it finishes is published to the topic
before its caller hears that it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.agent.v1 import events_pb2 as events_pb
from .._generated.agentscope.agent.v1 import state_pb2
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..errors import AgentReplyError, LimitExceededError, MessageFormatError, SessionStateError
from .config import AgentConfig
from .hosting import Checkpoint, Hosting, Item, ReplyInputs, failures
from .keeper import Keeper
from .media import OffLoop, screen_msgs, screen_request
from .replies import (
    ASKS,
    CHECKPOINT,
    END,
    INPUTS,
    QUIET,
    Failed,
    Mark,
    Reply,
    ReplyLog,
    record,
)
from .state import MemoryStateStore, StateStore
from .state.store import Save

__all__ = ["Reply", "Session", "Sessions", "check_session_id"]

AgentFactory = Callable[[], Any]


class _Run(NamedTuple):
    """What a reply's turn runs: the items, and the request to log first
    (None: the reply's log has it already, as a reply taken over does)."""

    items: AsyncIterator[Item | Checkpoint]
    request: service_pb.ReplyRequest | None


# What a reply's turn runs, found in the turn (None: nothing: it ran elsewhere).
_Source = Callable[["Session"], Awaitable[_Run | None]]
logger = logging.getLogger("agentscope_proto.agents")
T = TypeVar("T")
_MAX_ID = 128
# A call read on the event loop (`_read_call`) holds at most these many
# messages and bytes (text costs little to read: 256 KiB in 0.4 ms).
_LOOP_MSGS = 8
_LOOP_BYTES = 256 * 1024


class Session:
    """One caller's agent: its id, the agent, and its turn lock."""

    __slots__ = (
        "agent",
        "busy",
        "context",
        "id",
        "local",
        "lock",
        "publish",
        "reply",
        "saved",
        "stored",
        "turned",
        "used",
    )

    def __init__(self, session_id: str, agent: Any) -> None:
        self.id = session_id
        self.agent = agent
        self.lock = asyncio.Lock()
        # Notified (under the lock) whenever a reply of the session ends.
        self.turned = asyncio.Condition(self.lock)
        self.busy = 0  # calls running or waiting for the lock
        self.used = time.monotonic()
        # The version of the stored state its agent holds (`keeper.py`): 0
        # none, -1 none it can be trusted to hold.
        self.stored = 0
        # What the hosting's last save converted of its context (its own
        # record, `save_state`), and the context as the store has it (`keeper.py`).
        self.saved: list[Any] = []
        self.context: list[bytes] = []
        # The reply running in the session, if one does.
        self.reply: Reply | None = None
        # A topic's session: where each reply it finishes goes (it is never dropped).
        self.publish: Callable[[Msg], Awaitable[None]] | None = None
        # Kept in this process alone even with a durable store: a topic's
        # session whose topic is this process's own (`topic.py`).
        self.local = False


async def new_agent(factory: AgentFactory) -> Any:
    """A new agent from the operator's factory (which may be async)."""
    agent = factory()
    if inspect.isawaitable(agent):
        agent = await agent
    return agent


async def _read_call(
    work: Callable[[threading.Event, bool], T], msgs: Sequence[Msg], size: int | None = None
) -> T:
    """`work`, a call's screen and read of `msgs` (`size`: the call's bytes,
    if more than its messages'), given an event set once the call is gone
    and whether it runs on the event loop. A small call (at most `_LOOP_MSGS`
    messages, `LOOP_BLOCKS` blocks and `_LOOP_BYTES`, no media to fetch) is
    read at once: a worker thread's hop cost a served echo agent 10-15 % of
    its replies a second. Others are read off the loop (`_off_loop`)."""
    few = len(msgs) <= _LOOP_MSGS  # before their sizes: a large call may hold thousands
    if few and (size or sum(msg.ByteSize() for msg in msgs)) <= _LOOP_BYTES:
        with contextlib.suppress(OffLoop):
            return work(threading.Event(), True)
    return await _off_loop(work)


async def _off_loop(work: Callable[[threading.Event, bool], T]) -> T:
    """`work` in a worker thread, so that converting a large call (about 35
    µs a message or block) or fetching its media holds no other session's
    call; the event it is given is set once the call is gone, and it stops
    at its next check."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop, False)
    finally:
        stop.set()


def check_session_id(session_id: str) -> None:
    """Refuse a session id a client may not use (before any session is looked up)."""
    if len(session_id) > _MAX_ID or not session_id.isprintable():
        raise MessageFormatError("session_id", f"expected at most {_MAX_ID} printable characters")


def _check_reply_id(reply_id: str, field: str) -> None:
    if not reply_id or len(reply_id) > _MAX_ID or not reply_id.isprintable():
        raise MessageFormatError(field, f"expected 1 to {_MAX_ID} printable characters")


class _Place:
    """A call's place in its session's line, taken as it arrives: it takes
    the session's turn (queues on its lock) only after every call that came
    before it did, or went away."""

    __slots__ = ("_ahead", "passed")

    def __init__(self, ahead: asyncio.Future[None] | None) -> None:
        self._ahead = ahead
        # Done once this call queued for the turn (or left): the next may go.
        self.passed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def reached(self) -> None:
        """Wait until the calls ahead have queued for the turn."""
        if self._ahead is not None:
            await asyncio.shield(self._ahead)

    def leave(self) -> None:
        """Let the next call go (idempotent). A call that leaves before its
        place was reached (refused, cancelled) passes on only once the one
        ahead of it has: leaving never lets anyone jump the line."""
        if self.passed.done():
            return
        if self._ahead is None or self._ahead.done():
            self.passed.set_result(None)
        else:
            self._ahead.add_done_callback(lambda _: self.leave())


class Sessions:
    """The server's sessions and the replies running in them."""

    def __init__(
        self,
        factory: AgentFactory,
        hosting: Hosting,
        config: AgentConfig,
        store: StateStore | None = None,
    ) -> None:
        self.hosting = hosting
        # Where sessions live between calls (`memory`: here, as they always did).
        store = store or MemoryStateStore(config.reply_log_mb << 20)
        self.keeper = Keeper(store, hosting, config)
        self.log = ReplyLog(self.keeper.store, config.reply_log_seconds)
        self._factory = factory
        self._config = config
        # Least recently used first.
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._opening: dict[str, asyncio.Future[Session]] = {}
        # Per session id: the last call to arrive's `_Place.passed`.
        self._lines: dict[str, asyncio.Future[None]] = {}
        # The reply tasks (asyncio keeps only weak references to tasks).
        self.running: set[asyncio.Task[None]] = set()
        # Their recorders (`replies.record`), which outlive them by a batch.
        self._recorders: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._sessions)

    async def drain(self) -> None:
        """As the server begins to stop: the leases held idle are given up
        (`Keeper.drain`), and with a durable store every reply running here
        goes on when its call ends (the server ends the calls after their
        grace), to be handed over rather than interrupted (`hand_over`)."""
        await self.keeper.drain()
        if self.keeper.durable:
            for session in self._sessions.values():
                if session.reply is not None:
                    session.reply.keep_running = True

    async def hand_over(self) -> None:
        """Leave the replies still running to other replicas, as the server
        stops (its calls had their grace): with a durable store, their logs
        stop where they are, unended, their sessions' states stay as last
        saved and their leases are given up, so that a caller resuming on
        another replica has the reply taken over there at once. With the
        `memory` store nothing outlives the process: they are interrupted."""
        if self.keeper.durable:
            self.keeper.handing_over = True
            for recorder in self._recorders:
                recorder.cancel()
        for task in self.running:
            task.cancel()
        await asyncio.gather(*self.running, *self._recorders, return_exceptions=True)
        await self.keeper.close()

    @property
    def config(self) -> AgentConfig:
        """The limits the sessions keep."""
        return self._config

    async def begin(self, request: service_pb.ReplyRequest) -> Reply:
        """A caller's Reply, started: read (`read_inputs`) before any session
        sees it, then started in its session (made now unless it answers a
        question) when the calls that came before it have taken their turn."""
        async with self._line(request.session_id) as place:
            if request.reply_id:
                _check_reply_id(request.reply_id, "reply_id")
                if request.WhichOneof("answer") is not None:
                    raise MessageFormatError(
                        "reply_id", "an answer goes on with the reply that asked, and its id"
                    )
            inputs = await self.read_inputs(request)
            if request.WhichOneof("answer") == "user_interrupt" and not self._interrupt(
                request.session_id
            ):
                # Before its place (it waits for nothing): here, or where it runs.
                await self.keeper.interrupt(request.session_id)
            await place.reached()
            session = await self.open(request.session_id, create=inputs.answer is None)
            # Its task, created now, queues on the session's lock in its first
            # step: before the next call wakes (asyncio runs callbacks in the
            # order they were scheduled, and `place` passes on only as this
            # block exits).
            if request.reply_id:
                return self._named(session, inputs, request)
            return self.start(session, inputs, keep_running=request.keep_running, request=request)

    def _named(
        self, session: Session, inputs: ReplyInputs, request: service_pb.ReplyRequest
    ) -> Reply:
        """A reply its caller named (`ReplyRequest.reply_id`): run in the
        session's turn unless the session has it already (a retry: what it
        gave, or its rest if its replica died), its caller reading its log."""
        reply_id = request.reply_id

        async def replying(session: Session) -> _Run | None:
            if await self.log.exists(session.id, reply_id):
                return await self._rest_of(session, reply_id)
            self.hosting.check(session.agent, inputs)
            return _Run(self.hosting.reply(session.agent, session.id, inputs), request)

        reply = self._start(
            session, replying, counted=True, keep_running=request.keep_running, reply_id=reply_id
        )
        reply.read_from(self._read(session.id, reply_id, "", started=True))
        return reply

    def _interrupt(self, session_id: str) -> bool:
        """Interrupt the reply running in the session on this replica, if
        one does (a reply kept running after its caller left ends so):
        whether one did."""
        session = self._sessions.get(session_id)
        if session is None or session.reply is None:
            return False
        session.reply.interrupt()
        return True

    async def resume(
        self, request: service_pb.ResumeRequest
    ) -> AsyncIterator[service_pb.ReplyResponse]:
        """The reply's responses after `request.after`, then its live rest
        (`ReplyLog.read`), on whichever replica runs it."""
        check_session_id(request.session_id)
        _check_reply_id(request.reply_id, "reply_id")
        async for response in self._read(request.session_id, request.reply_id, request.after):
            yield response

    def _read(
        self, session_id: str, reply_id: str, after: str, *, started: bool = False
    ) -> AsyncIterator[service_pb.ReplyResponse]:
        """The reply's log after `after` (`ReplyLog.read`), the reply taken
        over here if its replica died; `started`: it is starting (its log
        may not be there yet)."""

        async def running() -> bool:
            # A call here (running, or waiting for the session's lease), or
            # on another replica.
            session = self._sessions.get(session_id)
            if session is not None and session.busy > 0:
                return True
            return self.keeper.durable and await self.keeper.store.leased(session_id)

        async def take_over() -> bool:
            return await self._take_over(session_id, reply_id)

        return self.log.read(session_id, reply_id, after, running, take_over, started=started)

    async def _take_over(self, session_id: str, reply_id: str) -> bool:
        """Start the rest of a reply whose replica stopped before it ended
        (its log has no end, and no replica holds its session), here: from
        the last checkpoint its log holds, in the session's turn (a
        replica taking it over first has ended it by the time this one
        has the turn: it starts nothing more). Whether it could be taken
        over (a durable store, and a hosting that can)."""
        if not self.keeper.durable or not self.hosting.can_take_over:
            return False
        session = await self.open(session_id, create=True)

        async def taking(session: Session) -> _Run | None:
            return await self._rest_of(session, reply_id)

        self._start(session, taking, counted=False, keep_running=True, reply_id=reply_id)
        return True

    async def _rest_of(self, session: Session, reply_id: str) -> _Run | None:
        """In the session's turn: the rest of a reply its log has, taken over
        here; None if the log ended it (it ended, or was taken over first)."""
        taken = await self.log.taken(session.id, reply_id)
        if taken is None:
            return None
        if not self.hosting.can_take_over or taken.state_version != session.stored:
            raise AgentReplyError(
                "internal",
                "the server running this reply stopped before it ended, and the session "
                "went on from its last saved state without it",
            )
        logger.warning("session %r: taking reply %r over", session.id, reply_id)
        inputs = self.hosting.read_inputs(taken.request)
        return _Run(self.hosting.take_over(session.agent, session.id, inputs, taken), None)

    async def observe_request(self, request: service_pb.ObserveRequest) -> Session:
        """A caller's Observe, read as `begin` reads a Reply, and observed by
        the session's agent in its turn."""
        async with self._line(request.session_id) as place:
            msgs = await self.read_msgs(request.msgs, "msgs")
            await place.reached()
            session = await self.open(request.session_id, create=True)
            await self.observe(session, msgs, place)
            return session

    @contextlib.asynccontextmanager
    async def _line(self, session_id: str) -> AsyncIterator[_Place]:
        """A place in `session_id`'s line, taken now (a new session, with no
        id yet, has no line: no other call can name it)."""
        place = _Place(self._lines.get(session_id) if session_id else None)
        if session_id:
            self._lines[session_id] = place.passed
            place.passed.add_done_callback(lambda done: self._forget(session_id, done))
        try:
            yield place
        finally:
            place.leave()

    def _forget(self, session_id: str, passed: asyncio.Future[None]) -> None:
        if self._lines.get(session_id) is passed:
            del self._lines[session_id]

    async def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs:
        """A caller's Reply as its agent takes it: counted, its media screened
        (`media.py`), and read by the hosting, which refuses what the agent
        would; before any session sees it."""
        self._count(request.msgs, "msgs")

        def read(stop: threading.Event, on_loop: bool) -> ReplyInputs:
            limit = self._config.max_request_blocks
            screen_request(request, self._config.media, stop, limit, on_loop=on_loop)
            return self.hosting.read_inputs(request)

        if request.WhichOneof("answer") is not None:
            return await _off_loop(read)  # its tool calls are not counted as blocks
        return await _read_call(read, request.msgs, request.ByteSize())

    async def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]:
        """A caller's messages (an Observe's, a topic's) as the agent takes
        them, as `read_inputs` reads a Reply's."""
        self._count(msgs, field)

        def read(stop: threading.Event, on_loop: bool) -> list[Any]:
            limit = self._config.max_request_blocks
            screen_msgs(msgs, field, self._config.media, stop, limit, on_loop=on_loop)
            return self.hosting.read_msgs(msgs, field)

        return await _read_call(read, msgs)

    def _count(self, msgs: Sequence[Msg], field: str) -> None:
        if len(msgs) > self._config.max_request_msgs:
            raise LimitExceededError(
                "max_request_msgs",
                f"{field} holds {len(msgs)} messages; a request may carry at most "
                f"{self._config.max_request_msgs}",
            )

    async def open(self, session_id: str, *, create: bool) -> Session:
        """The session `session_id`, made now if it does not exist and
        `create` allows; an empty id makes a new session with a fresh id."""
        check_session_id(session_id)
        self._evict_idle()
        session = self._sessions.get(session_id) if session_id else None
        if session is not None:
            self._touch(session)
            return session
        pending = self._opening.get(session_id) if session_id else None
        if pending is not None:
            return await asyncio.shield(pending)
        if not create and not (self.keeper.durable and await self.keeper.exists(session_id)):
            raise SessionStateError(
                "session_id", f"no session {session_id!r} (it never existed, or expired)"
            )
        return await self._create(session_id or uuid.uuid4().hex)

    async def _create(self, session_id: str) -> Session:
        if len(self._sessions) + len(self._opening) >= self._config.max_sessions:
            raise LimitExceededError(
                "max_sessions", f"the server holds {self._config.max_sessions} sessions"
            )
        pending: asyncio.Future[Session] = asyncio.get_running_loop().create_future()
        self._opening[session_id] = pending
        try:
            agent = await self._new_agent()
            self.hosting.bind(agent, session_id)
            session = Session(session_id, agent)
            self._sessions[session_id] = session
            pending.set_result(session)
            return session
        except BaseException as exc:
            pending.set_exception(exc)
            pending.exception()  # retrieved: a waiter may not exist
            raise
        finally:
            del self._opening[session_id]

    async def _new_agent(self) -> Any:
        """A session's agent; a factory that fails is named to the caller,
        its error logged here."""
        try:
            return await new_agent(self._factory)
        except BaseException as exc:
            if not failures.by_agent(exc):
                raise
            failures.log_setup(exc)
            raise AgentReplyError("setup", failures.MESSAGES["setup"]) from None

    def _evict_idle(self) -> None:
        """Drop sessions idle past the limit: from the least recently used
        one, until one that is not (a busy session is never dropped)."""
        horizon = time.monotonic() - self._config.session_idle_seconds
        idle = []
        for session in self._sessions.values():
            if session.used > horizon:
                break
            if not session.busy and session.publish is None:
                idle.append(session.id)
        for session_id in idle:
            del self._sessions[session_id]

    async def question(self, session_id: str) -> events_pb.AgentEvent | None:
        """What the session waits for its caller to answer (the event that
        asked it), or None: read from its agent in the session's turn, on
        any replica (for callers that do not keep the question, as AG-UI's
        resumes do not). An unknown session is `SessionStateError`."""
        async with self._line(session_id) as place:
            await place.reached()
            session = await self.open(session_id, create=False)
            async with self._turn(session, place):
                return self.hosting.question(session.agent)

    async def observe(self, session: Session, msgs: list[Any], place: _Place | None = None) -> None:
        """`msgs` observed by the session's agent in its turn (`place`: the
        call's in the session's line, passed on once it queued for the turn)."""
        try:
            async with self._turn(session, place):
                await self.hosting.observe(session.agent, msgs)
        except BaseException as exc:
            if not failures.by_agent(exc):
                raise
            raise failures.contained(exc) from None

    @contextlib.asynccontextmanager
    async def _turn(self, session: Session, place: _Place | None) -> AsyncIterator[None]:
        """A call's turn on `session` (its lock, its lease and stored state),
        busy meanwhile; `place` passed on once the call queued for the lock."""
        session.busy += 1
        try:
            if place is not None:
                place.leave()  # the lock queues this call before anything awaits
            async with session.lock, self.keeper.turn(session):
                yield
        finally:
            session.busy -= 1
            self._touch(session)

    def _touch(self, session: Session) -> None:
        """Mark the session used now (the most recent of all)."""
        session.used = time.monotonic()
        if self._sessions.get(session.id) is session:
            self._sessions.move_to_end(session.id)

    def start(
        self,
        session: Session,
        inputs: ReplyInputs,
        *,
        counted: bool = True,
        keep_running: bool = False,
        request: service_pb.ReplyRequest | None = None,
    ) -> Reply:
        """Start a reply in `session`: it runs in a task of its own, which
        `Reply.interrupt` cancels inside the agent, and a recorder task logs
        its responses (`replies.py`), after its `request` if given (what a
        replica taking the reply over runs it from). A reply not `counted`
        (a topic's own: one at a time) is not held to `max_replies`; one to
        `keep_running` goes on when its caller stops reading."""

        async def replying(session: Session) -> _Run:
            self.hosting.check(session.agent, inputs)
            return _Run(self.hosting.reply(session.agent, session.id, inputs), request)

        return self._start(session, replying, counted=counted, keep_running=keep_running)

    def _start(
        self,
        session: Session,
        source: _Source,
        *,
        counted: bool,
        keep_running: bool,
        reply_id: str = "",
    ) -> Reply:
        """A reply of the items `source` gives in the session's turn (None:
        none, and nothing logged); `reply_id` if known before its events."""
        if counted and len(self.running) >= self._config.max_replies:
            raise LimitExceededError(
                "max_replies", f"{self._config.max_replies} replies are running"
            )
        items: asyncio.Queue[Any] = asyncio.Queue()
        out: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.create_task(self._drive(session, source, items))
        # The recorder's end comes once the task is done, even one cancelled
        # before its first step (a named reply its reader had read whole).
        task.add_done_callback(lambda _: items.put_nowait(END))
        holder = functools.partial(self.keeper.holder, session)
        recorder = asyncio.create_task(record(items, out, self.log, session.id, reply_id, holder))
        self.running.add(task)
        task.add_done_callback(self.running.discard)
        self._recorders.add(recorder)
        recorder.add_done_callback(self._recorders.discard)
        reply = Reply(task, out, keep_running=keep_running)
        session.reply = reply
        task.add_done_callback(lambda _: _forget_reply(session, reply))
        return reply

    async def _drive(
        self,
        session: Session,
        source: _Source,
        items: asyncio.Queue[Any],
    ) -> None:
        """Run one reply into `items`, the request its source gives logged
        first with a durable store (with the state's version the turn
        found: what a replica taking the reply over starts from). It awaits
        nothing but the session's turn and the agent, so a cancellation
        lands inside the agent."""
        session.busy += 1
        quiet = False
        try:
            async with session.lock:
                try:
                    async with self.keeper.turn(session, _logged_save(items)):
                        run = await source(session)
                        if run is None:
                            quiet = True
                        else:
                            if run.request is not None and self.keeper.durable:
                                logged = state_pb2.LoggedReply(request=run.request)
                                logged.state_version = session.stored
                                items.put_nowait(Mark(INPUTS, logged.SerializeToString()))
                            await self._run(session, run.items, items)
                finally:
                    session.turned.notify_all()
        except BaseException as exc:
            if not failures.by_agent(exc):
                raise  # the caller's interrupt
            items.put_nowait(Failed(failures.contained(exc)))
        finally:
            session.busy -= 1
            self._touch(session)
            if quiet:
                items.put_nowait(QUIET)  # ahead of the END the task's end puts

    async def _run(
        self,
        session: Session,
        replying: AsyncIterator[Item | Checkpoint],
        items: asyncio.Queue[Any],
    ) -> None:
        asked = False
        async for item in replying:
            if isinstance(item, Checkpoint):
                await self._checkpoint(session, item, items)
                continue
            if not isinstance(item, Msg):
                asked = item.WhichOneof("event") in ASKS
            elif session.publish is not None and not asked:
                # A topic's reply, finished (a reply that asks is not, yet):
                # on the topic before its caller hears it is done.
                await session.publish(item)
            items.put_nowait(item)

    async def _checkpoint(
        self, session: Session, checkpoint: Checkpoint, items: asyncio.Queue[Any]
    ) -> None:
        """Log what the hosting asks to (with a durable store: the agent's
        state, or only that what came before is logged), and wait until it
        is, before the agent goes on. An interrupt meanwhile is not lost: it
        lands in the agent's next step."""
        if not self.keeper.durable:
            return
        mark = Mark(None)
        if checkpoint.state:
            state = self.hosting.save_state(session.agent, session.saved)
            if state is not None:
                mark = Mark(CHECKPOINT, state.encoded())
        items.put_nowait(mark)
        try:
            await asyncio.shield(mark.written)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.cancel()  # again: inside the agent, at its next await


def _logged_save(items: asyncio.Queue[Any]) -> Callable[[Save], Awaitable[int | None]]:
    """A reply's turn's save, made by its recorder with the reply's last log
    entries (one store call for both)."""

    async def save(save: Save) -> int | None:
        mark = Mark(None, save=save)
        items.put_nowait(mark)
        return await mark.written

    return save


def _forget_reply(session: Session, reply: Reply) -> None:
    if session.reply is reply:
        session.reply = None
