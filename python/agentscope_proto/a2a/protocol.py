"""What the AgentScope extension adds to an A2A conversation with a served
agent, beside its messages (docs/a2a.md, "Serving and calling"): a reply's
events on the task's status updates, and what a request holds besides its
messages (an answer to the agent's question, a structured-output schema).
Both travel as the ProtoJSON of this package's schema, so they read back
exactly. The server (`server.py`) writes events and reads requests; the
client (`client.py`) the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from a2a.types import AgentCard, Message
from google.protobuf import json_format, struct_pb2

from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.agent.v1 import events_pb2 as events_pb
from ..errors import MessageFormatError
from .mapping import (
    EVENTS_KEY,
    EXTENSION_URI,
    REQUEST_KEY,
    RESUME_KEY,
    TIMES_KEY,
    fill_value,
    keep_times,
    times_of,
)
from .times import restore_times, times_to_utc

__all__ = [
    "QUESTIONS",
    "calls_in_words",
    "card_speaks_extension",
    "last_question",
    "read_events",
    "read_request",
    "read_resume",
    "write_events",
    "write_request",
    "write_resume",
]

# The ReplyRequest fields a request's metadata may hold (its messages are
# the A2A message's parts; its session is the A2A context).
_REQUEST_FIELDS = frozenset(
    field.name
    for field in service_pb.ReplyRequest.DESCRIPTOR.fields
    if field.name not in ("msgs", "session_id")
)


def _parse(data: Any, message: Any, path: str) -> None:
    if not isinstance(data, dict):
        raise MessageFormatError(
            path, f"expected the ProtoJSON object of {message.DESCRIPTOR.name}"
        )
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        reason = f"not the ProtoJSON of {message.DESCRIPTOR.name}: {error}"
        raise MessageFormatError(path, reason) from None


def write_events(metadata: struct_pb2.Struct, events: Iterable[events_pb.AgentEvent]) -> None:
    """Put `events` in `metadata` (a status update's) under `EVENTS_KEY`,
    their times in UTC, and their original times under `TIMES_KEY`."""
    value = metadata.fields[EVENTS_KEY].list_value
    originals: dict[str, str] = {}
    for index, event in enumerate(events):
        data = times_to_utc(json_format.MessageToDict(event), f"events[{index}]", originals)
        fill_value(value.values.add(), data)
    # Always, even empty: a2a-sdk merges each update's metadata into its
    # task's, where an earlier update's times would otherwise stay beside
    # these events (the task keeps its last events: a question, say).
    fill_value(metadata.fields[TIMES_KEY], originals)


def read_events(metadata: struct_pb2.Struct) -> list[events_pb.AgentEvent]:
    """The events `write_events` put in `metadata` (none when it holds none)."""
    if EVENTS_KEY not in metadata.fields:
        return []
    path = f'metadata["{EVENTS_KEY}"]'
    data = json_format.MessageToDict(metadata.fields[EVENTS_KEY])
    if not isinstance(data, list):
        raise MessageFormatError(path, "expected a list of AgentEvent ProtoJSON objects")
    restore_times(data, "events", times_of(metadata))
    events = []
    for index, item in enumerate(data):
        event = events_pb.AgentEvent()
        _parse(item, event, f"{path}[{index}]")
        events.append(event)
    return events


def write_resume(metadata: struct_pb2.Struct, reply_id: str, after: str) -> None:
    """Put where the task's reply goes on after this update in `metadata`
    (a status update's) under `RESUME_KEY`."""
    resume = service_pb.ResumeRequest(reply_id=reply_id, after=after)
    fill_value(metadata.fields[RESUME_KEY], json_format.MessageToDict(resume))


def read_resume(metadata: struct_pb2.Struct, session_id: str) -> service_pb.ResumeRequest | None:
    """The `ResumeRequest` (in `session_id`) that `write_resume` put in
    `metadata` (a task's), or None when it holds none."""
    if RESUME_KEY not in metadata.fields:
        return None
    resume = service_pb.ResumeRequest()
    _parse(
        json_format.MessageToDict(metadata.fields[RESUME_KEY]),
        resume,
        f'metadata["{RESUME_KEY}"]',
    )
    resume.session_id = session_id
    return resume


def write_request(message: Message, request: service_pb.ReplyRequest) -> None:
    """Put what `request` holds besides its messages and session (an answer,
    a schema) in `message`'s metadata under `REQUEST_KEY`; nothing when it
    holds nothing else."""
    rest = service_pb.ReplyRequest()
    rest.CopyFrom(request)
    rest.ClearField("msgs")
    rest.ClearField("session_id")
    if rest.ByteSize():
        value = message.metadata.fields[REQUEST_KEY].struct_value
        originals: dict[str, str] = {}
        json_format.ParseDict(
            times_to_utc(json_format.MessageToDict(rest), "request", originals), value
        )
        keep_times(message.metadata, originals)


def read_request(message: Message) -> service_pb.ReplyRequest:
    """What `write_request` put in `message` (an empty request when nothing)."""
    request = service_pb.ReplyRequest()
    if REQUEST_KEY in message.metadata.fields:
        path = f'message.metadata["{REQUEST_KEY}"]'
        data = json_format.MessageToDict(message.metadata.fields[REQUEST_KEY])
        if isinstance(data, dict):
            unknown = sorted(set(data) - {_camel(name) for name in _REQUEST_FIELDS})
            if unknown:
                raise MessageFormatError(f"{path}.{unknown[0]}", "not a field a request carries")
        _parse(restore_times(data, "request", times_of(message.metadata)), request, path)
    return request


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def card_speaks_extension(card: AgentCard) -> bool:
    """Whether an agent card lists the AgentScope extension."""
    return any(extension.uri == EXTENSION_URI for extension in card.capabilities.extensions)


# The events with which a reply stops to ask its caller.
QUESTIONS = frozenset({"require_user_confirm", "require_external_execution"})


def calls_in_words(question: events_pb.AgentEvent) -> str:
    """The calls a question is about, as a person reads them: `f({"a": 1})`."""
    body = getattr(question, question.WhichOneof("event") or "")
    return ", ".join(f"{call.name}({_arguments(call.input_json)})" for call in body.tool_calls)


def _arguments(input_json: str) -> str:
    try:
        return json.dumps(json.loads(input_json or "{}"), ensure_ascii=False)
    except ValueError:
        return input_json  # as the model wrote it


def last_question(events: Sequence[events_pb.AgentEvent]) -> events_pb.AgentEvent | None:
    """The last event of `events` that asks the caller something."""
    for event in reversed(events):
        if event.WhichOneof("event") in QUESTIONS:
            return event
    return None
