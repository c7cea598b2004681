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
from ..._generated.agentscope.message.v1.message_pb2 import Msg
from ...dialects import from_dict, to_dict
from ...errors import AgentReplyError, MessageFormatError, SessionStateError
from . import failures
from .protocol import Item, ReplyInputs, now, read_each, structured_schema

__all__ = ["AgentScope2"]

_ANSWERS = [
    field.name for field in service_pb.ReplyRequest.DESCRIPTOR.oneofs_by_name["answer"].fields
]
_EVENTS = [
    field.name
    for field in pb.AgentEvent.DESCRIPTOR.oneofs_by_name["event"].fields
    if field.name not in _ANSWERS
]
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

    def __init__(self) -> None:
        self.framework = f"agentscope {importlib.metadata.version('agentscope')}"
        self._msg = importlib.import_module("agentscope.message")
        self._event = importlib.import_module("agentscope.event")
        self._types = importlib.import_module("agentscope.types")

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
        return ReplyInputs(msgs, answer, structured_schema(request))

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

    async def reply(self, agent: Any, session_id: str, inputs: ReplyInputs) -> AsyncIterator[Item]:
        seen: list[Any] = []
        ended = False  # the agent gave its reply's message
        try:
            async for item in agent.reply_stream(
                inputs.native, structured_schema=inputs.schema, yield_final_msg=True
            ):
                if isinstance(item, self._msg.Msg):
                    ended = True
                    yield interop.from_agentscope(item)
                else:
                    seen.append(item)
                    yield interop.event_from_agentscope(item)
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

    async def observe(self, agent: Any, msgs: list[Any]) -> None:
        await agent.observe(msgs)

    def save_state(
        self, agent: Any, known: dict[str, tuple[Any, Msg]]
    ) -> state_pb2.SessionState | None:
        """The agent's `AgentState` as stored: its context as `Msg`s (the
        2.x dialect, exact), the rest as 2.x dumps it; None for an agent
        without one (it keeps nothing between calls). `known` holds the
        messages the last save converted, by id, with their dumps: one that
        dumps the same is not converted again (a context grows at its end),
        and it is left holding this save's."""
        dump_state = getattr(getattr(agent, "state", None), "model_dump", None)
        if not callable(dump_state):
            return None
        dump = dump_state(mode="json")
        context = [_converted(msg, known) for msg in dump.pop("context", [])]
        kept = {msg.id for msg in context}
        for stale in [key for key in known if key not in kept]:
            del known[stale]
        return state_pb2.SessionState(
            framework_major=2, context=context, rest_json=_json.dumps(dump)
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


def _converted(dumped: dict[str, Any], known: dict[str, tuple[Any, Msg]]) -> Msg:
    """A context message's `Msg`: the last save's if it dumps the same."""
    key = dumped.get("id")
    seen = known.get(key) if isinstance(key, str) else None
    if seen is not None and seen[0] == dumped:
        return seen[1]
    msg = from_dict(dumped, dialect="agentscope2")
    if isinstance(key, str):
        known[key] = (dumped, msg)
    return msg


def _assign(target: Any, source: Any) -> None:
    """`target`'s fields take `source`'s values, nested models in place."""
    for name in type(source).model_fields:
        value, current = getattr(source, name), getattr(target, name, None)
        if type(current) is type(value) and hasattr(type(value), "model_fields"):
            _assign(current, value)
        else:
            setattr(target, name, value)
