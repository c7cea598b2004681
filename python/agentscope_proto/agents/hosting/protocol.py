"""What every hosting shares: a reply's inputs, the `Hosting` protocol, and
the reading helpers of both AgentScope versions."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from ... import _json
from ..._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from ..._generated.agentscope.agent.v1 import events_pb2 as pb
from ..._generated.agentscope.agent.v1 import state_pb2
from ..._generated.agentscope.message.v1.message_pb2 import Msg
from ..._wire import varint_bytes
from ...errors import MessageFormatError

__all__ = [
    "Checkpoint",
    "Hosting",
    "Item",
    "ReplyInputs",
    "SavedState",
    "Taken",
    "new_event",
    "now",
    "read_each",
    "structured_schema",
]

Item = pb.AgentEvent | Msg
T = TypeVar("T")
U = TypeVar("U")


# `SessionState.context`'s tag: field 2, length-delimited.
_CONTEXT_TAG = varint_bytes(2 << 3 | 2)


@dataclass(frozen=True)
class SavedState:
    """An agent's state as saved: its `SessionState` without its context, and
    each context message's `Msg` bytes, oldest first. A store may keep the
    messages apart (a context grows at its end: only the new ones go)."""

    rest: state_pb2.SessionState
    context: list[bytes]

    def encoded(self) -> bytes:
        """The whole `SessionState`'s bytes (the messages as its field 2)."""
        return encoded(self.rest.SerializeToString(), self.context)


def encoded(rest: bytes, context: Sequence[bytes]) -> bytes:
    """A `SessionState`'s bytes from those of its rest and of its context's
    messages (protobuf reads a repeated field's entries wherever they are)."""
    parts = [rest]
    for msg in context:
        parts += (_CONTEXT_TAG, varint_bytes(len(msg)), msg)
    return b"".join(parts)


@dataclass(frozen=True)
class Checkpoint:
    """What a hosting's reply gives between two items when the agent must not
    go on before the reply so far is logged (a durable store's sessions
    wait for it; others go on at once): with the agent's `state` (a point a
    replica taking the reply over starts from), or without (a tool's
    result, so that the tool is not run again)."""

    state: bool


@dataclass(frozen=True)
class Taken:
    """What a replica taking a reply over needs of its log: the reply's
    request, its last checkpoint (None: none was logged), and the events
    from the model call that checkpoint was taken at (or from the first
    one, without a checkpoint) to the last logged."""

    reply_id: str
    # The reply's request, and the version of the session's state it started from.
    request: service_pb.ReplyRequest
    state_version: int
    checkpoint: state_pb2.SessionState | None
    events: list[pb.AgentEvent]


@dataclass(frozen=True)
class ReplyInputs:
    """A reply's inputs as the agent takes them: messages or an answer (or
    neither: go on), a structured-output JSON schema, and the reply's id if
    the caller named it."""

    msgs: list[Any] | None
    answer: Any
    schema: dict[str, Any] | None
    # The id the caller named the reply by ("": the agent names it).
    reply_id: str = ""

    @property
    def native(self) -> Any:
        """What the agent's reply is called with."""
        return self.answer if self.answer is not None else self.msgs


class Hosting(Protocol):
    """Drives agents of one AgentScope major version: reads a request's
    messages and answer into that version's objects (refusing, before any
    agent sees them, what the agent would refuse), checks that a session can
    take an answer, runs a reply as proto items (`AgentEvent`s as they
    happen, the reply's `Msg` last), describes an agent, and saves and
    loads an agent's state (`SessionState`, for a durable state store), and
    takes over a reply whose replica stopped, if it can. It holds no agent:
    the session passes its own."""

    framework: str
    # Whether `take_over` can go on with a reply another replica left.
    can_take_over: bool

    def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]: ...

    def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs: ...

    def bind(self, agent: Any, session_id: str) -> None: ...

    def check(self, agent: Any, inputs: ReplyInputs) -> None: ...

    def question(self, agent: Any) -> pb.AgentEvent | None:
        """What the agent waits for its caller to answer, as the event that
        asked it (`require_user_confirm`, `require_external_execution`),
        rebuilt from its state; None if it waits for nothing."""
        ...

    def reply(
        self, agent: Any, session_id: str, inputs: ReplyInputs
    ) -> AsyncIterator[Item | Checkpoint]: ...

    def take_over(
        self, agent: Any, session_id: str, inputs: ReplyInputs, taken: Taken
    ) -> AsyncIterator[Item | Checkpoint]:
        """The rest of a reply another replica left unended, from what its
        log kept (`taken`), the agent at the session's state the reply
        started from."""
        ...

    async def observe(self, agent: Any, msgs: list[Any]) -> None: ...

    async def describe(self, agent: Any) -> service_pb.DescribeResponse: ...

    def save_state(self, agent: Any, known: list[Any]) -> SavedState | None: ...

    def load_state(self, agent: Any, stored: state_pb2.SessionState) -> None: ...


def now() -> str:
    """The current time as AgentScope 2.x stamps one (local ISO-8601)."""
    return datetime.now().isoformat()


def new_event(kind: str, **fields: Any) -> pb.AgentEvent:
    """A new `AgentEvent` of `kind` (an `event` field name) with `fields`."""
    event = pb.AgentEvent(id=uuid.uuid4().hex, created_at=now())
    body = getattr(event, kind)
    body.SetInParent()
    for name, value in fields.items():
        setattr(body, name, value)
    return event


def read_each(items: Sequence[T], field: str, read: Callable[[T, str], U]) -> list[U]:
    """`read(item, path)` of each item, a `MessageFormatError` placed under
    `field[i]` (its path inside the item appended)."""
    out = []
    for index, item in enumerate(items):
        path = f"{field}[{index}]"
        try:
            out.append(read(item, path))
        except MessageFormatError as exc:
            if exc.path.startswith(path):
                raise
            raise MessageFormatError(f"{path}.{exc.path}".rstrip("."), exc.reason) from None
    return out


def structured_schema(request: service_pb.ReplyRequest) -> dict[str, Any] | None:
    """The request's JSON Schema, if it gives one: an object's (the output
    is a JSON object; AgentScope takes it as a tool's input schema, and
    fails the reply on any other)."""
    if not request.HasField("structured_schema_json"):
        return None
    schema = _json.loads(request.structured_schema_json, "structured_schema_json")
    if not isinstance(schema, dict):
        raise MessageFormatError("structured_schema_json", "expected a JSON Schema object")
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise MessageFormatError(
            "structured_schema_json",
            'expected the schema of an object: {"type": "object", "properties": {...}}',
        )
    return schema
