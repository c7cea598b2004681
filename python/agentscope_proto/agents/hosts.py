"""How a served agent is driven: AgentScope 2.x agents, and 1.x agents through
an adapter.

A `Hosting` speaks one AgentScope major version: it reads a request's
messages and answer into that version's objects (refusing, before any agent
sees them, what the agent would refuse), checks that a session can take an
answer, runs a reply as proto items (`AgentEvent`s as they happen, the reply's
`Msg` last) and describes an agent. It holds no agent: the session passes its
own. AgentScope is imported here only, and only where the served agent needs
it.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .. import _json, interop
from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.agent.v1 import events_pb2 as pb
from .._generated.agentscope.message.v1.message_pb2 import FinishedReason, Msg
from ..errors import AgentReplyError, MessageFormatError, SessionStateError
from ..service._rpc import log_failure

__all__ = ["Hosting", "ReplyInputs", "hosting_for"]

Item = pb.AgentEvent | Msg
_ANSWERS = [
    field.name for field in service_pb.ReplyRequest.DESCRIPTOR.oneofs_by_name["answer"].fields
]
_EVENT_KINDS = [field.name for field in pb.AgentEvent.DESCRIPTOR.oneofs_by_name["event"].fields]


@dataclass(frozen=True)
class ReplyInputs:
    """A reply's inputs as the agent takes them: messages or an answer (or
    neither: go on), and a structured-output JSON schema."""

    msgs: list[Any] | None
    answer: Any
    schema: dict[str, Any] | None

    @property
    def native(self) -> Any:
        """What the agent's reply is called with."""
        return self.answer if self.answer is not None else self.msgs


class Hosting(Protocol):
    """Drives agents of one AgentScope major version (see the module doc)."""

    framework: str

    def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]: ...

    def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs: ...

    def bind(self, agent: Any, session_id: str) -> None: ...

    def check(self, agent: Any, inputs: ReplyInputs) -> None: ...

    def reply(self, agent: Any, session_id: str, inputs: ReplyInputs) -> AsyncIterator[Item]: ...

    async def observe(self, agent: Any, msgs: list[Any]) -> None: ...

    async def describe(self, agent: Any) -> service_pb.DescribeResponse: ...


def _version() -> str:
    return importlib.metadata.version("agentscope")


def _structured_schema(request: service_pb.ReplyRequest) -> dict[str, Any] | None:
    if not request.HasField("structured_schema_json"):
        return None
    schema = _json.loads(request.structured_schema_json, "structured_schema_json")
    if not isinstance(schema, dict):
        raise MessageFormatError("structured_schema_json", "expected a JSON Schema object")
    return schema


# --- Failures: what a reply that raised tells the caller ------------------------

# HTTP statuses an upstream service answered with -> AgentScope 2.x error type.
_STATUSES = {401: "authentication", 403: "permission", 429: "rate_limit"}
# Exception classes (by name, so that no provider SDK is imported) that mean
# the network failed: httpx, openai/anthropic, aiohttp.
_NETWORK = frozenset(
    {
        "TransportError",
        "APIConnectionError",
        "APITimeoutError",
        "ClientConnectionError",
        "ClientConnectorError",
    }
)
# The text a caller sees per type: generic, so that nothing of the server's
# internals (a provider's message, a credential, a path) reaches it.
_MESSAGES = {
    "authentication": "The agent's model service refused its credentials.",
    "permission": "The agent's model service denied it access.",
    "rate_limit": "The agent's model service is rate limited; try again later.",
    "invalid_request": "The agent's model service refused the request as invalid.",
    "upstream": "The agent's model service failed.",
    "connection": "The agent could not reach its model service.",
    "internal": "The agent failed unexpectedly.",
}


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc`, what it wraps (`__cause__`/`__context__`) and, in exception
    groups, their members: a provider's 401 often arrives wrapped."""
    seen: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop()
        if any(current is other for other in seen):
            continue
        seen.append(current)
        members = getattr(current, "exceptions", None)  # an exception group
        if isinstance(members, tuple):
            pending.extend(members)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return seen


def classify(exc: BaseException) -> str:
    """AgentScope 2.x's error type for a reply that raised `exc`."""
    causes = _causes(exc)
    for cause in causes:
        for status in (
            getattr(cause, "status_code", None),
            getattr(cause, "status", None),
            getattr(getattr(cause, "response", None), "status_code", None),
        ):
            if isinstance(status, int) and not isinstance(status, bool):
                if status >= 500:
                    return "upstream"
                return _STATUSES.get(status, "invalid_request")
    for cause in causes:
        if isinstance(cause, TimeoutError | ConnectionError) or any(
            cls.__name__ in _NETWORK for cls in type(cause).__mro__
        ):
            return "connection"
    return "internal"


def _log_failure(agent_name: str, exc: BaseException) -> None:
    # As every unexpected error: repr() (a provider's message may hold
    # newlines that would forge log lines) and the stack's frames.
    log_failure(f"the reply of agent {agent_name!r}", exc)


# --- AgentScope 2.x ---------------------------------------------------------------


class AgentScope2:
    """Hosting of AgentScope 2.x agents: anything with 2.x's `reply_stream`,
    `agentscope.agent.Agent` first."""

    def __init__(self) -> None:
        self.framework = f"agentscope {_version()}"
        self._msg = importlib.import_module("agentscope.message")
        self._event = importlib.import_module("agentscope.event")
        self._types = importlib.import_module("agentscope.types")

    def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]:
        """2.x `Msg` objects of the messages an agent may take as input: user
        or assistant, without tool calls, tool results or thinking (what
        2.x's `Agent` refuses)."""
        out = []
        for index, msg in enumerate(msgs):
            path = f"{field}[{index}]"
            try:
                native = interop.to_agentscope(_with_defaults(msg))
            except MessageFormatError as exc:
                raise MessageFormatError(
                    f"{path}.{exc.path}" if exc.path else path, exc.reason
                ) from None
            if native.role == "system":
                raise MessageFormatError(
                    f"{path}.role", "an agent takes user and assistant messages, not system ones"
                )
            for position, block in enumerate(native.content):
                if block.type in ("tool_call", "tool_result", "thinking"):
                    raise MessageFormatError(
                        f"{path}.content[{position}]",
                        f"an agent's input holds no {block.type} blocks",
                    )
            out.append(native)
        return out

    def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs:
        which = request.WhichOneof("answer")
        if which is not None and request.msgs:
            raise MessageFormatError(which, "an answer goes without messages")
        answer = None
        if which is not None:
            event = pb.AgentEvent(id=uuid.uuid4().hex, created_at=_now())
            getattr(event, which).CopyFrom(getattr(request, which))
            answer = _native_event(event, which)
        msgs = self.read_msgs(request.msgs, "msgs") if request.msgs else None
        return ReplyInputs(msgs, answer, _structured_schema(request))

    def bind(self, agent: Any, session_id: str) -> None:
        state = getattr(agent, "state", None)
        if state is not None and hasattr(state, "session_id"):
            state.session_id = session_id

    def check(self, agent: Any, inputs: ReplyInputs) -> None:
        """What 2.x's `Agent` would raise on, as a precondition: an answer the
        agent is not waiting for, or no answer while it waits."""
        state = getattr(agent, "state", None)
        awaiting = getattr(state, "get_awaiting_tool_calls", None)
        if awaiting is None:
            return  # not an `Agent`: it checks for itself
        waiting = {call.id: call.state for call in awaiting(agent.name)}
        answer = inputs.answer
        if answer is None:
            if waiting:
                raise SessionStateError(
                    "msgs",
                    f"the session waits for an answer about {len(waiting)} tool call(s): "
                    "send user_confirm_result, external_execution_result or user_interrupt",
                )
            return
        kind = answer.type.lower()
        if kind == "user_interrupt":
            return  # 2.x takes it in any state (a no-op when nothing waits)
        wanted, ids, what = (
            ("asking", [r.tool_call.id for r in answer.confirm_results], "a confirmation")
            if kind == "user_confirm_result"
            else ("submitted", [r.id for r in answer.execution_results], "external results")
        )
        if wanted not in waiting.values():
            raise SessionStateError(kind, f"the session is not waiting for {what}")
        for index, call_id in enumerate(ids):
            if waiting.get(call_id) != wanted:
                field = "confirm_results" if wanted == "asking" else "execution_results"
                raise SessionStateError(
                    f"{kind}.{field}[{index}]", f"the session is not waiting on call {call_id!r}"
                )

    async def reply(self, agent: Any, session_id: str, inputs: ReplyInputs) -> AsyncIterator[Item]:
        seen: list[Any] = []
        try:
            async for item in agent.reply_stream(
                inputs.native, structured_schema=inputs.schema, yield_final_msg=True
            ):
                if isinstance(item, self._msg.Msg):
                    yield interop.from_agentscope(item)
                else:
                    seen.append(item)
                    yield interop.event_from_agentscope(item)
        except Exception as exc:
            _log_failure(getattr(agent, "name", "?"), exc)
            error_type = classify(exc)
            for item in self._failed(agent, session_id, seen, error_type):
                yield item
            raise AgentReplyError(error_type, _MESSAGES[error_type]) from None

    def _failed(self, agent: Any, session_id: str, seen: list[Any], error_type: str) -> list[Item]:
        """The end of a reply that raised, as 2.x's app reports one: the
        reply's start (if it had none yet), its end with the error, and the
        message its events built."""
        state = getattr(agent, "state", None)
        reply_id = next(
            (event.reply_id for event in seen if hasattr(event, "reply_id")),
            getattr(state, "reply_id", None) or uuid.uuid4().hex,
        )
        name = getattr(agent, "name", "")
        events = self._event
        ending = []
        if not seen:
            ending.append(
                events.ReplyStartEvent(session_id=session_id, reply_id=reply_id, name=name)
            )
        error = self._types.ErrorInfo(type=error_type, message=_MESSAGES[error_type])
        ending.append(
            events.ReplyEndEvent(
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
            events=[kind for kind in _EVENT_KINDS if kind not in _ANSWERS],
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
        filled.timestamp = _now()
    return filled


def _native_event(event: pb.AgentEvent, path: str) -> Any:
    try:
        return interop.event_to_agentscope(event)
    except MessageFormatError as exc:
        raise MessageFormatError(f"{path}.{exc.path}" if exc.path else path, exc.reason) from None


def _tool(schema: Mapping[str, Any]) -> service_pb.AgentTool:
    function = schema.get("function", {})
    return service_pb.AgentTool(
        name=function.get("name", ""),
        description=function.get("description", ""),
        input_schema_json=_json.dumps(function.get("parameters", {}), "parameters"),
    )


def _now() -> str:
    return datetime.now().isoformat()


# --- AgentScope 1.x ---------------------------------------------------------------


class AgentScope1:
    """Hosting of AgentScope 1.x agents (`agentscope.agent.AgentBase`): the
    chunks the agent prints stream as text and thinking block events, its
    final message comes last. 1.x agents ask nothing, so no answers."""

    def __init__(self) -> None:
        self.framework = f"agentscope {_version()}"

    def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]:
        out = []
        for index, msg in enumerate(msgs):
            try:
                out.append(interop.to_agentscope(msg))
            except MessageFormatError as exc:
                path = f"{field}[{index}]"
                raise MessageFormatError(
                    f"{path}.{exc.path}" if exc.path else path, exc.reason
                ) from None
        return out

    def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs:
        which = request.WhichOneof("answer")
        if which is not None:
            raise MessageFormatError(which, "an AgentScope 1.x agent asks nothing to answer")
        if request.HasField("structured_schema_json"):
            raise MessageFormatError(
                "structured_schema_json", "this AgentScope 1.x agent takes no JSON schema"
            )
        return ReplyInputs(self.read_msgs(request.msgs, "msgs") or None, None, None)

    def bind(self, agent: Any, session_id: str) -> None:
        # The chunks the agent prints go to the reply's queue, not to stdout.
        agent.set_console_output_enabled(False)

    def check(self, agent: Any, inputs: ReplyInputs) -> None:
        return None

    async def reply(self, agent: Any, session_id: str, inputs: ReplyInputs) -> AsyncIterator[Item]:
        printed: asyncio.Queue[Any] = asyncio.Queue()
        agent.set_msg_queue_enabled(True, printed)
        text = _PrintedText(uuid.uuid4().hex)
        yield text.start(session_id, agent.name)
        call = asyncio.ensure_future(agent(inputs.msgs))
        reason = "completed"
        try:
            async for msg, last, _ in _printed(call, printed):
                for event in text.chunk(msg, last):
                    yield event
            final = call.result()
        except asyncio.CancelledError:
            # 1.x's own interrupt: its `__call__` catches the cancellation
            # and answers with `handle_interrupt`'s message.
            call.cancel()
            final = await asyncio.shield(call)
            reason = "interrupted"
        except Exception as exc:
            _log_failure(agent.name, exc)
            error_type = classify(exc)
            raise AgentReplyError(error_type, _MESSAGES[error_type]) from None
        finally:
            agent.set_msg_queue_enabled(False)
        for item in text.end(session_id, reason, final):
            yield item

    async def observe(self, agent: Any, msgs: list[Any]) -> None:
        await agent.observe(msgs)

    async def describe(self, agent: Any) -> service_pb.DescribeResponse:
        return service_pb.DescribeResponse(
            name=agent.name,
            framework=self.framework,
            input_media_types=["text/plain"],
            output_media_types=["text/plain"],
            events=list(_PrintedText.EVENTS),
        )


async def _printed(call: asyncio.Future[Any], printed: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    """What the agent prints while `call` runs, then what is left."""
    while not call.done():
        getter = asyncio.ensure_future(printed.get())
        done, _ = await asyncio.wait({call, getter}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            yield getter.result()
        else:
            getter.cancel()  # a cancelled Queue.get loses nothing
    while not printed.empty():
        yield printed.get_nowait()


class _PrintedText:
    """A 1.x reply's printed messages as block events. 1.x prints each
    message whole so far (with `last` on its final print), so each print's new
    text is what follows the text printed before."""

    EVENTS = (
        "reply_start",
        "text_block_start",
        "text_block_delta",
        "text_block_end",
        "thinking_block_start",
        "thinking_block_delta",
        "thinking_block_end",
        "reply_end",
    )
    _KINDS = ("text", "thinking")

    def __init__(self, reply_id: str) -> None:
        self.reply_id = reply_id
        # (message id, block index) -> (block id, kind, text printed so far)
        self._blocks: dict[tuple[str, int], tuple[str, str, str]] = {}

    def _event(self, kind: str, **fields: Any) -> pb.AgentEvent:
        event = pb.AgentEvent(id=uuid.uuid4().hex, created_at=_now())
        body = getattr(event, kind)
        body.SetInParent()
        for name, value in fields.items():
            setattr(body, name, value)
        return event

    def start(self, session_id: str, name: str) -> pb.AgentEvent:
        return self._event("reply_start", session_id=session_id, reply_id=self.reply_id, name=name)

    def chunk(self, msg: Any, last: bool) -> list[pb.AgentEvent]:
        events = []
        content = (
            msg.content
            if isinstance(msg.content, list)
            else [{"type": "text", "text": msg.content}]
        )
        for index, block in enumerate(content):
            kind = block.get("type", "")
            if kind not in self._KINDS:
                continue
            text = block.get(kind, "") or ""
            key = (msg.id, index)
            block_id, _, before = self._blocks.get(key, (uuid.uuid4().hex, kind, ""))
            ids = {"reply_id": self.reply_id, "block_id": block_id}
            if key not in self._blocks:
                events.append(self._event(f"{kind}_block_start", **ids))
            if text.startswith(before) and len(text) > len(before):
                events.append(self._event(f"{kind}_block_delta", **ids, delta=text[len(before) :]))
            self._blocks[key] = (block_id, kind, text)
        if last:
            events.extend(self._close(msg.id))
        return events

    def _close(self, msg_id: str | None = None) -> list[pb.AgentEvent]:
        events = []
        for key in [key for key in self._blocks if msg_id is None or key[0] == msg_id]:
            block_id, kind, _ = self._blocks.pop(key)
            events.append(
                self._event(f"{kind}_block_end", reply_id=self.reply_id, block_id=block_id)
            )
        return events

    def end(self, session_id: str, reason: str, final: Any) -> list[Item]:
        events: list[Item] = list(self._close())
        events.append(
            self._event(
                "reply_end",
                session_id=session_id,
                reply_id=self.reply_id,
                finished_reason=FinishedReason.Value(f"FINISHED_REASON_{reason.upper()}"),
            )
        )
        if final is not None:
            events.append(interop.from_agentscope(final))
        return events


# --- Which --------------------------------------------------------------------------

_HOSTINGS: dict[int, Callable[[], Hosting]] = {2: AgentScope2, 1: AgentScope1}


def hosting_for(agent: Any) -> Hosting:
    """The hosting of `agent`'s AgentScope version; `TypeError` if it is not
    an agent of the installed AgentScope."""
    try:
        major: int | None = interop.agentscope_major()
    except ImportError:
        major = None  # no AgentScope: nothing here is an agent
    if major == 2 and callable(getattr(agent, "reply_stream", None)):
        return _HOSTINGS[2]()
    if major == 1 and isinstance(agent, importlib.import_module("agentscope.agent").AgentBase):
        return _HOSTINGS[1]()
    installed = "AgentScope is not installed" if major is None else f"AgentScope {major}.x"
    kind = f"{type(agent).__module__}.{type(agent).__qualname__}"
    raise TypeError(f"expected an AgentScope agent ({installed}), got a {kind}")
