"""Hosting of AgentScope 2.x agents: anything with 2.x's `reply_stream`,
`agentscope.agent.Agent` first.

Messages are read as 2.x's `Msg` objects and refused where 2.x's `Agent`
would refuse them; answers become 2.x's answer events, checked against what
the agent waits for; a reply's events and message are converted as the
agent makes them. A reply that raises ends as 2.x's own service ends one:
its start (if it had none), its end with the error, and the message its
events built, then `AgentReplyError`; but a `RemoteAgent`'s reply that
failed remotely has ended already (its remote's events and message, then
`AgentReplyError`), and goes on with the remote's error as it is.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ... import _json, interop
from ..._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from ..._generated.agentscope.agent.v1 import events_pb2 as pb
from ..._generated.agentscope.agent.v1 import state_pb2
from ..._generated.agentscope.message.v1.message_pb2 import FinishedReason, Msg, ToolResultState
from ...dialects import to_dict
from ...errors import AgentReplyError, MessageFormatError, SessionStateError
from . import failures
from .context import Saver
from .protocol import (
    Checkpoint,
    Item,
    ReplyInputs,
    SavedState,
    Taken,
    new_event,
    now,
    read_each,
    structured_schema,
)

__all__ = ["AgentScope2"]

_ANSWERS = [
    field.name for field in service_pb.ReplyRequest.DESCRIPTOR.oneofs_by_name["answer"].fields
]
_EVENTS = [
    field.name
    for field in pb.AgentEvent.DESCRIPTOR.oneofs_by_name["event"].fields
    if field.name not in _ANSWERS
]
# The events after which the agent waits until the reply so far is logged
# (and a model call's end, when it asked for tools, with its state).
_CHECKPOINTS = frozenset({"tool_result_start", "tool_result_end"})
# What a replica taking a reply over gives a tool call its log has no result of.
_INTERRUPTED = (
    "<system-reminder>The server running this tool call stopped before its result was "
    "kept; it may or may not have run.</system-reminder>"
)
# An event that starts something -> the event that ends it, and what names it.
_ENDS = {
    "model_call_start": ("model_call_end", ""),
    "text_block_start": ("text_block_end", "block_id"),
    "thinking_block_start": ("thinking_block_end", "block_id"),
    "data_block_start": ("data_block_end", "block_id"),
    "tool_call_start": ("tool_call_end", "tool_call_id"),
}
_ENDED_BY = dict(_ENDS.values())
# Blocks 2.x's `Agent` refuses in its input.
_NOT_INPUT = ("tool_call", "tool_result", "thinking")


class _Waits(NamedTuple):
    """What an answer answers: the state its calls wait in, the answer's
    field listing them and how each names its call, and what it is."""

    state: str
    field: str
    call_id: Callable[[Any], str]
    what: str


# An answer's kind (a `ReplyRequest.answer` field) -> what it answers. An
# interrupt answers anything, and nothing (2.x: a no-op then).
_WAITS = {
    "user_confirm_result": _Waits(
        "asking", "confirm_results", lambda result: result.tool_call.id, "a confirmation"
    ),
    "external_execution_result": _Waits(
        "submitted", "execution_results", lambda result: result.id, "external results"
    ),
}


class AgentScope2:
    """Hosting of AgentScope 2.x agents (see the module doc)."""

    can_take_over = True

    def __init__(self) -> None:
        self.framework = f"agentscope {importlib.metadata.version('agentscope')}"
        self._msg = importlib.import_module("agentscope.message")
        self._event = importlib.import_module("agentscope.event")
        self._types = importlib.import_module("agentscope.types")
        self._saver = Saver()

    def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]:
        return read_each(msgs, field, self._read_msg)

    def _read_msg(self, msg: Msg, path: str) -> Any:
        """One input message as a 2.x `Msg`: user or assistant, without tool
        calls, tool results or thinking (what 2.x's `Agent` refuses)."""
        native = interop.to_agentscope(_with_defaults(msg))
        if native.role == "system":
            raise MessageFormatError(
                f"{path}.role", "an agent takes user and assistant messages, not system ones"
            )
        for position, block in enumerate(native.content):
            if block.type in _NOT_INPUT:
                raise MessageFormatError(
                    f"{path}.content[{position}]", f"an agent's input holds no {block.type} blocks"
                )
        return native

    def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs:
        which = request.WhichOneof("answer")
        if which is not None and request.msgs:
            raise MessageFormatError(which, "an answer goes without messages")
        answer = None
        if which is not None:
            event = pb.AgentEvent(id=uuid.uuid4().hex, created_at=now())
            getattr(event, which).CopyFrom(getattr(request, which))
            (answer,) = read_each([event], which, lambda e, _: interop.event_to_agentscope(e))
        msgs = self.read_msgs(request.msgs, "msgs") if request.msgs else None
        return ReplyInputs(msgs, answer, structured_schema(request), request.reply_id)

    def bind(self, agent: Any, session_id: str) -> None:
        state = getattr(agent, "state", None)
        if state is not None and hasattr(state, "session_id"):
            state.session_id = session_id

    def check(self, agent: Any, inputs: ReplyInputs) -> None:
        """What 2.x's `Agent` would raise on, as a precondition: an answer the
        agent is not waiting for, or no answer while it waits."""
        awaiting = getattr(getattr(agent, "state", None), "get_awaiting_tool_calls", None)
        if awaiting is None:
            return  # not an `Agent`: it checks for itself
        waiting = {call.id: call.state for call in awaiting(agent.name)}
        if inputs.answer is None:
            if waiting:
                raise SessionStateError(
                    "msgs",
                    f"the session waits for an answer about {len(waiting)} tool call(s): "
                    "send user_confirm_result, external_execution_result or user_interrupt",
                )
            return
        kind = inputs.answer.type.lower()
        waits = _WAITS.get(kind)
        if waits is None:
            return
        if waits.state not in waiting.values():
            raise SessionStateError(kind, f"the session is not waiting for {waits.what}")
        for index, result in enumerate(getattr(inputs.answer, waits.field)):
            call_id = waits.call_id(result)
            if waiting.get(call_id) != waits.state:
                raise SessionStateError(
                    f"{kind}.{waits.field}[{index}]",
                    f"the session is not waiting on call {call_id!r}",
                )

    def question(self, agent: Any) -> pb.AgentEvent | None:
        """The tool calls the agent's last message waits on: those asking a
        confirmation first (2.x asks them before it hands any call over),
        else those handed to the caller; under the reply's id (its message's)."""
        state = getattr(agent, "state", None)
        awaiting = getattr(state, "get_awaiting_tool_calls", None)
        calls = awaiting(agent.name) if awaiting is not None else []
        if state is None or not calls:
            return None
        asking = [call for call in calls if call.state == self._msg.ToolCallState.ASKING]
        event = (
            self._event.RequireUserConfirmEvent
            if asking
            else self._event.RequireExternalExecutionEvent
        )
        reply_id = state.context[-1].id
        return interop.event_from_agentscope(event(reply_id=reply_id, tool_calls=asking or calls))

    def reply(
        self, agent: Any, session_id: str, inputs: ReplyInputs
    ) -> AsyncIterator[Item | Checkpoint]:
        """The reply's items, with a `Checkpoint` where the agent must wait for
        the log: at the end of a model call that asked for tools (with the
        state: the tools have not started), at a tool's start and at its
        result (`_checkpoints`)."""
        return self._replying(agent, session_id, inputs.native, inputs.schema, inputs.reply_id)

    async def _replying(
        self,
        agent: Any,
        session_id: str,
        native: Any,
        schema: dict[str, Any] | None,
        named: str = "",
        context: Any = None,
    ) -> AsyncIterator[Item | Checkpoint]:
        """The reply's items; `named`: the id the reply takes (as its start
        comes: 2.x names a reply as it begins it), in `context` if given
        (the reply context it goes on in)."""
        seen: list[Any] = []
        ended = False  # the agent gave its reply's message
        tools = False  # the model call under way asked for tools
        try:
            async for item in agent.reply_stream(
                native, structured_schema=schema, yield_final_msg=True
            ):
                if isinstance(item, self._msg.Msg):
                    ended = True
                    yield self._saver.reply_msg(item)
                    continue
                if named and isinstance(item, self._event.ReplyStartEvent):
                    if context is not None:
                        # The request's schema where the stored context lost it.
                        fresh = agent.state.reply_context.structured_schema
                        context.structured_schema = context.structured_schema or fresh
                        agent.state.reply_context = context
                    agent.state.reply_context.reply_id = item.reply_id = named
                seen.append(item)
                event = interop.event_from_agentscope(item)
                yield event
                kind = event.WhichOneof("event")
                tools = (tools or kind == "tool_call_start") and kind != "model_call_start"
                if kind in _CHECKPOINTS:
                    yield Checkpoint(state=kind == "model_call_end")
                elif kind == "model_call_end" and tools:
                    yield Checkpoint(state=True)
        except BaseException as exc:
            if not failures.by_agent(exc):
                raise  # stopped: the caller's interrupt, or its reader gone
            if ended and isinstance(exc, AgentReplyError):
                # A remote agent's failed reply (a hosted `RemoteAgent`): its
                # own events and message ended it, with the remote's error.
                failures.log_remote(getattr(agent, "name", "?"), exc)
                raise AgentReplyError(exc.error_type, exc.message) from None
            failures.log(getattr(agent, "name", "?"), exc)
            error_type = failures.classify(exc)
            for item in self._failed(agent, session_id, seen, error_type):
                yield item
            raise AgentReplyError(error_type, failures.MESSAGES[error_type]) from None

    def _failed(self, agent: Any, session_id: str, seen: list[Any], error_type: str) -> list[Item]:
        """The end of a reply that raised: its start (if it had none), its end
        with the error, and the message its events built."""
        reply_id = next(
            (event.reply_id for event in seen if hasattr(event, "reply_id")),
            getattr(getattr(agent, "state", None), "reply_id", None) or uuid.uuid4().hex,
        )
        name = getattr(agent, "name", "")
        ending = []
        if not seen:
            ending.append(
                self._event.ReplyStartEvent(session_id=session_id, reply_id=reply_id, name=name)
            )
        error = self._types.ErrorInfo(type=error_type, message=failures.MESSAGES[error_type])
        ending.append(
            self._event.ReplyEndEvent(
                session_id=session_id, reply_id=reply_id, finished_reason="error", error=error
            )
        )
        msg = self._msg.AssistantMsg(name=name, content=[], id=reply_id)
        for event in (*seen, *ending):
            msg.append_event(event)
        return [
            *(interop.event_from_agentscope(event) for event in ending),
            interop.from_agentscope(msg),
        ]

    async def take_over(
        self, agent: Any, session_id: str, inputs: ReplyInputs, taken: Taken
    ) -> AsyncIterator[Item | Checkpoint]:
        """The rest of a reply another replica left (see `Hosting`): the
        events it left open, closed; then, from its last checkpoint (or,
        after an answer's tools ran, the state it answered) with each of its
        tool calls given the result the log kept, or an interrupted one (a
        tool is never run twice), the reply going on; or, with nothing run,
        the reply run again from its request. Its events keep its id."""
        events = list(taken.events)
        if taken.checkpoint is not None:
            self.load_state(agent, taken.checkpoint)
            call = _model_call_end(events) + 1
            self._keep_blocks(agent, taken.reply_id, events[:call])
            events = events[call:]
        for event in _closing(taken.reply_id, events):
            yield event
        if taken.checkpoint is None and not any(_tool_result(event) for event in events):
            native = inputs.native  # nothing ran but the model: run it again
        else:
            for result in self._results(agent, taken.reply_id, events):
                yield result
            native = None
        context = None
        if native is None:
            # The reply goes on from its state, in its own context, its round done.
            context = agent.state.reply_context
            context.cur_iter += 1
        replying = self._replying(agent, session_id, native, inputs.schema, taken.reply_id, context)
        async for item in replying:
            if isinstance(item, pb.AgentEvent) and item.HasField("reply_start"):
                continue  # its caller had its start
            yield item

    def _keep_blocks(self, agent: Any, reply_id: str, events: list[pb.AgentEvent]) -> None:
        """The model call's blocks into the agent's context, as the agent
        keeps them once the call ends (`events`: the call's)."""
        msg = self._msg.AssistantMsg(name=agent.name, content=[], id=reply_id)
        for event in events:
            msg.append_event(interop.event_to_agentscope(event))
        agent.state.append_context(agent.name, list(msg.content))
        if msg.usage is not None:
            agent.state.context[-1].append_usage(msg.usage)

    def _results(
        self, agent: Any, reply_id: str, events: list[pb.AgentEvent]
    ) -> list[pb.AgentEvent]:
        """Each tool call the agent's last message waits on, given the result
        the log kept (`events`), or an interrupted one: its events, which
        the caller has not had."""
        kept = self._msg.AssistantMsg(name=agent.name, content=[], id=reply_id)
        for event in events:
            if _tool_result(event):
                kept.append_event(interop.event_to_agentscope(event))
        results = {block.id: block for block in kept.get_content_blocks("tool_result")}
        started = set(results)
        done = self._msg.ToolResultState.RUNNING
        last = agent.state.context[-1]
        out: list[pb.AgentEvent] = []
        for call in last.get_content_blocks("tool_call"):
            if call.state == self._msg.ToolCallState.FINISHED:
                continue
            result = results.get(call.id)
            if result is None or result.state == done:
                result, events_of = _interrupted(self._msg, reply_id, call, call.id in started)
                out.extend(events_of)
            agent.state.append_context(agent.name, [result])
            call.state = self._msg.ToolCallState.FINISHED
        return out

    async def observe(self, agent: Any, msgs: list[Any]) -> None:
        await agent.observe(msgs)

    def save_state(self, agent: Any, known: list[Any]) -> SavedState | None:
        """The agent's `AgentState` as stored: its context as `Msg`s (the
        2.x dialect, exact), the rest as 2.x dumps it; None for an agent
        without one (it keeps nothing between calls). `known` holds what the
        session's last save converted: a message unchanged since is not
        dumped or converted again (`context.Saver`)."""
        state = getattr(agent, "state", None)
        if not callable(getattr(state, "model_dump", None)):
            return None
        rest, context = self._saver.save(state, known)
        return SavedState(
            state_pb2.SessionState(framework_major=2, rest_json=_json.dumps_stored(rest)), context
        )

    def load_state(self, agent: Any, stored: state_pb2.SessionState) -> None:
        """Give the agent a stored state, in place: the agent keeps the
        objects it holds (its permission engine holds the state's permission
        context), their fields take the stored values."""
        if stored.framework_major != 2:
            raise ValueError(f"written by an AgentScope {stored.framework_major}.x agent")
        dump = _json.loads(stored.rest_json, "rest_json")
        dump["context"] = [to_dict(msg, "agentscope2") for msg in stored.context]
        _assign(agent.state, type(agent.state).model_validate(dump))

    async def describe(self, agent: Any) -> service_pb.DescribeResponse:
        formatter = getattr(getattr(agent, "model", None), "formatter", None)
        types = [t for t in getattr(formatter, "input_types", []) if t != "application/x-thinking"]
        toolkit = getattr(agent, "toolkit", None)
        schemas = await toolkit.get_tool_schemas() if toolkit is not None else []
        return service_pb.DescribeResponse(
            name=getattr(agent, "name", ""),
            framework=self.framework,
            input_media_types=types or ["text/plain"],
            output_media_types=["text/plain"],
            tools=[_tool(schema) for schema in schemas],
            events=_EVENTS,
            answers=_ANSWERS,
            structured_output=True,
        )


def _with_defaults(msg: Msg) -> Msg:
    """`msg` with the id and creation time 2.x gives a message that has none
    (a client in another language may well send neither)."""
    if msg.HasField("id") and msg.timestamp:
        return msg
    filled = Msg()
    filled.CopyFrom(msg)
    if not filled.HasField("id"):
        filled.id = uuid.uuid4().hex
    if not filled.timestamp:
        filled.timestamp = now()
    return filled


def _tool(schema: Mapping[str, Any]) -> service_pb.AgentTool:
    function = schema.get("function", {})
    return service_pb.AgentTool(
        name=function.get("name", ""),
        description=function.get("description", ""),
        input_schema_json=_json.dumps(function.get("parameters", {}), "parameters"),
    )


def _assign(target: Any, source: Any) -> None:
    """`target`'s fields take `source`'s values, nested models in place."""
    for name in type(source).model_fields:
        value, current = getattr(source, name), getattr(target, name, None)
        if type(current) is type(value) and hasattr(type(value), "model_fields"):
            _assign(current, value)
        else:
            setattr(target, name, value)


def _tool_result(event: pb.AgentEvent) -> bool:
    return str(event.WhichOneof("event")).startswith("tool_result_")


def _model_call_end(events: list[pb.AgentEvent]) -> int:
    """Where the first model call of `events` ends."""
    for index, event in enumerate(events):
        if event.HasField("model_call_end"):
            return index
    raise ValueError("a checkpoint follows a model call's end, and the log has none")


def _closing(reply_id: str, events: list[pb.AgentEvent]) -> list[pb.AgentEvent]:
    """The ends of what `events` started and did not end, innermost first (a
    model call cut short ends interrupted): a caller folding the events
    into a message finds each block closed."""
    open_: dict[tuple[str, str], pb.AgentEvent] = {}
    for event in events:
        kind = str(event.WhichOneof("event"))
        body = getattr(event, kind)
        if kind in _ENDS:
            end, key = _ENDS[kind]
            open_[end, getattr(body, key) if key else ""] = event
        elif kind in _ENDED_BY:
            key = _ENDED_BY[kind]
            open_.pop((kind, getattr(body, key) if key else ""), None)
    closing = []
    for (end, name), start in reversed(open_.items()):
        fields: dict[str, Any] = {"reply_id": reply_id}
        key = _ENDS[str(start.WhichOneof("event"))][1]
        if key:
            fields[key] = name
        else:
            fields["finished_reason"] = FinishedReason.FINISHED_REASON_INTERRUPTED
        closing.append(new_event(end, **fields))
    return closing


def _interrupted(
    messages: Any, reply_id: str, call: Any, started: bool
) -> tuple[Any, list[pb.AgentEvent]]:
    """An interrupted result of `call`, and its events (its start if the log
    has none)."""
    events = (
        []
        if started
        else [
            new_event(
                "tool_result_start",
                reply_id=reply_id,
                tool_call_id=call.id,
                tool_call_name=call.name,
            )
        ]
    )
    events.append(
        new_event(
            "tool_result_text_delta", reply_id=reply_id, tool_call_id=call.id, delta=_INTERRUPTED
        )
    )
    events.append(
        new_event(
            "tool_result_end",
            reply_id=reply_id,
            tool_call_id=call.id,
            state=ToolResultState.TOOL_RESULT_STATE_INTERRUPTED,
        )
    )
    result = messages.ToolResultBlock(
        id=call.id,
        name=call.name,
        output=_INTERRUPTED,
        state=messages.ToolResultState.INTERRUPTED,
    )
    return result, events
