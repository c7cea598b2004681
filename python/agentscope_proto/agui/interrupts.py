"""A reply that stops to ask its caller, as AG-UI interrupts.

An AgentScope 2.x reply that needs a confirmation (`require_user_confirm`) or
a tool run by the caller (`require_external_execution`) parks until the
caller answers. AG-UI says the same with a run that finishes with an
`interrupt` outcome and a next run whose `resume` entries answer it. Each
asked tool call is one interrupt: its `reason` is the asking event's field
name in `AgentEvent.event`, its id that name and the tool call's id, so an
answer finds its call again from the asking event alone.
"""

from __future__ import annotations

from typing import Any, Final

from ag_ui.core import Interrupt

from .._generated.agentscope.agent.v1 import events_pb2 as pb
from .._generated.agentscope.message.v1.message_pb2 import ToolUseBlock
from ..events import ASKING_EVENTS

__all__ = [
    "CONFIRM",
    "EXECUTE",
    "RESPONSE_SCHEMAS",
    "asked_calls",
    "interrupt_id",
    "interrupts",
]

CONFIRM: Final = "require_user_confirm"
EXECUTE: Final = "require_external_execution"

# What a resume entry's payload holds, per interrupt reason (JSON Schema, so a
# frontend can build the form).
RESPONSE_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    CONFIRM: {
        "type": "object",
        "properties": {"confirmed": {"type": "boolean"}},
        "required": ["confirmed"],
    },
    EXECUTE: {
        "type": "object",
        "properties": {
            "output": {"type": "string"},
            "state": {"enum": ["success", "error"]},
        },
        "required": ["output"],
    },
}
_PROMPTS: Final = {
    CONFIRM: "May the agent call {name} with {input}?",
    EXECUTE: "Call {name} with {input} and send its result.",
}


def interrupt_id(reason: str, tool_call_id: str) -> str:
    """The id of the interrupt that asks about one tool call."""
    return f"{reason}:{tool_call_id}"


def asked_calls(asking: pb.AgentEvent) -> tuple[str, list[ToolUseBlock]]:
    """The asking event's kind and the tool calls it asks about."""
    kind = asking.WhichOneof("event")
    if kind not in ASKING_EVENTS:
        raise ValueError(f"not an asking event: {kind}")
    return kind, list(getattr(asking, kind).tool_calls)


def interrupts(asking: pb.AgentEvent) -> list[Interrupt]:
    """One AG-UI interrupt per tool call the event asks about."""
    kind, calls = asked_calls(asking)
    return [
        Interrupt(
            id=interrupt_id(kind, call.id),
            reason=kind,
            message=_PROMPTS[kind].format(name=call.name, input=call.input_json or "{}"),
            tool_call_id=call.id,
            response_schema=RESPONSE_SCHEMAS[kind],
            metadata={"tool_name": call.name},
        )
        for call in calls
    ]
