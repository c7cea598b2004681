"""Calling any A2A 1.0 agent as a served agent is called: `AsyncA2AClient`
has `AsyncAgentClient`'s interface (a reply as `AgentEvent`s, then its
`Msg`), so `RemoteAgent` takes an A2A agent's URL as it takes an
AgentService's address (docs/a2a.md, "Calling").

With a2a-sdk's client (its JSON-RPC, HTTP+JSON and gRPC transports) over the
agent card's interfaces. A peer whose card lists the AgentScope extension
gets the messages exactly, speaker names included, answers to its questions
and a structured-output schema; its reply comes back as its own events and
message. Any other peer gets the messages of a turn of several speakers
with `[name]: ` before their text (`prefix_speaker_names`), and its reply is
rebuilt from what it sends (its artifacts and status messages, text chunks
streaming as text deltas), as the events an AgentScope agent makes.

Needs the `a2a` extra; no AgentScope.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

import grpc
import httpx
from a2a.client import (
    A2ACardResolver,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
)
from a2a.client import Client as SdkClient
from a2a.client.errors import A2AClientTimeoutError
from a2a.extensions.common import HTTP_EXTENSION_HEADER
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, TransportProtocol
from a2a.utils.errors import A2A_ERROR_MAPPING, A2AError
from google.protobuf import json_format

from .. import _json
from .._channel import aio_channel, closed_client, task_cancelling
from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.agent.v1 import events_pb2 as events_pb
from .._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    ErrorType,
    FinishedReason,
    Msg,
)
from .._generated.agentscope.message.v1.message_pb2 import Role as MsgRole
from ..agents.client import Answer, MsgLike, final_msg, reply_request
from ..agents.hosting.protocol import new_event
from ..errors import AgentReplyError, MessageFormatError, RemoteError
from .mapping import (
    EXTENSION_URI,
    a2a_to_msgs,
    artifact_to_msg,
    msgs_to_a2a,
    prefix_speaker_names,
)
from .protocol import card_speaks_extension, read_events, write_request

__all__ = ["AsyncA2AClient", "base_url", "fetch_card"]

_BINDINGS = [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON, TransportProtocol.GRPC]
# Task states a reply ends on, and the reason it ended with.
_ENDS: dict[int, int] = {
    TaskState.TASK_STATE_COMPLETED: FinishedReason.FINISHED_REASON_COMPLETED,
    TaskState.TASK_STATE_INPUT_REQUIRED: FinishedReason.FINISHED_REASON_COMPLETED,
    TaskState.TASK_STATE_AUTH_REQUIRED: FinishedReason.FINISHED_REASON_COMPLETED,
    TaskState.TASK_STATE_CANCELED: FinishedReason.FINISHED_REASON_INTERRUPTED,
    TaskState.TASK_STATE_FAILED: FinishedReason.FINISHED_REASON_ERROR,
    TaskState.TASK_STATE_REJECTED: FinishedReason.FINISHED_REASON_ERROR,
}
_WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
_MEDIA = ("image", "audio", "video", "data")
# No read timeout of its own: a reply may think for minutes between two
# events. The caller's `timeout` bounds a call.
_HTTP_TIMEOUT = httpx.Timeout(None, connect=10.0)
# How long a caller that leaves a reply waits for the peer to take the cancel.
_CANCEL_TIMEOUT = 5.0


def base_url(url: str) -> str:
    """The agent's base URL (its card is under it), from the URL of the
    agent or of its card."""
    return url.removesuffix(AGENT_CARD_WELL_KNOWN_PATH).rstrip("/")


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def fetch_card(url: str, *, token: str | None = None, timeout: float = 30.0) -> AgentCard:
    """The agent card of the A2A agent at `url` (blocking); `RemoteError`
    when it cannot be read."""
    card_url = base_url(url) + AGENT_CARD_WELL_KNOWN_PATH
    try:
        response = httpx.get(card_url, headers=_headers(token), timeout=timeout)
        response.raise_for_status()
    except httpx.HTTPStatusError as error:
        raise _http_error(error.response.status_code, card_url) from None
    except httpx.HTTPError as error:
        raise RemoteError(grpc.StatusCode.UNAVAILABLE, f"{card_url}: {error}") from None
    return _card(response.content, card_url)


def _card(data: bytes, where: str) -> AgentCard:
    parsed = _json.loads(data, where)
    if not isinstance(parsed, dict):
        raise MessageFormatError(where, "an agent card is a JSON object")
    card = AgentCard()
    try:
        json_format.ParseDict(parsed, card, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        raise MessageFormatError(where, f"not an A2A 1.0 agent card: {error}") from None
    if not card.supported_interfaces:
        raise MessageFormatError(where, "not an A2A 1.0 agent card: no supportedInterfaces")
    return card


_HTTP_CODES = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def _http_error(status: int, where: str) -> RemoteError:
    code = _HTTP_CODES.get(status, grpc.StatusCode.UNAVAILABLE)
    return RemoteError(code, f"{where}: HTTP {status}")


def _remote_error(error: Exception) -> Exception:
    """An a2a-sdk client error as this package's: the A2A error's gRPC code."""
    if isinstance(error, A2AClientTimeoutError):
        return RemoteError(grpc.StatusCode.DEADLINE_EXCEEDED, error.message)
    cause = error.__cause__
    if isinstance(cause, httpx.HTTPStatusError):
        return _http_error(cause.response.status_code, str(cause.request.url))
    if isinstance(cause, grpc.aio.AioRpcError):
        return RemoteError(cause.code(), cause.details() or "")
    mapping = A2A_ERROR_MAPPING.get(type(error)) if isinstance(error, A2AError) else None
    if mapping is not None:
        return RemoteError(grpc.StatusCode[mapping.grpc_status], str(error))
    return RemoteError(grpc.StatusCode.UNAVAILABLE, str(error))


class AsyncA2AClient:
    """An A2A 1.0 agent at `url` (its base URL, or its card's), with
    `AsyncAgentClient`'s interface: `reply_stream`, `reply`, `observe`,
    `describe` (see the module doc).

    The session id is the A2A context id: empty starts a new context, whose
    id the reply's `ReplyStartEvent` reports. A reply that ends waiting for
    input (the agent's question, `input-required`) is continued by the next
    reply in its session: its answer, or, for a peer without the extension,
    its next message. `observe` keeps messages to send ahead of the next
    reply's (A2A has no observe). `token` is sent as a bearer token,
    `credentials` secure the gRPC interface; `bindings` (`JSONRPC`,
    `HTTP+JSON`, `GRPC`) are the transports to use, in order of preference
    (default: any, the card's order).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        bindings: Sequence[str] = (),
        max_message_mb: int = 64,
    ) -> None:
        self.url = base_url(url)
        self._token = token
        self._credentials = credentials
        self._bindings = list(bindings)
        self._max_message_mb = max_message_mb
        self._http = httpx.AsyncClient(timeout=_HTTP_TIMEOUT)
        self._card: AgentCard | None = None
        self._client: SdkClient | None = None
        # Per context: the task waiting for input, and messages to send ahead.
        self._waiting: dict[str, str] = {}
        self._observed: dict[str, list[Msg]] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise closed_client()

    async def card(self) -> AgentCard:
        """The agent's card (fetched once)."""
        self._check_open()
        if self._card is None:
            resolver = A2ACardResolver(self._http, self.url)
            try:
                self._card = await resolver.get_agent_card(
                    http_kwargs={"headers": _headers(self._token)}
                )
            except A2AError as error:
                raise _remote_error(error) from None
        return self._card

    async def _connected(self) -> tuple[AgentCard, SdkClient]:
        card = await self.card()
        if self._client is None:
            config = ClientConfig(
                streaming=True,
                httpx_client=self._http,
                supported_protocol_bindings=self._bindings or list(_BINDINGS),
                use_client_preference=bool(self._bindings),
                grpc_channel_factory=self._channel,
            )
            try:
                self._client = ClientFactory(config).create(card)
            except ValueError as error:  # no interface this client speaks
                raise RemoteError(grpc.StatusCode.UNIMPLEMENTED, f"{self.url}: {error}") from None
        return card, self._client

    def _channel(self, target: str) -> grpc.aio.Channel:
        return aio_channel(target, self._credentials, self._max_message_mb)

    def waiting_task(self, session_id: str) -> str | None:
        """The task of `session_id` that waits for input (the next reply continues it)."""
        return self._waiting.get(session_id)

    def continue_task(self, session_id: str, task_id: str) -> None:
        """Continue `task_id` (waiting for input) with the next reply in
        `session_id`, e.g. a task another process started."""
        self._waiting[session_id] = task_id

    async def describe(self, *, timeout: float | None = None) -> service_pb.DescribeResponse:
        """What the card says, as `Describe` says it."""
        card = await self.card()
        return service_pb.DescribeResponse(
            name=card.name,
            description=card.description,
            version=card.version,
            input_media_types=list(card.default_input_modes),
            output_media_types=list(card.default_output_modes),
        )

    async def observe(
        self,
        msgs: MsgLike | Iterable[MsgLike],
        *,
        session_id: str = "",
        timeout: float | None = None,
    ) -> str:
        """Keep messages to send ahead of the next reply's in the session
        (a new one when empty); the session's id."""
        self._check_open()
        session_id = session_id or uuid.uuid4().hex
        self._observed.setdefault(session_id, []).extend(reply_request(msgs).msgs)
        return session_id

    async def reply_stream(
        self,
        msgs: MsgLike | Iterable[MsgLike] | None = None,
        *,
        answer: Answer | None = None,
        session_id: str = "",
        structured_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[events_pb.AgentEvent | Msg]:
        """The reply's events as they come, then its `Msg`, as
        `AsyncAgentClient.reply_stream` gives them. A failed task raises
        `AgentReplyError` after its message; other failures `RemoteError`
        with the A2A error's gRPC code (once the client is closed, also
        under a reply it read: `RemoteError(CANCELLED)`, the client's)."""
        card, client = await self._connected()
        speaks = card_speaks_extension(card)
        request = reply_request(
            msgs, answer=answer, session_id=session_id, structured_schema=structured_schema
        )
        message = self._message(request, speaks, card.name)
        parameters = _headers(self._token)
        if speaks:
            parameters[HTTP_EXTENSION_HEADER] = EXTENSION_URI
        context = ClientCallContext(timeout=timeout, service_parameters=parameters)
        reader = _Reader(card.name, session_id)
        stream = client.send_message(SendMessageRequest(message=message), context=context)
        try:
            async for response in stream:
                # The peer took the message: what was observed went with it.
                self._observed.pop(session_id, None)
                for item in reader.read(response):
                    yield item
            for item in reader.finish():
                yield item
        except A2AError as error:
            self._check_open()  # closed: the cut is close()'s
            raise _remote_error(error) from None
        except asyncio.CancelledError:
            if self._closed and not task_cancelling():  # grpc's, for a call close() cut
                raise closed_client() from None
            raise
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
            if reader.task_id and reader.state not in _ENDS and not self._closed:
                # The caller left (or the stream broke): the task would run on.
                await _cancel(client, reader.task_id, context)
            self._bookkeep(session_id, reader)
        if reader.failed is not None:
            raise reader.failed

    def _message(self, request: service_pb.ReplyRequest, speaks: bool, name: str) -> Message:
        """The A2A message of a request: its messages (the observed ones
        first), or its answer; on the session's waiting task, if any."""
        session_id = request.session_id
        task_id = self._waiting.get(session_id)
        extras = request.WhichOneof("answer") is not None or request.HasField(
            "structured_schema_json"
        )
        if extras and not speaks:
            raise MessageFormatError(
                request.WhichOneof("answer") or "structured_schema",
                f"{name} does not speak the AgentScope extension, which carries it",
            )
        if request.WhichOneof("answer") is not None:
            if task_id is None:
                raise MessageFormatError("answer", "no task of this session waits for an answer")
            message = Message(
                role=Role.ROLE_USER,
                message_id=uuid.uuid4().hex,
                parts=[Part(text=_answer_text(request))],
                context_id=session_id,
                task_id=task_id,
            )
        else:
            history = [*self._observed.get(session_id, []), *request.msgs]
            if not history:
                raise MessageFormatError("msgs", "an A2A message needs a message to send")
            message = msgs_to_a2a(
                history if speaks or _speakers(history) < 2 else prefix_speaker_names(history),
                role=Role.ROLE_USER,
                # Given, not taken from the last message's A2A envelope (a
                # peer's message read earlier names the peer's own task).
                context_id=session_id,
                task_id=task_id or "",
            )
        write_request(message, request)
        return message

    def _bookkeep(self, session_id: str, reader: _Reader) -> None:
        """Which task of the context the next reply continues."""
        for key in {session_id, reader.context_id} - {""}:
            if reader.state in _WAITING and reader.task_id:
                self._waiting[key] = reader.task_id
            elif reader.state is not None:
                self._waiting.pop(key, None)

    async def reply(self, msgs: MsgLike | Iterable[MsgLike] | None = None, **kwargs: Any) -> Msg:
        """The reply's `Msg` (the keyword arguments are `reply_stream`'s)."""
        return await final_msg(self.reply_stream(msgs, **kwargs))

    async def close(self) -> None:
        """Close the transport and the HTTP client: calls on their way, and
        after, end `RemoteError(CANCELLED)`."""
        self._closed = True
        if self._client is not None:
            await self._client.close()
            self._client = None
        await self._http.aclose()

    async def __aenter__(self) -> AsyncA2AClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _speakers(msgs: Iterable[Msg]) -> int:
    """How many speakers `msgs` have (a turn of one needs no names)."""
    return len({msg.name for msg in msgs if msg.HasField("name")})


def _answer_text(request: service_pb.ReplyRequest) -> str:
    """What an answer says in words (the task's history shows it)."""
    kind = request.WhichOneof("answer")
    if kind == "user_confirm_result":
        verdicts = [result.confirmed for result in request.user_confirm_result.confirm_results]
        return "yes" if verdicts and all(verdicts) else "no" if not any(verdicts) else "partly"
    return "no" if kind == "user_interrupt" else "results"


async def _cancel(client: SdkClient, task_id: str, context: ClientCallContext) -> None:
    """Cancel a task the caller no longer reads, as far as the peer lets it."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(
            asyncio.shield(client.cancel_task(CancelTaskRequest(id=task_id), context=context)),
            _CANCEL_TIMEOUT,
        )


class _Reader:
    """One reply's A2A stream as AgentScope items: a peer's own events and
    message (the extension), else events and a message rebuilt from what it
    sends."""

    def __init__(self, name: str, session_id: str) -> None:
        self.name = name
        self.context_id = session_id
        self.task_id = ""
        self.state: int | None = None  # the last task state seen
        self.failed: AgentReplyError | None = None
        self._evented = False  # the peer sends its own events
        self._final: Msg | None = None
        self._rebuilt = _Rebuilt()
        self._started = False

    def read(self, response: StreamResponse) -> list[events_pb.AgentEvent | Msg]:
        kind = response.WhichOneof("payload")
        if kind == "task":
            task = response.task
            self._ids(task.context_id, task.id)
            items = []
            for artifact in task.artifacts:  # its text parts are chunks of one text
                items += self._content([artifact_to_msg(artifact)], artifact.artifact_id)
                items += self._rebuilt.close()
            return items + self._status(task.status, task.metadata, begins=False)
        if kind == "status_update":
            status = response.status_update
            self._ids(status.context_id, status.task_id)
            return self._status(status.status, status.metadata)
        if kind == "artifact_update":
            chunk = response.artifact_update
            self._ids(chunk.context_id, chunk.task_id)
            run = chunk.artifact.artifact_id if chunk.append or not chunk.last_chunk else None
            items = self._content([artifact_to_msg(chunk.artifact)], run)
            if chunk.last_chunk:
                items += self._rebuilt.close()
            return items
        if kind == "message":
            message = response.message
            self._ids(message.context_id, message.task_id)
            self.state = TaskState.TASK_STATE_COMPLETED  # a reply without a task
            return self._content(a2a_to_msgs(message, name=self.name), None)
        return []

    def _ids(self, context_id: str, task_id: str) -> None:
        self.context_id = context_id or self.context_id
        self.task_id = task_id or self.task_id

    def _start(self) -> list[events_pb.AgentEvent | Msg]:
        if self._started:
            return []
        self._started = True
        if self._evented:
            return []
        return [
            new_event(
                "reply_start",
                session_id=self.context_id,
                reply_id=self._rebuilt.reply_id,
                name=self.name,
            )
        ]

    def _status(
        self, status: Any, metadata: Any, *, begins: bool = True
    ) -> list[events_pb.AgentEvent | Msg]:
        """A status: the peer's events, or (a status update of a peer that
        sends none: the work began) the reply's start and its message."""
        self.state = status.state
        events = read_events(metadata)
        items: list[events_pb.AgentEvent | Msg] = []
        if events:
            self._evented = True
            self._started = True
            items.extend(events)
        elif begins:
            items += self._start()
        if status.HasField("message") and status.message.parts:
            msgs = a2a_to_msgs(status.message, name=self.name)
            if self._evented:
                self._final = msgs[-1]
            else:
                items += self._content(msgs, None)
        return items

    def _content(self, msgs: Sequence[Msg], run: str | None) -> list[events_pb.AgentEvent | Msg]:
        if self._evented or not msgs:
            return []
        items = self._start()
        for msg in msgs:
            items += self._rebuilt.add(_blocks(msg), run)
        return items

    def finish(self) -> list[events_pb.AgentEvent | Msg]:
        """The reply's last items, once the stream ended."""
        if self.state not in _ENDS:
            raise RemoteError(
                grpc.StatusCode.UNAVAILABLE,
                f"the A2A stream ended before the task did ({TaskState.Name(self.state or 0)})",
            )
        reason = FinishedReason.ValueType(_ENDS[self.state])
        if self._evented:
            msg = self._final or Msg(name=self.name, role=MsgRole.ROLE_ASSISTANT)
        else:
            items = [*self._start(), *self._rebuilt.close()]
            msg = self._rebuilt.msg(self.name, self.context_id, self.task_id)
            msg.finished_reason = reason
            end = new_event(
                "reply_end",
                session_id=self.context_id,
                reply_id=self._rebuilt.reply_id,
                finished_reason=reason,
            )
            if reason == FinishedReason.FINISHED_REASON_ERROR:
                text = _text_of(msg) or f"the A2A task ended {TaskState.Name(self.state)}"
                msg.error.type = ErrorType.ERROR_TYPE_UPSTREAM
                msg.error.message = text
                end.reply_end.error.CopyFrom(msg.error)
            items.append(end)
            items.append(msg)
            self._failed(msg)
            return items
        self._failed(msg)
        return [msg]

    def _failed(self, msg: Msg) -> None:
        if msg.finished_reason == FinishedReason.FINISHED_REASON_ERROR or msg.HasField("error"):
            kind = ErrorType.Name(msg.error.type).removeprefix("ERROR_TYPE_").lower()
            self.failed = AgentReplyError(kind, msg.error.message, msg)


def _blocks(msg: Msg) -> list[ContentBlock]:
    if msg.WhichOneof("content") == "text":
        block = ContentBlock()
        block.text.text = msg.text
        return [block]
    return list(msg.blocks.items)


def _text_of(msg: Msg) -> str:
    return "".join(block.text.text for block in _blocks(msg) if block.WhichOneof("block") == "text")


class _Rebuilt:
    """The reply of a peer without events, rebuilt: its blocks, and the
    events an AgentScope 2.x agent makes of such blocks (text runs streaming
    as deltas, thinking, media)."""

    def __init__(self) -> None:
        self.reply_id = uuid.uuid4().hex
        self.blocks: list[ContentBlock] = []
        # The open text block: its event id and the run (an artifact) it continues.
        self._open: tuple[str, str | None] | None = None

    def add(self, blocks: Iterable[ContentBlock], run: str | None) -> list[Any]:
        events: list[Any] = []
        for block in blocks:
            kind = block.WhichOneof("block")
            ids = {"reply_id": self.reply_id}
            if kind == "text" and run is not None and self._open and self._open[1] == run:
                self.blocks[-1].text.text += block.text.text
                delta = {**ids, "block_id": self._open[0], "delta": block.text.text}
                events.append(new_event("text_block_delta", **delta))
                continue
            events += self.close()
            self.blocks.append(block)
            block_id = uuid.uuid4().hex
            ids["block_id"] = block_id
            if kind == "text":
                events.append(new_event("text_block_start", **ids))
                events.append(new_event("text_block_delta", **ids, delta=block.text.text))
                self._open = (block_id, run)
                if run is None:
                    events += self.close()
            elif kind == "thinking":
                events.append(new_event("thinking_block_start", **ids))
                events.append(
                    new_event("thinking_block_delta", **ids, delta=block.thinking.thinking)
                )
                events.append(new_event("thinking_block_end", **ids))
            elif kind in _MEDIA:
                events += _media_events(getattr(block, kind), ids)
        return events

    def close(self) -> list[Any]:
        """The end of the open text block, if any."""
        if self._open is None:
            return []
        block_id, _ = self._open
        self._open = None
        return [new_event("text_block_end", reply_id=self.reply_id, block_id=block_id)]

    def msg(self, name: str, context_id: str, task_id: str) -> Msg:
        msg = Msg(id=self.reply_id, name=name, role=MsgRole.ROLE_ASSISTANT)
        msg.blocks.items.extend(self.blocks)
        # The A2A envelope, where the mapping keeps it (docs/a2a.md).
        pairs = (("context_id", context_id), ("task_id", task_id))
        envelope = {key: value for key, value in pairs if value}
        if envelope:
            msg.metadata_json = _json.dumps({"a2a": envelope}, "metadata")
        return msg


def _media_events(media: Any, ids: dict[str, str]) -> list[Any]:
    source = media.source
    media_type = source.media_type or "application/octet-stream"
    start = new_event("data_block_start", **ids, media_type=media_type)
    if media.HasField("name"):
        start.data_block_start.name = media.name
    delta = new_event("data_block_delta", **ids, media_type=media_type)
    which = source.WhichOneof("source")
    if which is not None:
        setattr(delta.data_block_delta, which, getattr(source, which))
    return [start, delta, new_event("data_block_end", **ids)]
