"""A reply's `AgentEvent`s as an AG-UI run's events (docs/agui.md).

`RunStream` turns one call's responses (its events, then its end: the final
message or the failure) into AG-UI events, in order. One handler per field of the
`AgentEvent.event` oneof (`HANDLERS`, keyed by the field name). What AG-UI
has a kind for becomes that kind; the rest become `CUSTOM` events named
after the field, whose value is the 2.x event's JSON (without nulls), as
AgentScope 2.x's own `AGUIProtocolMiddleware` writes them. A turn that stops
to ask its caller ends with a `RUN_FINISHED` whose outcome is interrupts
(`interrupts`); a turn that goes on after an answer has no `reply_start`, so
its `RUN_STARTED` comes from the run's own thread and run ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder

from .._generated.agentscope.agent.v1 import events_pb2 as pb
from .._generated.agentscope.message.v1.message_pb2 import FinishedReason
from ..errors import MessageFormatError
from ..events import event_to_dict
from .interrupts import interrupts

__all__ = ["HANDLERS", "RunStream", "encode"]

_ENCODER: Final = EventEncoder()


def encode(event: BaseEvent) -> str:
    """One AG-UI event as its server-sent event (`data: {...}`), by ag-ui-protocol."""
    return _ENCODER.encode(event)


class RunStream:
    """The AG-UI events of one run: a reply, or the part of it after an answer.

    `thread_id` and `run_id` name the run when its events do not (a run that
    answers an earlier one starts without `reply_start`).
    """

    def __init__(self, thread_id: str = "", run_id: str = "") -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.started = False
        self.finished = False
        self.asking: pb.AgentEvent | None = None
        self._model = "model_call"
        self._results: dict[str, list[str]] = {}

    def events(self, event: pb.AgentEvent) -> list[BaseEvent]:
        """The AG-UI events for one of the reply's events."""
        kind = event.WhichOneof("event")
        if kind is None:
            raise MessageFormatError("event", "no event set (a kind this schema does not know?)")
        if self.finished:
            raise MessageFormatError("event", f"{kind} after the run finished")
        out = self._start(getattr(event, kind)) if kind != "reply_start" else []
        return out + HANDLERS[kind](self, event)

    def finish(self) -> list[BaseEvent]:
        """The run's last events once the call ended (its final message came):
        `RUN_FINISHED`, with the interrupts if it asked; none after `reply_end`."""
        if self.finished:
            return []
        out = self._start(None)
        self.finished = True
        asked = interrupts(self.asking) if self.asking is not None else []
        if asked:
            return [*out, self._finished(outcome=RunFinishedInterruptOutcome(interrupts=asked))]
        return [*out, self._finished()]

    def fail(self, message: str, code: str | None = None) -> list[BaseEvent]:
        """The run's end when the reply failed without a `reply_end`."""
        if self.finished:
            return []
        out = self._start(None)
        self.finished = True
        return [*out, RunErrorEvent(message=message, code=code)]

    def _start(self, body: Any) -> list[BaseEvent]:
        if self.started:
            return []
        self.started = True
        self.run_id = self.run_id or str(getattr(body, "reply_id", ""))
        return [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def _finished(self, **fields: Any) -> RunFinishedEvent:
        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, **fields)


Handler = Callable[[RunStream, pb.AgentEvent], list[BaseEvent]]


# Keys whose value is free JSON in 2.x (a dict, not a model): its nulls are data.
_FREE_JSON: Final = frozenset({"metadata", "value", "input"})


def _drop_nulls(value: Any) -> Any:
    """2.x's `model_dump(exclude_none=True)` of a JSON dump: no unset model field."""
    if isinstance(value, dict):
        return {
            key: item if key in _FREE_JSON else _drop_nulls(item)
            for key, item in value.items()
            if item is not None
        }
    if isinstance(value, list):
        return [_drop_nulls(item) for item in value]
    return value


def _custom(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    name = event.WhichOneof("event") or ""
    return [CustomEvent(name=name, value=_drop_nulls(event_to_dict(event)))]


def _reply_start(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.reply_start
    run.thread_id = run.thread_id or body.session_id
    return run._start(body)


def _reply_end(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.reply_end
    run.thread_id = run.thread_id or body.session_id
    run.run_id = run.run_id or body.reply_id
    run.finished = True
    reason = body.finished_reason
    if reason == FinishedReason.FINISHED_REASON_EXCEED_MAX_ITERS:
        message = "the reply stopped at its maximum number of reasoning-acting iterations"
        return [RunErrorEvent(message=message, code="exceed_max_iters")]
    if reason == FinishedReason.FINISHED_REASON_ERROR:
        error = event_to_dict(event)["error"] or {}  # 2.x's error type names the code
        return [RunErrorEvent(message=error.get("message", ""), code=error.get("type"))]
    if reason == FinishedReason.FINISHED_REASON_INTERRUPTED:
        return [run._finished(outcome=RunFinishedCancelledOutcome())]
    return [run._finished()]


def _model_call_start(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    run._model = event.model_call_start.model_name
    return [StepStartedEvent(step_name=run._model)]


def _model_call_end(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    return [StepFinishedEvent(step_name=run._model)]


def _text_start(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    return [TextMessageStartEvent(message_id=event.text_block_start.block_id, role="assistant")]


def _text_delta(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.text_block_delta
    return [TextMessageContentEvent(message_id=body.block_id, delta=body.delta)]


def _text_end(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    return [TextMessageEndEvent(message_id=event.text_block_end.block_id)]


def _thinking_start(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    block = event.thinking_block_start.block_id
    return [
        ReasoningStartEvent(message_id=block),
        ReasoningMessageStartEvent(message_id=block, role="reasoning"),
    ]


def _thinking_delta(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.thinking_block_delta
    return [ReasoningMessageContentEvent(message_id=body.block_id, delta=body.delta)]


def _thinking_end(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    block = event.thinking_block_end.block_id
    return [ReasoningMessageEndEvent(message_id=block), ReasoningEndEvent(message_id=block)]


def _tool_call_start(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.tool_call_start
    return [
        ToolCallStartEvent(
            tool_call_id=body.tool_call_id,
            tool_call_name=body.tool_call_name,
            parent_message_id=body.reply_id,
        )
    ]


def _tool_call_delta(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.tool_call_delta
    return [ToolCallArgsEvent(tool_call_id=body.tool_call_id, delta=body.delta)]


def _tool_call_end(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    return [ToolCallEndEvent(tool_call_id=event.tool_call_end.tool_call_id)]


def _tool_result_text(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.tool_result_text_delta
    run._results.setdefault(body.tool_call_id, []).append(body.delta)
    return _custom(run, event)


def _tool_result_end(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.tool_result_end
    text = "".join(run._results.pop(body.tool_call_id, []))
    state = event_to_dict(event)["state"]  # 2.x's name of the state
    return [
        ToolCallResultEvent(
            tool_call_id=body.tool_call_id,
            message_id=f"{body.reply_id}:{body.tool_call_id}",
            content=text or state,
            role="tool",
        )
    ]


def _asking(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    run.asking = event
    return _custom(run, event)


def _custom_event(run: RunStream, event: pb.AgentEvent) -> list[BaseEvent]:
    body = event.custom
    return [CustomEvent(name=body.name, value=event_to_dict(event)["value"])]


HANDLERS: Final[dict[str, Handler]] = {
    "reply_start": _reply_start,
    "reply_end": _reply_end,
    "model_call_start": _model_call_start,
    "model_call_end": _model_call_end,
    "text_block_start": _text_start,
    "text_block_delta": _text_delta,
    "text_block_end": _text_end,
    "data_block_start": _custom,
    "data_block_delta": _custom,
    "data_block_end": _custom,
    "thinking_block_start": _thinking_start,
    "thinking_block_delta": _thinking_delta,
    "thinking_block_end": _thinking_end,
    "hint_block": _custom,
    "tool_call_start": _tool_call_start,
    "tool_call_delta": _tool_call_delta,
    "tool_call_end": _tool_call_end,
    "tool_result_start": _custom,
    "tool_result_text_delta": _tool_result_text,
    "tool_result_data_delta": _custom,
    "tool_result_end": _tool_result_end,
    "exceed_max_iters": _custom,
    "require_user_confirm": _asking,
    "require_external_execution": _asking,
    "user_confirm_result": _custom,
    "user_interrupt": _custom,
    "external_execution_result": _custom,
    "custom": _custom_event,
}
