"""A reply's responses: made from what the agent gives, logged with their
cursors, read live by the reply's caller or taken up later by `Resume`.

The reply's task (`sessions.py`) puts the agent's items (events, then the
reply's message, or its error) in a queue and awaits nothing else, so that
an interrupt lands inside the agent. A recorder task of its own (`record`)
turns them into `ReplyResponse`s (`_Ending` marks the last one `done`),
appends each batch to the reply's log in the state store (`ReplyLog`),
where every response gets its cursor, and hands the batch to the caller
(`Reply`). The log is written whether anyone reads or not: a caller whose
connection dropped, on this replica or another, resumes from the last
cursor it had (`ReplyLog.read`) and gets every response after it, each once.

With a durable store the log also keeps what another replica needs to take
the reply over if this one dies (`Mark`, `ReplyLog.taken`): the reply's
request first, and a checkpoint of the agent's state at the end of each
model call that asked for tools, which the agent does not go on from until
it is logged (nor from a tool's result), so that a tool logged as run is
never run again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from .. import _json
from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.agent.v1 import events_pb2 as pb
from .._generated.agentscope.agent.v1 import state_pb2
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..errors import (
    AgentReplyError,
    AgentScopeProtoError,
    MessageFormatError,
    ReplyNotFoundError,
    StateUnavailableError,
)
from ..events import ASKING_EVENTS, event_reply_id
from .hosting import Taken, failures
from .state import StateStore
from .state.store import Entry, Holder, LeaseLost, Save

__all__ = ["ASKS", "END", "QUIET", "Failed", "Mark", "Reply", "ReplyLog", "record", "reply_id_of"]

logger = logging.getLogger("agentscope_proto.agents")

# The events a reply asks its caller with, and can end with besides its end.
ASKS = ASKING_EVENTS
_LAST = ASKS | {"reply_end"}
# The end of a reply's items; QUIET: of a reply that had none to give (one
# taken over elsewhere meanwhile), which logs nothing.
END: Any = object()
QUIET: Any = object()
# A log entry: a response's bytes, or the reply's error (JSON) after its last;
# or a `Mark`: the reply's request (its first entry), a checkpoint.
_RESPONSE, _ERROR = b"R", b"E"
INPUTS, CHECKPOINT = b"I", b"S"
# How long one read of a log waits for more, and how many empty reads with
# no replica running the session tell that the one that ran it is gone.
_WAIT_MS = 2000
_GONE_AFTER = 2
# The first and the longest wait between two looks for a starting reply's log.
_FIRST_LOOK_S, _LAST_LOOK_S = 0.002, 0.05


class Failed:
    """The reply task's error, for the caller to raise."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


class Mark:
    """A log entry that is no response (`kind`: `INPUTS`, `CHECKPOINT`; None:
    no entry), and `written`, done once the batch it came in is logged (or
    could not be): what the reply task waits for before it lets the agent
    go on. A mark with a `save` (the session's, at the end of the reply's
    turn) has it made with the batch, in one step, and `written` gives the
    save's version (None: not made, the log having failed before;
    `LeaseLost`: another replica took the session)."""

    __slots__ = ("data", "kind", "save", "written")

    def __init__(self, kind: bytes | None, data: bytes = b"", save: Save | None = None) -> None:
        self.kind = kind
        self.data = data
        self.save = save
        self.written: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()

    def done(self, version: int | None = None) -> None:
        if not self.written.done():
            self.written.set_result(version)


class ReplyLog:
    """Replies' logs in the state store, and their cursors: a position in
    the store's log and a tag of the reply, so that a cursor of another
    reply is refused rather than read as a place in this one."""

    def __init__(self, store: StateStore, keep_seconds: float) -> None:
        self._store = store
        self._keep_ms = round(keep_seconds * 1000)

    @staticmethod
    def cursor(reply_id: str, position: str) -> str:
        return f"{position}.{_tag(reply_id)}"

    @staticmethod
    def position(reply_id: str, cursor: str) -> str:
        """The log position `cursor` names ("" for none), or
        `MessageFormatError` naming `after`."""
        if not cursor:
            return ""
        position, _, tag = cursor.rpartition(".")
        if not position or tag != _tag(reply_id):
            raise MessageFormatError("after", f"{cursor[:80]!r} is no cursor of reply {reply_id!r}")
        return position

    async def write(
        self,
        session_id: str,
        reply_id: str,
        batch: list[service_pb.ReplyResponse | Mark],
        error: Exception | None,
        holder: Holder | None = None,
        save: Save | None = None,
    ) -> int | None:
        """Append `batch` (and the reply's error) to the reply's log, fenced by
        `holder`, each response's cursor set, and make `save` with it: its
        version (`LeaseLost`: nothing written)."""
        logged: list[service_pb.ReplyResponse | Mark] = []
        entries = []
        for item in batch:
            if isinstance(item, Mark):
                if item.kind:
                    logged.append(item)
                    entries.append(item.kind + item.data)
            else:
                logged.append(item)
                entries.append(_RESPONSE + item.SerializeToString())
        if error is not None:
            entries.append(_ERROR + _error_entry(error))
        positions, version = await self._store.append(
            session_id, reply_id, entries, self._keep_ms, holder, save
        )
        for item, position in zip(logged, positions, strict=False):
            if isinstance(item, service_pb.ReplyResponse):
                item.cursor = self.cursor(reply_id, position)
        return version

    async def save(self, session_id: str, save: Save) -> int:
        """Make `save` alone (a reply with nothing more to log)."""
        return await self._store.save(session_id, save)

    async def taken(self, session_id: str, reply_id: str) -> Taken | None:
        """What taking the reply over needs (`Taken`); None if its log ended
        it (or holds no request: not a reply another replica can take). A
        reply that asked and was answered is one log of two calls, each
        beginning with its request: the last call's part is what counts."""
        logged: state_pb2.LoggedReply | None = None
        checkpoint: state_pb2.SessionState | None = None
        events: list[pb.AgentEvent] = []
        since = 0  # where the last checkpoint's model call starts in `events`
        ended = False
        async for entry in self._entries(session_id, reply_id):
            kind, data = entry.data[:1], entry.data[1:]
            if kind == INPUTS:
                logged = state_pb2.LoggedReply.FromString(data)
                checkpoint, events, since, ended = None, [], 0, False
            elif kind == _ERROR:
                ended = True
            elif kind == CHECKPOINT:
                checkpoint = state_pb2.SessionState.FromString(data)
                since = _model_call_start(events)
            elif kind == _RESPONSE:
                response = service_pb.ReplyResponse.FromString(data)
                ended = ended or response.done
                if response.HasField("event"):
                    events.append(response.event)
        if logged is None or ended:
            return None
        return Taken(reply_id, logged.request, logged.state_version, checkpoint, events[since:])

    async def _entries(self, session_id: str, reply_id: str) -> AsyncIterator[Entry]:
        position = ""
        while entries := await self._store.read(session_id, reply_id, position, 0):
            for entry in entries:
                yield entry
            position = entries[-1].position

    async def read(
        self,
        session_id: str,
        reply_id: str,
        after: str,
        running: Callable[[], Awaitable[bool]],
        take_over: Callable[[], Awaitable[bool]],
        *,
        started: bool = False,
    ) -> AsyncIterator[service_pb.ReplyResponse]:
        """The reply's responses after the cursor `after`, then the live rest
        up to its `done` one (and its error, raised); `running` says whether
        a replica still runs a call in the session, `take_over` starts the
        reply's rest here when none does (whether it could); `started`: the
        reply is starting, its log may be there only once it is."""
        position = self.position(reply_id, after)
        if started:
            await self._until_logged(session_id, reply_id, running)
        idle = 0
        # A caller that had the end (its connection dropped after it) hears
        # at once that nothing follows, or the reply's error.
        wait_ms = 0 if position else _WAIT_MS
        # The log's last entry ends the reply: what it holds after `position`
        # is read at once (entries may have come since the read that found
        # none), and nothing more is waited for.
        ended = False
        while True:
            entries = await self._store.read(
                session_id, reply_id, position, 0 if ended else wait_ms
            )
            if entries is None:
                raise ReplyNotFoundError(
                    "reply_id",
                    f"no reply {reply_id!r} in session {session_id!r} "
                    "(it never ran, or its log expired)",
                )
            if not entries and ended:
                return
            if not entries and not wait_ms:
                wait_ms = _WAIT_MS
                ended = await self._ended(session_id, reply_id)
                continue
            wait_ms = _WAIT_MS
            if not entries:
                idle = 0 if await running() else idle + 1
                if idle and await self._ended(session_id, reply_id):
                    ended = True  # (it asked, and waits for an answer)
                    continue
                if idle >= _GONE_AFTER and await take_over():
                    idle = 0  # its rest comes into the log
                elif idle >= _GONE_AFTER:
                    raise AgentReplyError(
                        "internal",
                        "the server running this reply stopped before it ended; the session "
                        "goes on from its last saved state",
                    )
                continue
            for entry in entries:
                kind, data = entry.data[:1], entry.data[1:]
                if kind == _ERROR:
                    raise _error(data)
                if kind != _RESPONSE:
                    continue  # a `Mark`: for a replica taking the reply over
                response = service_pb.ReplyResponse.FromString(data)
                response.cursor = self.cursor(reply_id, entry.position)
                yield response
                if response.done:
                    await self._raise_after(session_id, reply_id, entry.position)
                    return
            position = entries[-1].position

    async def exists(self, session_id: str, reply_id: str) -> bool:
        """Whether the reply has a log (it ran, or runs, on some replica)."""
        return await self._store.last(session_id, reply_id) is not None

    async def _until_logged(
        self, session_id: str, reply_id: str, running: Callable[[], Awaitable[bool]]
    ) -> None:
        """Wait until a starting reply has a log, while a call runs in its
        session (it, or one before it) or for a read's wait without one."""
        wait, since = _FIRST_LOOK_S, asyncio.get_running_loop().time()
        while not await self.exists(session_id, reply_id):
            now = asyncio.get_running_loop().time()
            if await running():
                since = now
            elif now - since > _WAIT_MS / 1000:
                return  # it never began: the read says so
            await asyncio.sleep(wait)
            wait = min(wait * 2, _LAST_LOOK_S)

    async def _ended(self, session_id: str, reply_id: str) -> bool:
        """Whether the log's last entry ends the reply (a `done` response, or
        its error)."""
        last = await self._store.last(session_id, reply_id)
        if last is None:
            return False
        kind, data = last.data[:1], last.data[1:]
        return kind == _ERROR or (
            kind == _RESPONSE and service_pb.ReplyResponse.FromString(data).done
        )

    async def _raise_after(self, session_id: str, reply_id: str, position: str) -> None:
        """Raise the reply's error, if it failed (written with its last response)."""
        entries = await self._store.read(session_id, reply_id, position, 0) or []
        if entries and entries[0].data[:1] == _ERROR:
            raise _error(entries[0].data[1:])


def _model_call_start(events: list[pb.AgentEvent]) -> int:
    """Where the last model call of `events` starts (0: none)."""
    for index in range(len(events) - 1, -1, -1):
        if events[index].WhichOneof("event") == "model_call_start":
            return index
    return 0


def _tag(reply_id: str) -> str:
    return hashlib.blake2b(reply_id.encode(), digest_size=4).hexdigest()


def _error_entry(error: Exception) -> bytes:
    """A reply's error as its log keeps it: a failed reply's type and text
    (any other error, which no caller should see the text of, as internal)."""
    if not isinstance(error, AgentReplyError):
        error = AgentReplyError("internal", failures.MESSAGES["internal"])
    return _json.dumps({"error_type": error.error_type, "message": error.message}).encode()


def _error(data: bytes) -> AgentReplyError:
    kept = _json.loads(data.decode(), "error")
    return AgentReplyError(kept["error_type"], kept["message"])


def reply_id_of(batch: Sequence[service_pb.ReplyResponse | Mark]) -> str:
    """The reply's id, as its events name it."""
    for response in batch:
        if not isinstance(response, Mark):
            reply_id = event_reply_id(response.event)
            if reply_id:
                return reply_id
    return ""


async def record(
    items: asyncio.Queue[Any],
    out: asyncio.Queue[Any],
    log: ReplyLog | None,
    session_id: str,
    reply_id: str = "",
    holder: Callable[[], Holder | None] = lambda: None,
) -> None:
    """Turn the reply task's items into responses, batch by batch (what
    came while the last batch was logged), log each batch and hand its
    responses to `out`, then the end (or the error). A `Mark` is logged in
    its place once the reply's id is known (its first event names it).

    The writes are fenced by `holder` (the reply's call's, while its turn
    lasts): the `done` response waits for the turn's save and goes with it
    in one step (a caller never hears of a reply's end whose state was not
    saved); a write refused (`LeaseLost`: another replica took the session)
    ends the caller's reply with UNAVAILABLE, to resume from the log, and
    nothing more is logged or handed on."""
    ending = _Ending()
    held: list[service_pb.ReplyResponse | Mark] = []  # marks before the reply's id
    waiting: list[service_pb.ReplyResponse | Mark] = []  # the end, until the save
    lost = False
    while True:
        batch, last = _batch(await items.get(), items, ending)
        error = last.error if isinstance(last, Failed) else None
        reply_id = reply_id or reply_id_of(batch)
        saving = next((i for i in batch if isinstance(i, Mark) and i.save is not None), None)
        if held and (reply_id or last is not None or saving is not None):
            batch, held = [*held, *batch], []
        batch, waiting = [*waiting, *batch], []
        writer = holder()
        if writer is not None and saving is None and last is None:
            batch, waiting = _until_saved(batch)
        version: int | None = None
        try:
            if lost:
                if saving is not None:
                    raise LeaseLost(session_id)
            elif reply_id and log is not None and (batch or error is not None):
                try:
                    save = saving.save if saving is not None else None
                    version = await log.write(session_id, reply_id, batch, error, writer, save)
                except AgentScopeProtoError as exc:  # (not `LeaseLost`: handled below)
                    logger.warning("reply %r: its log could not be written: %s", reply_id, exc)
                    log = None  # the caller still gets it, live
                    if saving is not None:
                        raise
            elif saving is not None and saving.save is not None and log is not None:
                version = await log.save(session_id, saving.save)
            elif not reply_id and last is None:
                held.extend(item for item in batch if isinstance(item, Mark))
        except LeaseLost as exc:
            if saving is not None:
                saving.written.set_exception(exc)
            if not lost:
                lost = True
                out.put_nowait(Failed(_lost(session_id)))
        except AgentScopeProtoError as exc:
            if saving is not None:  # the turn's save failed: its keeper says so
                saving.written.set_exception(exc)
        responses = []
        for item in batch:
            if isinstance(item, Mark):
                if item not in held:
                    item.done(version if item is saving else None)
            else:
                responses.append(item)
        if responses and not lost:
            out.put_nowait(responses)
        if last is not None:
            if not lost:
                out.put_nowait(last)
            return


def _until_saved(
    batch: list[service_pb.ReplyResponse | Mark],
) -> tuple[list[service_pb.ReplyResponse | Mark], list[service_pb.ReplyResponse | Mark]]:
    """`batch` up to its `done` response, and from it on (held for the save)."""
    for at, item in enumerate(batch):
        if not isinstance(item, Mark) and item.done:
            return batch[:at], batch[at:]
    return batch, []


def _lost(session_id: str) -> StateUnavailableError:
    return StateUnavailableError(
        f"session {session_id!r}: the replica running this reply lost the session's lease "
        "to another; resume the reply (its log goes on there)"
    )


def _batch(
    item: Any, items: asyncio.Queue[Any], ending: _Ending
) -> tuple[list[service_pb.ReplyResponse | Mark], Any]:
    """The responses (and marks) of `item` and of what else is ready, and
    the end (END or a `Failed`) if it came."""
    batch: list[service_pb.ReplyResponse | Mark] = []
    while True:
        if item is QUIET:
            return batch, END
        if item is END:
            return [*batch, *ending.close()], END
        if isinstance(item, Failed):
            return [*batch, *ending.close(failed=True)], item
        if isinstance(item, Mark):
            batch.append(item)  # (after an event held back, see `_Ending`)
        else:
            ending.feed(item, batch)
        if items.empty():
            return batch, None
        item = items.get_nowait()


class Reply:
    """A running reply: its responses, and its interrupt."""

    __slots__ = ("_out", "_read", "_task", "keep_running")

    def __init__(
        self, task: asyncio.Task[None], out: asyncio.Queue[Any], *, keep_running: bool = False
    ) -> None:
        self._task = task
        self._out = out
        self._read: AsyncIterator[service_pb.ReplyResponse] | None = None
        # Whether the reply goes on when its caller stops reading.
        self.keep_running = keep_running

    def read_from(self, log: AsyncIterator[service_pb.ReplyResponse]) -> None:
        """Give the caller the reply's `log` rather than what this task makes
        (a named reply: its log may be another replica's making)."""
        self._read = log

    def interrupt(self) -> None:
        """Interrupt the reply as AgentScope's own interrupt does (a no-op
        once it ended): the agent closes it, and `batches` goes on with what
        it says until then."""
        if not self._task.done():
            self._task.cancel()

    async def responses(self) -> AsyncIterator[service_pb.ReplyResponse]:
        """The reply's responses one by one; leaving early (the caller is
        gone) interrupts it, unless it is to keep running."""
        try:
            if self._read is not None:
                async for response in self._read:
                    yield response
            else:
                async for batch in self.batches():
                    for response in batch:
                        yield response
        finally:
            if not self.keep_running:
                self.interrupt()  # the task finishes the reply alone

    async def batches(self) -> AsyncIterator[list[service_pb.ReplyResponse]]:
        """The reply's responses in batches of what came while the last
        batch was handled: each event as soon as it comes, and a caller
        that cannot keep up gets them together. The reply's error, if any,
        is raised after the responses before it."""
        while True:
            item = await self._out.get()
            if item is END:
                return
            if isinstance(item, Failed):
                raise item.error
            yield item


class _Ending:
    """Which response is the last: each event goes out as it comes but one
    that may end the reply, which is held until the next item."""

    __slots__ = ("done", "held")

    def __init__(self) -> None:
        self.held: pb.AgentEvent | None = None
        self.done = False

    def feed(self, item: pb.AgentEvent | Msg, out: list[service_pb.ReplyResponse | Mark]) -> None:
        if self.done:
            return  # nothing follows the reply's message
        if isinstance(item, Msg):
            out.append(_response(self.held, done=True, msg=item))
            self.held, self.done = None, True
            return
        if self.held is not None:
            out.append(_response(self.held))
            self.held = None
        if item.WhichOneof("event") in _LAST:
            self.held = item
        else:
            out.append(_response(item))

    def close(self, *, failed: bool = False) -> list[service_pb.ReplyResponse]:
        """The last response of items that ended without the reply's
        message: the held event (an agent that gives no message marks its
        last event `done`, or a `done` with none), none for a failure
        that held none."""
        if self.done or (failed and self.held is None):
            return []
        self.done = True
        return [_response(self.held, done=True)]


def _response(
    event: pb.AgentEvent | None, *, done: bool = False, msg: Msg | None = None
) -> service_pb.ReplyResponse:
    response = service_pb.ReplyResponse(done=done)
    if event is not None:
        response.event.CopyFrom(event)
    if msg is not None:
        response.msg.CopyFrom(msg)
    return response
