"""A served agent as an A2A 1.0 agent: `serve-agent --a2a-port N
[--a2a-grpc-port M]`, with a2a-sdk's own server parts (docs/a2a.md, "Serving").

- The executor (`AgentExecutor`) runs each A2A task as a reply in the
  session the task's context names: context ids are session ids, so an A2A
  conversation is an AgentService session, with the same agent, limits and
  turn order.
- A task goes submitted, working (the reply started), then completed,
  failed or canceled by how the reply ended, its status message the reply's
  message; a reply that stops to ask its caller leaves the task
  `input-required`, and the next message on that task answers it. CancelTask
  interrupts the reply as a local interrupt would.
- With sessions in Redis (`--state redis://`) the tasks are there too
  (`tasks.py`), and every replica answers for every task: CancelTask of a
  task another replica runs asks that replica to interrupt the reply
  through the store and answers once the task ended; SubscribeToTask gives
  the task as stored, then the updates its reply's log makes after it
  (each update says where in the log it stands: `RESUME_KEY`).
- A caller that asks for the AgentScope extension (the `A2A-Extensions`
  header) gets the reply's message exactly and its events as they come, on
  `working` status updates; others get the reply's text and media.
- The agent card comes from `Describe`; the JSON-RPC and HTTP+JSON bindings
  and the card are served with hypercorn, the gRPC binding by a gRPC server
  of its own, with the server's auth token, TLS and size limit, and over
  HTTP its browser origins (`service/http_guard.py`).

Needs the `a2a` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, cast

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import Event, EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    HTTPAuthSecurityScheme,
    Message,
    MutualTlsSecurityScheme,
    Role,
    SecurityRequirement,
    StringList,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    a2a_pb2,
    a2a_pb2_grpc,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, TransportProtocol
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders

from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.agent.v1 import events_pb2 as events_pb
from .._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    ContentBlocks,
    ErrorType,
    FinishedReason,
    Msg,
)
from .._generated.agentscope.message.v1.message_pb2 import Role as MsgRole
from ..agents.config import A2AConfig
from ..agents.replies import Reply, reply_id_of
from ..agents.servicer import AgentServicer
from ..agents.sessions import Sessions
from ..errors import (
    AgentReplyError,
    AgentScopeProtoError,
    FormatError,
    LimitExceededError,
    MessageFormatError,
    SessionStateError,
)
from ..service.app import HostedService, build_server, set_serving
from ..service.asgi import HttpServer, listen, start_asgi
from ..service.config import ServerConfig, host_port
from ..service.http_guard import HttpGuard
from .mapping import EXTENSION_URI, RESUME_KEY, a2a_to_msgs, agent_extension, msgs_to_a2a
from .protocol import (
    QUESTIONS,
    calls_in_words,
    last_question,
    read_events,
    read_request,
    read_resume,
    write_events,
    write_resume,
)

__all__ = ["A2AServer", "AgentExecutorForSessions", "agent_card", "start_a2a"]

logger = logging.getLogger("agentscope_proto.a2a")

SERVICE_NAME: str = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"].full_name
# How long CancelTask waits for the agent to close the interrupted reply;
# past it the task is canceled all the same and the reply ends alone.
_CANCEL_WAIT = 10.0
# What a caller without the extension may answer to a confirmation.
_YES = frozenset({"yes", "y", "allow", "approve", "confirm", "ok", "okay", "sure"})
_NO = frozenset({"no", "n", "deny", "reject", "refuse", "cancel", "stop"})
# The blocks a peer without the extension gets of a reply: its answer, not its
# work (reasoning, tool calls and results ride the extension only).
_FOR_PEERS = frozenset({"text", "image", "audio", "video", "data"})
_FINISHED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_REASONS = {
    "FINISHED_REASON_INTERRUPTED": TaskState.TASK_STATE_CANCELED,
    "FINISHED_REASON_ERROR": TaskState.TASK_STATE_FAILED,
}


# --- Errors --------------------------------------------------------------------


def _a2a_error(error: AgentScopeProtoError) -> A2AError:
    """The A2A error for one of the package's own (a reply's refusals)."""
    # A message it refuses, its media included (a file or an internal URL).
    if isinstance(error, MessageFormatError | FormatError):
        return InvalidParamsError(message=str(error))
    # A2A has no "resource exhausted" or "failed precondition" of its own:
    # both are operations the agent cannot take now (gRPC: FAILED_PRECONDITION).
    if isinstance(error, SessionStateError | LimitExceededError):
        return UnsupportedOperationError(message=str(error))
    return A2AError(str(error))


# --- What a reply looks like on the task ---------------------------------------


def _for_peers(msg: Msg) -> Msg:
    """The reply as a caller without the extension gets it: its text and
    media blocks (its reasoning and tool calls ride the extension only)."""
    if msg.WhichOneof("content") != "blocks":
        return msg
    view = Msg()
    view.CopyFrom(msg)
    kept = [block for block in msg.blocks.items if block.WhichOneof("block") in _FOR_PEERS]
    view.blocks.CopyFrom(ContentBlocks(items=kept))
    return view


def _text_block(text: str) -> ContentBlock:
    block = ContentBlock()
    block.text.text = text
    return block


def _question_text(question: events_pb.AgentEvent, name: str) -> str:
    """The question for a caller without the extension, in words."""
    calls = calls_in_words(question)
    if question.WhichOneof("event") == "require_user_confirm":
        return f"{name} asks to run {calls}. Answer yes to allow it, or no to deny it."
    return (
        f"{name} asks its caller to run {calls} and send the results, "
        f"which needs the AgentScope extension ({EXTENSION_URI}). "
        "Answer no, or cancel the task, to stop."
    )


def _peer_view(msg: Msg | None, question: events_pb.AgentEvent | None, name: str) -> Msg | None:
    """The status message a caller without the extension gets: the reply's
    text and media, its question in words, what failed."""
    if msg is None:
        return None
    view = _for_peers(msg)
    extra = []
    if question is not None:
        extra.append(_text_block(_question_text(question, name)))
    if msg.HasField("error"):
        kind = ErrorType.Name(msg.error.type).removeprefix("ERROR_TYPE_").lower()
        extra.append(_text_block(f"The reply failed ({kind}): {msg.error.message}"))
    if extra:
        if view.WhichOneof("content") == "text":
            extra.insert(0, _text_block(view.text))
        view.blocks.CopyFrom(ContentBlocks(items=[*view.blocks.items, *extra]))
    return view


def _verdict(message: Message) -> bool | None:
    """What a caller without the extension answered: yes, no, or neither."""
    text = " ".join(part.text for part in message.parts if part.HasField("text"))
    word = text.strip().lower().rstrip(".!")
    return True if word in _YES else False if word in _NO else None


def _answer_in_words(
    question: events_pb.AgentEvent, message: Message
) -> service_pb.ReplyRequest | None:
    """The answer a yes or no in words means (None: neither, or a yes to a
    question that needs more than words)."""
    verdict = _verdict(message)
    if verdict is None:
        return None
    kind = question.WhichOneof("event")
    body = getattr(question, kind or "")
    request = service_pb.ReplyRequest()
    if kind == "require_user_confirm":
        answer = request.user_confirm_result
        answer.reply_id = body.reply_id
        for call in body.tool_calls:
            answer.confirm_results.add(confirmed=verdict).tool_call.CopyFrom(call)
        return request
    if verdict:
        return None  # external results come through the extension only
    request.user_interrupt.reply_id = body.reply_id
    return request


# --- The executor ----------------------------------------------------------------


@dataclasses.dataclass
class _Running:
    """A task's reply while it runs, for CancelTask."""

    reply: Reply
    ended: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    cancelled: bool = False


@dataclasses.dataclass(frozen=True)
class _View:
    """Whose status updates a reply makes, and for whom: whether the caller
    asked for the extension."""

    task_id: str
    context_id: str
    extension: bool


class AgentExecutorForSessions(AgentExecutor):
    """Runs A2A tasks as replies in the sessions of an AgentService (see the
    module doc): the context is the session, the task one reply."""

    def __init__(self, sessions: Sessions, name: str) -> None:
        self._sessions = sessions
        self._name = name
        self._running: dict[str, _Running] = {}

    def runs(self, task_id: str) -> bool:
        """Whether this replica runs the task's reply now."""
        return task_id in self._running

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = str(context.task_id), str(context.context_id)
        message = context.message
        if message is None:  # pragma: no cover - the SDK always sends one
            raise InvalidParamsError(message="no message")
        view = _View(task_id, context_id, EXTENSION_URI in context.requested_extensions)
        current = context.current_task
        question = None
        if current is not None:
            question = last_question(read_events(current.metadata))
            if current.status.state != TaskState.TASK_STATE_INPUT_REQUIRED or question is None:
                state = TaskState.Name(current.status.state)
                raise UnsupportedOperationError(
                    message=f"task {task_id} is {state}: send a new message, without its task_id"
                )
        try:
            request = self._request(message, context_id, question)
            if request is None:  # an answer in words that answers nothing: ask again
                await self._ask_again(event_queue, view, question)
                return
            request.session_id = context_id  # an answer in words is a new request
            running = _Running(await self._sessions.begin(request))
        except AgentScopeProtoError as error:
            raise _a2a_error(error) from None
        if current is None:
            submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            submitted.timestamp.GetCurrentTime()
            task = Task(id=task_id, context_id=context_id, status=submitted, history=[message])
            await event_queue.enqueue_event(task)
        self._running[task_id] = running
        try:
            await self._publish(running, event_queue, view)
        finally:
            del self._running[task_id]
            running.reply.interrupt()  # a no-op once it ended
            running.ended.set()

    def _request(
        self, message: Message, context_id: str, question: events_pb.AgentEvent | None
    ) -> service_pb.ReplyRequest | None:
        """The `ReplyRequest` an A2A message makes: its messages, or the answer
        to the task's question (None: an answer in words that answers nothing)."""
        request = read_request(message)
        request.session_id = context_id
        answered = request.WhichOneof("answer") is not None
        if question is None:
            if answered:
                raise MessageFormatError(
                    "message.metadata", "an answer goes on the task that asked (its task_id)"
                )
            request.msgs.extend(a2a_to_msgs(message))
            return request
        if answered:
            return request
        return _answer_in_words(question, message)

    async def _publish(self, running: _Running, queue: EventQueue, view: _View) -> None:
        """The reply's responses as the task's status updates."""
        updates = self._updates(running.reply.batches(), view, lambda: running.cancelled)
        async for update in updates:
            await queue.enqueue_event(update)

    def follow(
        self, task: Task, resume: service_pb.ResumeRequest, *, extension: bool
    ) -> AsyncIterator[TaskStatusUpdateEvent]:
        """The status updates of `task`'s reply after `resume.after`, read
        from its log (on whichever replica runs it), as `execute` makes them
        (for a caller who asked for the extension or not); an empty `after`
        follows the reply from its start."""
        view = _View(task.id, task.context_id, extension)
        logged = self._logged(resume)
        return self._updates(logged, view, lambda: False, started=bool(resume.after))

    async def _logged(
        self, resume: service_pb.ResumeRequest
    ) -> AsyncIterator[list[service_pb.ReplyResponse]]:
        """A reply's logged responses, one batch each. A reply that stops
        before its end (its replica died) is an A2A error, not a silent end."""
        done = False
        try:
            async for response in self._sessions.resume(resume):
                done = done or response.done
                yield [response]
        except AgentReplyError as error:
            if done:
                raise  # the reply's own failure, after its end: as it runs
            raise A2AError(f"task reply {resume.reply_id!r}: {error}") from None

    async def _updates(
        self,
        batches: AsyncIterator[list[service_pb.ReplyResponse]],
        view: _View,
        cancelled: Callable[[], bool],
        *,
        started: bool = False,
    ) -> AsyncIterator[TaskStatusUpdateEvent]:
        """The status updates a reply's responses make (`started`: the
        task is `working` already)."""
        reply_id = ""
        try:
            async for batch in batches:
                reply_id = reply_id or reply_id_of(batch)
                at = (reply_id, batch[-1].cursor)
                events = [response.event for response in batch if response.HasField("event")]
                done = next((response for response in batch if response.done), None)
                if done is None:
                    if view.extension or not started:
                        shown = events if view.extension else ()
                        yield _update(view, TaskState.TASK_STATE_WORKING, events=shown, at=at)
                        started = True
                    continue
                if not started:
                    yield _update(view, TaskState.TASK_STATE_WORKING, at=at)
                yield self._finish(view, cancelled(), done, events, at)
        except AgentReplyError:
            pass  # its task is failed already, with the reply's message
        except SessionStateError as error:
            if error.path != "msgs":
                raise _a2a_error(error) from None
            # In A2A's words: the answer goes on the task that asked.
            raise UnsupportedOperationError(
                message=f"context {view.context_id} waits for an answer to the question of a "
                "task left input-required: send the answer on that task (its task_id), or "
                "cancel it"
            ) from None
        except AgentScopeProtoError as error:
            raise _a2a_error(error) from None

    def _finish(
        self,
        view: _View,
        cancelled: bool,
        done: service_pb.ReplyResponse,
        events: Sequence[events_pb.AgentEvent],
        at: tuple[str, str],
    ) -> TaskStatusUpdateEvent:
        """The task's last status update of this reply: by how it ended."""
        msg = done.msg if done.HasField("msg") else None
        last = done.event.WhichOneof("event") if done.HasField("event") else None
        question = done.event if last in QUESTIONS else None
        if question is not None:
            state = TaskState.TASK_STATE_INPUT_REQUIRED
        elif last == "reply_end":
            reason = FinishedReason.Name(done.event.reply_end.finished_reason)
            state = _REASONS.get(reason, TaskState.TASK_STATE_COMPLETED)
        else:  # interrupted before the agent began
            state = TaskState.TASK_STATE_CANCELED if cancelled else TaskState.TASK_STATE_COMPLETED
        shown: Sequence[events_pb.AgentEvent] = events
        if not view.extension:
            msg = _peer_view(msg, question, self._name)
            # The question rides along for the answer in words to read.
            shown = [question] if question is not None else ()
        return _update(view, state, msg, shown, at)

    async def _ask_again(
        self, queue: EventQueue, view: _View, question: events_pb.AgentEvent | None
    ) -> None:
        if question is None:  # pragma: no cover - only an answer asks again
            return
        again = Msg(name=self._name, role=MsgRole.ROLE_ASSISTANT)
        again.blocks.items.append(_text_block(_question_text(question, self._name)))
        await queue.enqueue_event(
            _update(view, TaskState.TASK_STATE_INPUT_REQUIRED, again, [question])
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Interrupt the task's reply and wait (a while) for the agent to close
        it; a task waiting for an answer is answered with an interrupt."""
        task_id = str(context.task_id)
        running = self._running.get(task_id)
        if running is not None:
            running.cancelled = True
            running.reply.interrupt()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(running.ended.wait(), _CANCEL_WAIT)
            return
        task = context.current_task
        if task is None or task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            return
        question = last_question(read_events(task.metadata))
        if question is None:
            return
        request = service_pb.ReplyRequest(session_id=task.context_id)
        request.user_interrupt.reply_id = getattr(
            question, question.WhichOneof("event") or ""
        ).reply_id
        try:
            session = await self._sessions.open(task.context_id, create=False)
            reply = self._sessions.start(session, self._sessions.hosting.read_inputs(request))
        except AgentScopeProtoError:
            return  # the session is gone: nothing waits any more
        running = _Running(reply, cancelled=True)
        self._running[task_id] = running
        try:
            extension = EXTENSION_URI in context.requested_extensions
            await self._publish(running, event_queue, _View(task_id, task.context_id, extension))
        finally:
            del self._running[task_id]
            running.ended.set()


def _update(
    view: _View,
    state: Any,
    msg: Msg | None = None,
    events: Sequence[events_pb.AgentEvent] = (),
    at: tuple[str, str] = ("", ""),
) -> TaskStatusUpdateEvent:
    """A status update of the task `view` names; `at`: its reply's id and
    the cursor of the last response it stands for, where another replica
    follows the reply on (`write_resume`)."""
    status = TaskStatus(state=state)
    status.timestamp.GetCurrentTime()
    if msg is not None:
        # Without the update's ids, so that it reads back as the reply exactly.
        status.message.CopyFrom(msgs_to_a2a([msg], role=Role.ROLE_AGENT))
    update = TaskStatusUpdateEvent(task_id=view.task_id, context_id=view.context_id, status=status)
    if events:
        write_events(update.metadata, events)
    if all(at):
        write_resume(update.metadata, *at)
    return update


# --- The task store ------------------------------------------------------------------


class _TaskStore(InMemoryTaskStore):
    """a2a-sdk's in-memory store, keeping at most `max_tasks` finished tasks
    (the oldest finished go first; running and waiting tasks are bounded by
    the sessions and replies the server takes)."""

    def __init__(self, max_tasks: int) -> None:
        super().__init__()
        self._max = max_tasks
        # Finished tasks, the oldest first, each with whose it is.
        self._finished: OrderedDict[str, ServerCallContext] = OrderedDict()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        if task.status.state not in _FINISHED:
            self._finished.pop(task.id, None)
            return
        # Only who owns it: the call's state (its headers, its gRPC context) is not kept.
        self._finished[task.id] = ServerCallContext(user=context.user, tenant=context.tenant)
        self._finished.move_to_end(task.id)
        while len(self._finished) > self._max:
            old, owner = self._finished.popitem(last=False)
            await super().delete(old, owner)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._finished.pop(task_id, None)
        await super().delete(task_id, context)


def _task_store(sessions: Sessions, agent: str, max_tasks: int) -> TaskStore:
    """Where the server keeps its A2A tasks: in the sessions' Redis when they
    are there (`--state redis://`: every replica answers GetTask), else in
    memory."""
    store = sessions.keeper.store
    if not store.durable:
        return _TaskStore(max_tasks)
    from ..agents.state.redis_store import RedisStateStore
    from .tasks import RedisTaskStore

    if not isinstance(store, RedisStateStore):
        return _TaskStore(max_tasks)
    return RedisTaskStore(store.client, agent, max_tasks)


# --- The request handler ------------------------------------------------------------

# Task states with more to come: a reply queued or running, or a question.
_RUNNING = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
_OPEN = _RUNNING | {TaskState.TASK_STATE_INPUT_REQUIRED}
# The first and the longest wait between two reads of a task another replica runs.
_FIRST_LOOK_S, _LAST_LOOK_S = 0.02, 0.25


class _RequestHandler(DefaultRequestHandlerV2):
    """a2a-sdk's request handler, which cancels and follows the tasks this
    replica runs; with sessions in a shared store, a task another replica
    runs is cancelled and followed through the store (docs/a2a.md,
    "Replicas"): CancelTask asks that replica to interrupt the reply
    (`Keeper.interrupt`) and answers with the task as it ended, and
    SubscribeToTask gives the task as stored, then the status updates its
    reply's log makes after it (`AgentExecutorForSessions.follow`)."""

    def __init__(
        self,
        executor: AgentExecutorForSessions,
        task_store: TaskStore,
        card: AgentCard,
        sessions: Sessions,
    ) -> None:
        super().__init__(
            agent_executor=executor,
            task_store=task_store,
            agent_card=card,
            # A task left waiting for an answer lets go of what it holds when
            # its session would be dropped.
            interrupted_task_timeout=sessions.config.session_idle_seconds,
        )
        self._executor = executor
        self._tasks = task_store
        self._keeper = sessions.keeper
        self._lease = sessions.config.lease_seconds

    async def _elsewhere(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task, if it has more to come and may run on another replica
        (None: a2a-sdk's own way does)."""
        if not self._keeper.durable or self._executor.runs(task_id):
            return None
        task = await self._tasks.get(task_id, context)
        return task if task is not None and task.status.state in _OPEN else None

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        task = await self._elsewhere(params.id, context)
        if task is not None and task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            task = await self._interrupted(task, context)
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # Nothing runs: its question is answered with an interrupt here,
            # as a2a-sdk cancels a task this replica holds.
            return await self._cancel_local(params.id, context)
        if task is not None:
            return task
        # a2a-sdk's own (past the wait: the task is recorded canceled).
        cancelled: Task | None = await super().on_cancel_task(params, context)
        return cancelled

    async def _interrupted(self, task: Task, context: ServerCallContext) -> Task | None:
        """Ask the replica running `task`'s reply to interrupt it, and wait for
        the task to end, or to wait for an answer (None: neither within a
        lease and `_CANCEL_WAIT`, or no replica runs it)."""
        deadline = asyncio.get_running_loop().time() + self._lease + _CANCEL_WAIT
        asked = False
        async for seen, abandoned in self._watch(task, context):
            if seen.status.state not in _RUNNING:
                return seen
            # Only once its reply runs: a reply still queued would leave
            # the interrupt to the call ahead of it.
            if not asked and seen.status.state == TaskState.TASK_STATE_WORKING:
                await self._ask_interrupt(seen.context_id)
                asked = True
            if abandoned or asyncio.get_running_loop().time() > deadline:
                return None
        return None  # pragma: no cover - the watch ends by an error only

    async def _ask_interrupt(self, context_id: str) -> None:
        try:
            await self._keeper.interrupt(context_id)
        except AgentScopeProtoError as error:
            raise _a2a_error(error) from None

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        task = await self._elsewhere(params.id, context)
        if task is None:
            async for event in super().on_subscribe_to_task(params, context):
                yield event
            return
        yield task
        resume = read_resume(task.metadata, task.context_id)
        if resume is None:  # its reply has not begun: follow it from its start
            task = await self._begun(task, context)
            resume = read_resume(task.metadata, task.context_id)
            if resume is None:
                yield task  # it ended before it began
                return
            resume.after = ""
        extension = EXTENSION_URI in context.requested_extensions
        final = None
        async for update in self._executor.follow(task, resume, extension=extension):
            yield update
            if update.status.state in _FINISHED:
                final = update
        if final is not None:
            await self._settle(task, final, context)

    async def _settle(
        self, task: Task, final: TaskStatusUpdateEvent, context: ServerCallContext
    ) -> None:
        """Store `task` ended as its reply's log ended it, unless the replica
        that ran the reply does (within a lease): one that died was taken
        over where its log was read (`Sessions.resume`), and no replica's
        executor will."""
        async for seen, abandoned in self._watch(task, context):
            if seen.status.state in _FINISHED:
                return  # stored by the replica that ran it
            if abandoned:
                seen.status.CopyFrom(final.status)
                await self._tasks.save(seen, context)
                return

    async def _begun(self, task: Task, context: ServerCallContext) -> Task:
        """`task` once its reply began (an update says where it goes on) or
        it ended; an A2A error once no replica runs it."""
        async for seen, abandoned in self._watch(task, context):
            if seen.status.state in _FINISHED or RESUME_KEY in seen.metadata.fields:
                return seen
            if abandoned:
                raise A2AError(
                    f"task {seen.id} never began: no replica runs context {seen.context_id}"
                )
        raise AssertionError  # pragma: no cover - the watch ends by an error only

    async def _watch(
        self, task: Task, context: ServerCallContext
    ) -> AsyncIterator[tuple[Task, bool]]:
        """`task`, then as stored after each wait (a little longer each
        time), each with whether it is abandoned: no replica has held its
        session for a lease (its replica died; a replica releases the
        lease only as the reply ends); `TaskNotFoundError` once it is gone."""
        loop = asyncio.get_running_loop()
        wait = _FIRST_LOOK_S
        free_since: float | None = None
        while True:
            if await self._keeper.store.leased(task.context_id):
                free_since = None
            elif free_since is None:
                free_since = loop.time()
            yield task, free_since is not None and loop.time() - free_since > self._lease
            await asyncio.sleep(wait)
            wait = min(wait * 2, _LAST_LOOK_S)
            found = await self._tasks.get(task.id, context)
            if found is None:
                raise TaskNotFoundError
            task = found


# --- The agent card --------------------------------------------------------------------


def agent_card(
    description: service_pb.DescribeResponse,
    *,
    http_url: str,
    grpc_url: str | None = None,
    bearer: bool = False,
    mutual_tls: bool = False,
) -> AgentCard:
    """The A2A agent card of a served agent, from its `Describe`: JSON-RPC
    and HTTP+JSON at `http_url`, gRPC at `grpc_url` (a `host:port`), the
    AgentScope extension, the tools as skills, and how to authenticate."""
    interfaces = [AgentInterface(url=http_url, protocol_binding=TransportProtocol.JSONRPC)]
    if grpc_url is not None:
        interfaces.append(AgentInterface(url=grpc_url, protocol_binding=TransportProtocol.GRPC))
    interfaces.append(AgentInterface(url=http_url, protocol_binding=TransportProtocol.HTTP_JSON))
    for interface in interfaces:
        interface.protocol_version = "1.0"
    summary = description.description or f"An AgentScope agent ({description.framework})."
    skills = [
        AgentSkill(
            id=tool.name, name=tool.name, description=tool.description or tool.name, tags=["tool"]
        )
        for tool in description.tools
    ] or [AgentSkill(id="reply", name=description.name, description=summary, tags=["agentscope"])]
    card = AgentCard(
        name=description.name,
        description=summary,
        version=description.version or "unspecified",
        supported_interfaces=interfaces,
        # What it serves, said as such: streaming (SubscribeToTask on every
        # replica sharing its sessions), no push notifications, no extended card.
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extended_agent_card=False,
            extensions=[agent_extension()],
        ),
        default_input_modes=list(description.input_media_types) or ["text/plain"],
        default_output_modes=list(description.output_media_types) or ["text/plain"],
        skills=skills,
    )
    if bearer:
        scheme = HTTPAuthSecurityScheme(scheme="Bearer", description="the server's token")
        card.security_schemes["bearer"].http_auth_security_scheme.CopyFrom(scheme)
        card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    if mutual_tls:
        mtls = MutualTlsSecurityScheme(description="a client certificate the server's CA signed")
        card.security_schemes["mtls"].mtls_security_scheme.CopyFrom(mtls)
        card.security_requirements.append(SecurityRequirement(schemes={"mtls": StringList()}))
    return card


class _CachedCard:
    """The agent card's route with HTTP caching (the A2A TCK's CARD-CACHE
    checks; a2a-sdk's own route sends no `Cache-Control` or `Last-Modified`,
    and before 1.3 no `ETag`): `Cache-Control: public, max-age=N`, a strong
    ETag of the card's bytes, `Last-Modified` the server's start, and 304 Not
    Modified to a matching `If-None-Match` (else `If-Modified-Since`). The
    card is the SDK's, rendered for every GET: the ETag follows its bytes."""

    def __init__(self, app: Any, max_age: int, started: datetime) -> None:
        self._app = app
        self._cache_control = f"public, max-age={max_age}"
        # HTTP dates have whole seconds: compared in seconds.
        self._started = started.astimezone(timezone.utc).replace(microsecond=0)
        self._last_modified = format_datetime(self._started, usegmt=True)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if not _is_card(scope):
            await self._app(scope, receive, send)
            return
        start, body = await _rendered(self._app, _unconditional_get(scope), receive)
        headers = MutableHeaders(raw=list(start["headers"]))
        if start["status"] == 200:
            etag = f'"{hashlib.sha256(body).hexdigest()}"'
            for name, value in (
                ("ETag", etag),
                ("Cache-Control", self._cache_control),
                ("Last-Modified", self._last_modified),
            ):
                headers[name] = value
            if self._not_modified(Headers(scope=scope), etag):
                start, body = {**start, "status": 304}, b""
                for name in ("content-length", "content-type"):
                    del headers[name]
        await send({**start, "headers": headers.raw})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )

    def _not_modified(self, request: Headers, etag: str) -> bool:
        """Whether the caller's copy is current (RFC 9110 13.2.2: an
        If-None-Match, weakly compared, decides alone when present)."""
        match = request.get("if-none-match")
        if match is not None:
            tags = {tag.strip().removeprefix("W/") for tag in match.split(",")}
            return "*" in tags or etag in tags
        since = request.get("if-modified-since")
        if since is None:
            return False
        try:
            when = parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False  # not a date: ignored, as RFC 9110 says
        if when.tzinfo is None:  # `-0000`: still GMT
            when = when.replace(tzinfo=timezone.utc)
        return self._started <= when


def _is_card(scope: Any) -> bool:
    return bool(
        scope["type"] == "http"
        and scope["method"] in ("GET", "HEAD")
        and scope["path"] == AGENT_CARD_WELL_KNOWN_PATH
    )


def _unconditional_get(scope: Any) -> Any:
    """`scope` as a plain GET: the whole card, for the bytes a HEAD is answered
    about and the ETag is of (a2a-sdk 1.3 answers an If-None-Match itself)."""
    conditions = (b"if-none-match", b"if-modified-since")
    headers = [(name, value) for name, value in scope["headers"] if name.lower() not in conditions]
    return {**scope, "method": "GET", "headers": headers}


async def _rendered(app: Any, scope: Any, receive: Any) -> tuple[dict[str, Any], bytes]:
    """What `app` answers to `scope`: its response's start and its whole body."""
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def keep(message: Any) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            chunks.append(message.get("body", b""))

    await app(scope, receive, keep)
    return start, b"".join(chunks)


# --- The servers ----------------------------------------------------------------------


@dataclasses.dataclass
class A2AServer:
    """The A2A servers of a served agent (a `service.app.Listener`): HTTP
    (JSON-RPC, HTTP+JSON, the card) and, if asked, gRPC."""

    card: AgentCard
    http: HttpServer
    grpc: Any
    handler: DefaultRequestHandlerV2
    addresses: list[str]

    @property
    def url(self) -> str:
        """The HTTP interfaces' URL (the card is under it)."""
        return str(self.card.supported_interfaces[0].url)

    async def stop(self, grace_seconds: float) -> None:
        stopping = [self.http.stop(grace_seconds)]
        if self.grpc is not None:
            stopping.append(self.grpc.stop(grace_seconds))
        await asyncio.gather(*stopping)
        await self.handler.aclose()


async def start_a2a(servicer: AgentServicer, a2a: A2AConfig, config: ServerConfig) -> A2AServer:
    """Serve `servicer`'s agent over A2A as `a2a` says, with `config`'s auth,
    TLS and size limit, in this event loop."""
    started = datetime.now(timezone.utc)  # the card's Last-Modified
    listed = a2a.public_host or config.host  # the host the card lists
    sock = listen(config, a2a.port)
    scheme = "https" if config.tls_cert else "http"
    http_port = sock.getsockname()[1]
    http_url = f"{scheme}://{host_port(listed, http_port)}"
    grpc_server = grpc_url = None
    # Its request handler comes with the card, which lists the bound port.
    grpc_handler = GrpcHandler(request_handler=cast(Any, None))
    try:
        if a2a.grpc_port is not None:
            service = HostedService(
                SERVICE_NAME,
                lambda server: a2a_pb2_grpc.add_A2AServiceServicer_to_server(  # type: ignore[no-untyped-call]
                    grpc_handler, server
                ),
            )
            grpc_config = dataclasses.replace(config, port=a2a.grpc_port, reuse_port=False)
            grpc_server, health, grpc_port = build_server(grpc_config, services=[service])
            grpc_url = host_port(listed, grpc_port)
        card = agent_card(
            servicer.description,
            http_url=http_url,
            grpc_url=grpc_url,
            bearer=config.auth_token is not None,
            mutual_tls=config.tls_client_ca is not None,
        )
        sessions = servicer.sessions
        handler = _RequestHandler(
            AgentExecutorForSessions(sessions, servicer.description.name),
            _task_store(sessions, servicer.description.name, a2a.max_tasks),
            card,
            sessions,
        )
        grpc_handler.request_handler = handler
        if grpc_server is not None:
            await grpc_server.start()
            await set_serving(health, True, [SERVICE_NAME])
        routes = [
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/"),
            *create_rest_routes(handler),
        ]
        cached = _CachedCard(Starlette(routes=routes), a2a.card_max_age, started)
        app = HttpGuard(cached, config, open_path=_is_card)
        http = start_asgi(app, config, sock)
    except BaseException:
        sock.close()
        if grpc_server is not None:
            await grpc_server.stop(0)
        raise
    # Where it listens; the card's URLs (another host's, with `public_host`) after.
    listens = f"{scheme}://{host_port(config.host, http_port)}"
    card_lists = f"; the card lists {http_url}" if listens != http_url else ""
    addresses = [f"{listens} (A2A JSON-RPC, HTTP+JSON{card_lists})"]
    if grpc_server is not None:
        grpc_card = f"; the card lists {grpc_url}" if card_lists else ""
        addresses.append(f"{host_port(config.host, grpc_port)} (A2A gRPC{grpc_card})")
    return A2AServer(card, http, grpc_server, handler, addresses)


def a2a_listener(
    servicer: AgentServicer, a2a: A2AConfig
) -> Callable[[ServerConfig], Awaitable[A2AServer]]:
    """What `HostedService.listen` runs to serve `servicer`'s agent over A2A."""
    return lambda config: start_a2a(servicer, a2a, config)
