"""Clients of the AgentService: `AgentClient` (blocking) and `AsyncAgentClient`.

They speak the schema's types, with no AgentScope needed: messages go as
`Msg` (or any AgentScope message dict, read as `from_dict` reads it), a
reply comes back as its `AgentEvent`s and, last, the reply's `Msg`, as 2.x's
`reply_stream(..., yield_final_msg=True)` yields them. A reply that failed
raises `AgentReplyError` after its events (its `msg` is the failed reply's
message); other errors are the package's exceptions, rebuilt from the status
details, as the FormatterService's clients do. `RemoteAgent` (`remote.py`)
wraps `AsyncAgentClient` as an AgentScope 2.x agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import grpc

from .. import _json
from .._channel import AsyncChannelClient, ChannelClient
from .._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from .._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from .._generated.agentscope.agent.v1 import events_pb2 as events_pb
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..dialects import from_dict
from ..errors import AgentReplyError, MessageFormatError
from ..events import event_from_dict
from ..service.status import error_from_rpc

__all__ = ["AgentClient", "AsyncAgentClient", "reply_request"]

MsgLike = Msg | Mapping[str, Any]
# An answer: an `AgentEvent` holding one, the answer message itself, or its
# 2.x event dict.
Answer = (
    events_pb.AgentEvent
    | events_pb.UserConfirmResultEvent
    | events_pb.ExternalExecutionResultEvent
    | events_pb.UserInterruptEvent
    | Mapping[str, Any]
)
# The answer message class -> its `ReplyRequest.answer` field.
_ANSWERS: dict[type, str] = {
    type(getattr(pb.ReplyRequest(), field.name)): field.name
    for field in pb.ReplyRequest.DESCRIPTOR.oneofs_by_name["answer"].fields
}


def _msg(value: MsgLike, index: int) -> Msg:
    if isinstance(value, Msg):
        return value
    try:
        return from_dict(value)
    except MessageFormatError as exc:
        raise MessageFormatError(f"msgs[{index}].{exc.path}".rstrip("."), exc.reason) from None


def _set_answer(request: pb.ReplyRequest, answer: Answer) -> None:
    if isinstance(answer, Mapping):
        answer = event_from_dict(answer)
    if isinstance(answer, events_pb.AgentEvent):
        kind = answer.WhichOneof("event")
        if kind is None or kind not in _ANSWERS.values():
            raise MessageFormatError("answer", f"{kind} is not an answer")
        answer = getattr(answer, kind)
    field = _ANSWERS.get(type(answer))
    if field is None:
        raise MessageFormatError("answer", f"not an answer: {type(answer).__name__}")
    getattr(request, field).CopyFrom(answer)


def reply_request(
    msgs: MsgLike | Iterable[MsgLike] | None = None,
    *,
    answer: Answer | None = None,
    session_id: str = "",
    structured_schema: Mapping[str, Any] | None = None,
) -> pb.ReplyRequest:
    """The `ReplyRequest` for these arguments: messages or an answer (or
    neither, to go on), the session, a structured-output JSON schema."""
    request = pb.ReplyRequest(session_id=session_id)
    if msgs is not None:
        items = [msgs] if isinstance(msgs, Msg | Mapping) else list(msgs)
        request.msgs.extend(_msg(item, index) for index, item in enumerate(items))
    if answer is not None:
        _set_answer(request, answer)
    if structured_schema is not None:
        request.structured_schema_json = _json.dumps(dict(structured_schema), "structured_schema")
    return request


def _observe_request(msgs: MsgLike | Iterable[MsgLike], session_id: str) -> pb.ObserveRequest:
    items = [msgs] if isinstance(msgs, Msg | Mapping) else list(msgs)
    return pb.ObserveRequest(
        msgs=[_msg(item, index) for index, item in enumerate(items)], session_id=session_id
    )


def _items(response: pb.ReplyResponse) -> list[events_pb.AgentEvent | Msg]:
    out: list[events_pb.AgentEvent | Msg] = []
    if response.HasField("event"):
        out.append(response.event)
    if response.HasField("msg"):
        out.append(response.msg)
    return out


async def final_msg(items: AsyncIterable[events_pb.AgentEvent | Msg]) -> Msg:
    """The `Msg` a reply's items end with (`AsyncAgentClient.reply`,
    `AsyncA2AClient.reply`)."""
    msg: Msg | None = None
    async for item in items:
        if isinstance(item, Msg):
            msg = item
    if msg is None:
        raise RuntimeError("the agent's reply had no message")
    return msg


def _failed(error: grpc.RpcError, msg: Msg | None) -> Exception:
    exc = error_from_rpc(error)
    if isinstance(exc, AgentReplyError):
        exc.msg = msg
    return exc


class AgentClient(ChannelClient):
    """A blocking client: `reply_stream`, `reply`, `observe`, `describe`."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb)
        self._stub = pb_grpc.AgentServiceStub(self._channel)

    def reply_stream(
        self,
        msgs: MsgLike | Iterable[MsgLike] | None = None,
        *,
        answer: Answer | None = None,
        session_id: str = "",
        structured_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Iterator[events_pb.AgentEvent | Msg]:
        """The reply's events as they happen, then its `Msg`. Closing the
        iterator early cancels the call, which interrupts the reply."""
        request = reply_request(
            msgs, answer=answer, session_id=session_id, structured_schema=structured_schema
        )
        call = self._stub.Reply(request, timeout=timeout, metadata=self._metadata)
        msg: Msg | None = None
        try:
            for response in call:
                for item in _items(response):
                    if isinstance(item, Msg):
                        msg = item
                    yield item
        except grpc.RpcError as error:
            raise _failed(error, msg) from None
        finally:
            call.cancel()  # a no-op once the call ended

    def reply(
        self,
        msgs: MsgLike | Iterable[MsgLike] | None = None,
        **kwargs: Any,
    ) -> Msg:
        """The reply's `Msg` (the keyword arguments are `reply_stream`'s)."""
        msg: Msg | None = None
        for item in self.reply_stream(msgs, **kwargs):
            if isinstance(item, Msg):
                msg = item
        if msg is None:
            raise RuntimeError("the agent's reply had no message")
        return msg

    def observe(
        self,
        msgs: MsgLike | Iterable[MsgLike],
        *,
        session_id: str = "",
        timeout: float | None = None,
    ) -> str:
        """Give the agent messages to remember; the session's id."""
        try:
            response = self._stub.Observe(
                _observe_request(msgs, session_id), timeout=timeout, metadata=self._metadata
            )
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
        return response.session_id

    def describe(self, *, timeout: float | None = None) -> pb.DescribeResponse:
        """Who the agent is and what it takes and gives."""
        try:
            return self._stub.Describe(
                pb.DescribeRequest(), timeout=timeout, metadata=self._metadata
            )
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None


class AsyncAgentClient(AsyncChannelClient):
    """The asyncio twin of `AgentClient`."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb)
        self._stub = pb_grpc.AgentServiceStub(self._channel)

    async def reply_stream(
        self,
        msgs: MsgLike | Iterable[MsgLike] | None = None,
        *,
        answer: Answer | None = None,
        session_id: str = "",
        structured_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[events_pb.AgentEvent | Msg]:
        """The reply's events as they happen, then its `Msg`. Cancelling the
        consuming task (or closing the iterator) cancels the call, which
        interrupts the reply."""
        request = reply_request(
            msgs, answer=answer, session_id=session_id, structured_schema=structured_schema
        )
        call = self._stub.Reply(request, timeout=timeout, metadata=self._metadata)
        msg: Msg | None = None
        try:
            async for response in call:
                for item in _items(response):
                    if isinstance(item, Msg):
                        msg = item
                    yield item
        except grpc.aio.AioRpcError as error:
            raise _failed(error, msg) from None
        finally:
            call.cancel()

    async def reply(
        self,
        msgs: MsgLike | Iterable[MsgLike] | None = None,
        **kwargs: Any,
    ) -> Msg:
        """The reply's `Msg` (the keyword arguments are `reply_stream`'s)."""
        return await final_msg(self.reply_stream(msgs, **kwargs))

    async def observe(
        self,
        msgs: MsgLike | Iterable[MsgLike],
        *,
        session_id: str = "",
        timeout: float | None = None,
    ) -> str:
        """Give the agent messages to remember; the session's id."""
        try:
            response = await self._stub.Observe(
                _observe_request(msgs, session_id), timeout=timeout, metadata=self._metadata
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return response.session_id

    async def describe(self, *, timeout: float | None = None) -> pb.DescribeResponse:
        """Who the agent is and what it takes and gives."""
        try:
            return await self._stub.Describe(
                pb.DescribeRequest(), timeout=timeout, metadata=self._metadata
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
