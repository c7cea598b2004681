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

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any

import grpc

from .. import _json
from .._channel import AsyncChannelClient, ChannelClient, closed_client
from .._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from .._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from .._generated.agentscope.agent.v1 import events_pb2 as events_pb
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..dialects import from_dict
from ..errors import AgentReplyError, MessageFormatError, RemoteError
from ..events import ASKING_EVENTS, event_from_dict, event_reply_id
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
# The first and the longest wait before taking a reply up again.
_FIRST_WAIT_S, _LAST_WAIT_S = 0.1, 2.0
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


class _Taking:
    """Where a reply stands for its caller, to take it up after the
    connection dropped (`Resume` after the last cursor seen): at most
    `attempts` times in a row, waiting longer each time."""

    def __init__(
        self, request: pb.ReplyRequest, attempts: int, asked: dict[str, tuple[str, str]]
    ) -> None:
        session_id = request.session_id
        answer = request.WhichOneof("answer") is not None
        self.session_id = session_id
        self.reply_id = request.reply_id
        self.cursor = ""
        self.done = False
        self.asking = False  # it ended asking (the answer goes on with it)
        self._asked = asked
        if answer and session_id in asked:
            # An answer goes on with the reply that asked, after its last cursor.
            self.reply_id, self.cursor = asked[session_id]
        self._attempts = attempts
        self._tries = 0

    def saw(self, response: pb.ReplyResponse) -> None:
        self.cursor = response.cursor or self.cursor
        self.done = response.done
        self.asking = response.done and response.event.WhichOneof("event") in ASKING_EVENTS
        self._tries = 0
        self.reply_id = event_reply_id(response.event) or self.reply_id
        if response.event.reply_start.session_id:
            self.session_id = response.event.reply_start.session_id

    def ended(self) -> None:
        """Keep where a reply that asked stopped, for the answer's call."""
        if self.done and self.asking:
            self._asked[self.session_id] = (self.reply_id, self.cursor)
        elif self.done:
            self._asked.pop(self.session_id, None)

    def wait(self, error: grpc.RpcError) -> float | None:
        """How long to wait before resuming after `error`; None: give up.
        A call cut off (UNAVAILABLE, or CANCELLED by a server that stopped
        after its grace) with no status of the server's is taken up, also
        after the reply's end: a failed reply's status follows its end."""
        if error.code() not in _CUT:
            return None
        if not self.reply_id or _from_server(error):
            return None
        self._tries += 1
        if self._tries > self._attempts:
            return None
        return float(min(_FIRST_WAIT_S * 2 ** (self._tries - 1), _LAST_WAIT_S))

    def again(self, stub: Any, request: pb.ReplyRequest, **options: Any) -> Any:
        """The call that takes the reply up: `Resume` after the last cursor;
        before any, the same `Reply` again (it names its reply: the server
        runs it once)."""
        if not self.cursor:
            return stub.Reply(request, **options)
        resume = pb.ResumeRequest(
            session_id=self.session_id, reply_id=self.reply_id, after=self.cursor
        )
        return stub.Resume(resume, **options)

    def check_ended(self) -> None:
        """A reply taken up whose log ended without its end: an answer the
        server never had (its reply's log ends with the question)."""
        if not self.done:
            raise RemoteError(
                grpc.StatusCode.UNAVAILABLE,
                f"the connection dropped before the server had the answer to reply "
                f"{self.reply_id!r}; send it again",
            )

    def failed(self, error: grpc.RpcError, msg: Msg | None) -> Exception:
        if self._tries > self._attempts > 0:
            return RemoteError(
                grpc.StatusCode.UNAVAILABLE,
                f"the connection dropped during reply {self.reply_id!r} and {self._attempts} "
                f"attempts to take it up failed (last: {error.details()})",
            )
        return _failed(error, msg)

    def interrupt_request(self) -> pb.ReplyRequest | None:
        """The interrupt of a reply kept running that its caller left
        before it ended (None: nothing to interrupt)."""
        if self.done or not self.reply_id:
            return None
        request = pb.ReplyRequest(session_id=self.session_id)
        request.user_interrupt.reply_id = self.reply_id
        return request


# How a call cut off ends: the connection dropped (UNAVAILABLE), or the
# server stopped with the call running (grpc's cancellation of its calls
# reaches the client as either).
_CUT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


def _name_reply(request: pb.ReplyRequest, resume_attempts: int) -> None:
    """A request taken up when its connection drops keeps its reply running,
    and names it (unless it answers one), so that sending it again before
    any response runs it once."""
    request.keep_running = resume_attempts > 0
    if request.keep_running and request.WhichOneof("answer") is None:
        request.reply_id = uuid.uuid4().hex


def _from_server(error: grpc.RpcError) -> bool:
    """Whether the server sent the status (with its details), rather than
    the connection failing."""
    return not isinstance(error_from_rpc(error), RemoteError)


def _failed(error: grpc.RpcError, msg: Msg | None) -> Exception:
    exc = error_from_rpc(error)
    if isinstance(exc, AgentReplyError):
        exc.msg = msg
    return exc


class AgentClient(ChannelClient):
    """A blocking client: `reply_stream`, `resume`, `reply`, `observe`, `describe`.

    `target`: one gRPC target, or several replicas' `host:port`s, failed
    over between (IP addresses: one channel; host names: a channel each,
    calls going on to the next when one fails). Over TLS (`credentials`),
    several IP targets need `tls_server_name`, the name every replica's
    certificate holds (it replaces the target's host in the check for one
    target too; named replicas are each checked on their own name)."""

    def __init__(
        self,
        target: str | Sequence[str],
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
        tls_server_name: str | None = None,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb, tls_server_name)
        self._stub = pb_grpc.AgentServiceStub(self._channel)
        # Per session: the reply that asked last, and its last cursor.
        self._asked: dict[str, tuple[str, str]] = {}

    def reply_stream(
        self,
        msgs: MsgLike | Iterable[MsgLike] | None = None,
        *,
        answer: Answer | None = None,
        session_id: str = "",
        structured_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        resume_attempts: int = 0,
    ) -> Iterator[events_pb.AgentEvent | Msg]:
        """The reply's events as they happen, then its `Msg`. Closing the
        iterator early cancels the call, which interrupts the reply. With
        `resume_attempts`, the reply keeps running on the server when the
        connection drops, and is taken up where it stopped (`Resume`) up to
        that many times in a row, with a growing wait, before `RemoteError`."""
        request = reply_request(
            msgs, answer=answer, session_id=session_id, structured_schema=structured_schema
        )
        _name_reply(request, resume_attempts)
        taking = _Taking(request, resume_attempts, self._asked)
        self._check_open()
        call: Any = self._stub.Reply(request, timeout=timeout, metadata=self._metadata)
        msg: Msg | None = None
        try:
            while True:
                try:
                    for response in call:
                        taking.saw(response)
                        for item in _items(response):
                            if isinstance(item, Msg):
                                msg = item
                            yield item
                    taking.check_ended()
                    return
                except grpc.RpcError as error:
                    self._check_open()  # closed: the cut is close()'s
                    wait = taking.wait(error)
                    if wait is None:
                        raise taking.failed(error, msg) from None
                time.sleep(wait)
                try:
                    call = taking.again(
                        self._stub, request, timeout=timeout, metadata=self._metadata
                    )
                except ValueError:  # grpc's refusal of a call on a channel closed meanwhile
                    self._check_open()
                    raise
        finally:
            taking.ended()
            call.cancel()  # a no-op once the call ended
            keep = request.keep_running and not self._closed
            interrupt = taking.interrupt_request() if keep else None
            if interrupt is not None:
                with contextlib.suppress(grpc.RpcError):
                    list(self._stub.Reply(interrupt, timeout=5, metadata=self._metadata))

    def resume(
        self, session_id: str, reply_id: str, *, after: str = "", timeout: float | None = None
    ) -> Iterator[pb.ReplyResponse]:
        """A reply's responses after the cursor `after` ("": all of them),
        then its live rest (`Resume`), each with its cursor; the reply's
        error is raised after its last."""
        request = pb.ResumeRequest(session_id=session_id, reply_id=reply_id, after=after)
        self._check_open()
        call = self._stub.Resume(request, timeout=timeout, metadata=self._metadata)
        try:
            yield from call
        except grpc.RpcError as error:
            self._check_open()
            raise error_from_rpc(error) from None
        finally:
            call.cancel()

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
        self._check_open()
        try:
            response = self._stub.Observe(
                _observe_request(msgs, session_id), timeout=timeout, metadata=self._metadata
            )
        except grpc.RpcError as error:
            self._check_open()
            raise error_from_rpc(error) from None
        return response.session_id

    def describe(self, *, timeout: float | None = None) -> pb.DescribeResponse:
        """Who the agent is and what it takes and gives."""
        self._check_open()
        try:
            return self._stub.Describe(
                pb.DescribeRequest(), timeout=timeout, metadata=self._metadata
            )
        except grpc.RpcError as error:
            self._check_open()
            raise error_from_rpc(error) from None


class AsyncAgentClient(AsyncChannelClient):
    """The asyncio twin of `AgentClient`."""

    def __init__(
        self,
        target: str | Sequence[str],
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        max_message_mb: int = 64,
        tls_server_name: str | None = None,
    ) -> None:
        super().__init__(target, credentials, token, max_message_mb, tls_server_name)
        self._stub: pb_grpc.AgentServiceAsyncStub
        # Per session: the reply that asked last, and its last cursor.
        self._asked: dict[str, tuple[str, str]] = {}

    def _made(self, channel: grpc.aio.Channel) -> None:
        self._stub = pb_grpc.AgentServiceStub(channel)

    async def reply_stream(
        self,
        msgs: MsgLike | Iterable[MsgLike] | None = None,
        *,
        answer: Answer | None = None,
        session_id: str = "",
        structured_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        resume_attempts: int = 0,
    ) -> AsyncIterator[events_pb.AgentEvent | Msg]:
        """The reply's events as they happen, then its `Msg`. Cancelling the
        consuming task (or closing the iterator) cancels the call, which
        interrupts the reply. `resume_attempts`: as `AgentClient`'s."""
        request = reply_request(
            msgs, answer=answer, session_id=session_id, structured_schema=structured_schema
        )
        _name_reply(request, resume_attempts)
        taking = _Taking(request, resume_attempts, self._asked)
        self._check_open()
        call: Any = self._stub.Reply(request, timeout=timeout, metadata=self._metadata)
        msg: Msg | None = None
        try:
            while True:
                try:
                    async for response in call:
                        taking.saw(response)
                        for item in _items(response):
                            if isinstance(item, Msg):
                                msg = item
                            yield item
                    taking.check_ended()
                    return
                except grpc.aio.AioRpcError as error:
                    self._check_open()  # closed: the cut is close()'s
                    wait = taking.wait(error)
                    if wait is None:
                        raise taking.failed(error, msg) from None
                except asyncio.CancelledError:
                    if self._closed_under():  # grpc's, for the call close() cancelled
                        raise closed_client() from None
                    raise
                await asyncio.sleep(wait)
                self._check_open()
                call = taking.again(self._stub, request, timeout=timeout, metadata=self._metadata)
        finally:
            taking.ended()
            call.cancel()
            keep = request.keep_running and not self._closed
            interrupt = taking.interrupt_request() if keep else None
            if interrupt is not None:
                await _interrupt_kept(self._stub, interrupt, self._metadata)

    async def resume(
        self, session_id: str, reply_id: str, *, after: str = "", timeout: float | None = None
    ) -> AsyncIterator[pb.ReplyResponse]:
        """`AgentClient.resume` for asyncio."""
        request = pb.ResumeRequest(session_id=session_id, reply_id=reply_id, after=after)
        self._check_open()
        call = self._stub.Resume(request, timeout=timeout, metadata=self._metadata)
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as error:
            self._check_open()
            raise error_from_rpc(error) from None
        except asyncio.CancelledError:
            if self._closed_under():
                raise closed_client() from None
            raise
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
        self._check_open()
        try:
            response = await self._stub.Observe(
                _observe_request(msgs, session_id), timeout=timeout, metadata=self._metadata
            )
        except grpc.aio.AioRpcError as error:
            self._check_open()
            raise error_from_rpc(error) from None
        except asyncio.CancelledError:
            if self._closed_under():
                raise closed_client() from None
            raise
        return response.session_id

    async def describe(self, *, timeout: float | None = None) -> pb.DescribeResponse:
        """Who the agent is and what it takes and gives."""
        self._check_open()
        try:
            return await self._stub.Describe(
                pb.DescribeRequest(), timeout=timeout, metadata=self._metadata
            )
        except grpc.aio.AioRpcError as error:
            self._check_open()
            raise error_from_rpc(error) from None
        except asyncio.CancelledError:
            if self._closed_under():
                raise closed_client() from None
            raise


async def _interrupt_kept(stub: Any, request: pb.ReplyRequest, metadata: Any) -> None:
    """Interrupt a reply kept running whose caller left it (best effort:
    the caller is gone either way), shielded from the caller's own cancel."""

    async def interrupt() -> None:
        with contextlib.suppress(grpc.aio.AioRpcError):
            async for _ in stub.Reply(request, timeout=5, metadata=metadata):
                pass

    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.shield(interrupt())
