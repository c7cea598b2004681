"""An AG-UI `RunAgentInput` as the `ReplyRequest` that runs it (docs/agui.md).

The thread is the session and the run id the reply id. AG-UI sends the whole
conversation each time, while a session keeps its own: the new messages are
the user messages after the last message of another role. A run that answers
what the session waits for (`asking`, the `require_user_confirm` or
`require_external_execution` event its last reply ended with) carries the
answer instead: `resume` entries for the run's interrupts (`interrupts`), or,
for calls handed to the caller, AG-UI tool messages answering them. A
cancelled interrupt interrupts the waiting reply. What does not fit raises
`MessageFormatError` naming the field (`resume[0].payload.confirmed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ag_ui.core import ResumeEntry, RunAgentInput, ToolMessage, UserMessage
from pydantic import ValidationError

from .._generated.agentscope.agent.v1 import events_pb2 as pb
from .._generated.agentscope.agent.v1.agent_service_pb2 import ReplyRequest
from .._generated.agentscope.message.v1.message_pb2 import (
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
)
from ..errors import MessageFormatError
from .interrupts import CONFIRM, EXECUTE, asked_calls, interrupt_id
from .messages import blocks_from_parts, msg_from_user_message

__all__ = ["read_run_input", "reply_request"]

_STATES: Final = {
    "success": ToolResultState.TOOL_RESULT_STATE_SUCCESS,
    "error": ToolResultState.TOOL_RESULT_STATE_ERROR,
}


def read_run_input(data: str | bytes | Mapping[str, Any]) -> RunAgentInput:
    """A `RunAgentInput` from its JSON (or the parsed object), validated by
    ag-ui-protocol; `MessageFormatError` naming the first field it refuses."""
    try:
        if isinstance(data, Mapping):
            return RunAgentInput.model_validate(data)
        return RunAgentInput.model_validate_json(data)
    except ValidationError as error:
        first = error.errors()[0]
        path = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
        ).lstrip(".")
        raise MessageFormatError(path, f"AG-UI refuses this: {first['msg']}") from error


def reply_request(run: RunAgentInput, asking: pb.AgentEvent | None = None) -> ReplyRequest:
    """The `ReplyRequest` for an AG-UI run in a session waiting on `asking`
    (None: waiting for nothing)."""
    if not run.thread_id:
        raise MessageFormatError("threadId", "empty: the thread is the session to reply in")
    request = ReplyRequest(session_id=run.thread_id)
    if run.resume:
        _answer(request, run.resume, asking)
        return request
    if asking is not None and asking.WhichOneof("event") == EXECUTE:
        results = _tool_results(run.messages, asking)
        if results:
            answer = request.external_execution_result
            answer.reply_id = asking.require_external_execution.reply_id
            answer.execution_results.extend(results)
            return request
    request.reply_id = run.run_id
    request.msgs.extend(
        msg_from_user_message(message, f"messages[{index}]")
        for index, message in _new_user_messages(run.messages)
    )
    return request


def _new_user_messages(messages: Sequence[Any]) -> list[tuple[int, UserMessage]]:
    """The user messages after the last message of another role, by index."""
    new: list[tuple[int, UserMessage]] = []
    for index, message in enumerate(messages):
        new = [*new, (index, message)] if isinstance(message, UserMessage) else []
    return new


def _answer(request: ReplyRequest, entries: Sequence[ResumeEntry], asking: Any) -> None:
    if asking is None:
        raise MessageFormatError("resume", "nothing to resume: the thread waits for no answer")
    kind, calls = asked_calls(asking)
    reply_id = getattr(asking, kind).reply_id
    by_id = {interrupt_id(kind, call.id): call for call in calls}
    answers = _by_interrupt(entries, by_id)
    if any(entry.status == "cancelled" for entry, _ in answers.values()):
        request.user_interrupt.reply_id = reply_id
        return
    missing = [key for key in by_id if key not in answers]
    if missing:
        raise MessageFormatError("resume", f"interrupts not answered: {', '.join(missing)}")
    _ANSWERS[kind](request, reply_id, [(*answers[key], by_id[key]) for key in by_id])


def _by_interrupt(
    entries: Sequence[ResumeEntry], by_id: dict[str, ToolUseBlock]
) -> dict[str, tuple[ResumeEntry, str]]:
    """Each entry (and its path) by the interrupt it answers."""
    answers: dict[str, tuple[ResumeEntry, str]] = {}
    for index, entry in enumerate(entries):
        path = f"resume[{index}]"
        if entry.interrupt_id not in by_id:
            waiting = ", ".join(by_id) or "nothing"
            raise MessageFormatError(
                f"{path}.interruptId",
                f"no interrupt {entry.interrupt_id!r} (the thread waits for {waiting})",
            )
        if entry.interrupt_id in answers:
            raise MessageFormatError(f"{path}.interruptId", "answered twice")
        answers[entry.interrupt_id] = (entry, path)
    return answers


def _payload(entry: ResumeEntry, path: str) -> dict[str, Any]:
    if not isinstance(entry.payload, dict):
        raise MessageFormatError(f"{path}.payload", "expected an object")
    return entry.payload


def _confirm(
    request: ReplyRequest, reply_id: str, answers: list[tuple[ResumeEntry, str, ToolUseBlock]]
) -> None:
    answer = request.user_confirm_result
    answer.reply_id = reply_id
    for entry, path, call in answers:
        confirmed = _payload(entry, path).get("confirmed")
        if not isinstance(confirmed, bool):
            raise MessageFormatError(f"{path}.payload.confirmed", "expected true or false")
        answer.confirm_results.add(confirmed=confirmed, tool_call=call)


def _execute(
    request: ReplyRequest, reply_id: str, answers: list[tuple[ResumeEntry, str, ToolUseBlock]]
) -> None:
    answer = request.external_execution_result
    answer.reply_id = reply_id
    for entry, path, call in answers:
        payload = _payload(entry, path)
        output, state = payload.get("output"), payload.get("state", "success")
        if not isinstance(output, str):
            raise MessageFormatError(f"{path}.payload.output", "expected a string")
        if state not in _STATES:
            raise MessageFormatError(f"{path}.payload.state", "expected success or error")
        answer.execution_results.add(id=call.id, name=call.name, text=output, state=_STATES[state])


_ANSWERS: Final[
    dict[str, Callable[[ReplyRequest, str, list[tuple[ResumeEntry, str, ToolUseBlock]]], None]]
] = {CONFIRM: _confirm, EXECUTE: _execute}


def _tool_results(messages: Sequence[Any], asking: pb.AgentEvent) -> list[ToolResultBlock]:
    """The results of the handed-over calls in AG-UI tool messages (all or none)."""
    _, calls = asked_calls(asking)
    by_id = {call.id: call for call in calls}
    results: dict[str, ToolResultBlock] = {}
    for index, message in enumerate(messages):
        if not isinstance(message, ToolMessage) or message.tool_call_id not in by_id:
            continue
        call = by_id[message.tool_call_id]
        result = ToolResultBlock(id=call.id, name=call.name, state=_STATES["success"])
        if message.error is not None:
            result.state = _STATES["error"]
        content = blocks_from_parts(message.content, f"messages[{index}].content")
        if isinstance(content, str):
            result.text = content
        else:
            result.blocks.CopyFrom(content)
        results[call.id] = result
    missing = [call_id for call_id in by_id if call_id not in results]
    if results and missing:
        raise MessageFormatError("messages", f"no tool message answers {', '.join(missing)}")
    return [results[call_id] for call_id in by_id if call_id in results]
