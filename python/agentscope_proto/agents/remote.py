"""`RemoteAgent`: an agent served over the AgentService, or any A2A 1.0 agent,
as a local AgentScope 2.x agent.

It is an `agentscope.agent.Agent`, so it goes wherever one goes (a
`TeamPipeline` member, a `GoalPipeline` executor or verifier, your own loop;
not a `TeamPipeline` leader, whose pipeline adds a tool to the leader's own
toolkit, which a remote agent does not have):
`reply_stream`, `reply` and `observe` call the remote agent, and the events
come back as the `agentscope.event` objects a local agent yields, answers
included (the remote asks `RequireUserConfirmEvent`; the caller replies
again with a `UserConfirmResultEvent`).

The model, tools and memory live in the remote process; `Agent.__init__` is
not called. What a pipeline reads of an agent is kept here: `name`, and
`state`, a mirror of the remote conversation (the messages given, and each
reply's message rebuilt from its events as 2.x's own service rebuilds it), so
`state.reply_id` and `state.has_awaiting_tool_calls(name)` say what the
remote agent says. `state.session_id` is the remote session; clearing
`state.context` (as `TeamPipeline` resets its members) starts a new remote
session, the remote equivalent of forgetting.

An A2A agent (an `http(s)://` target) is called through `AsyncA2AClient`
(`agentscope_proto.a2a.client`), which has the AgentService client's
interface: one class for both, so that a pipeline or a hub need not know
which protocol a member speaks. Its session is the A2A context; what it
observes goes ahead of its next reply's input (A2A has no observe).

Needs AgentScope 2.x.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

import grpc
from agentscope.agent import Agent, ReActConfig
from agentscope.event import (
    ExternalExecutionResultEvent,
    ReplyStartEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope.message import AssistantMsg
from agentscope.message import Msg as AsMsg
from agentscope.state import AgentState
from agentscope.tool import Toolkit
from pydantic import BaseModel

from .. import interop
from .._channel import channel_args
from .._generated.agentscope.message.v1.message_pb2 import Msg
from .client import AgentClient, AsyncAgentClient

if TYPE_CHECKING:
    from ..a2a.client import AsyncA2AClient

__all__ = ["RemoteAgent"]

logger = logging.getLogger("agentscope_proto.agents")

_ANSWERS = (UserConfirmResultEvent, ExternalExecutionResultEvent, UserInterruptEvent)


class RemoteAgent(Agent):  # type: ignore[misc]
    """An agent of an AgentService at `target` (`host:port`; several replicas'
    `host:port`s, failed over between), or any A2A 1.0
    agent (`target` its `http(s)://` URL; the `a2a` extra), as a local
    AgentScope 2.x agent (see the module doc).

    `name` defaults to the remote agent's (asked with one `Describe` call, or
    read from the agent card, blocking, at construction); `session_id`
    (default: a new one) is the remote session (the A2A context) this agent
    talks in; `credentials` and `token` are the channel's TLS credentials
    (gRPC) and bearer token, as for every client here, and `tls_server_name`
    the name a gRPC target's certificate holds (`AgentClient`: needed with
    several IP targets over TLS); `timeout` bounds each call in seconds. Over
    gRPC, a reply whose connection drops is taken up
    where it stopped (`AgentService.Resume`, on whichever replica the
    target reaches) up to `resume_attempts` times in a row (0: the drop
    ends the reply).
    """

    def __init__(
        self,
        target: str | Sequence[str],
        *,
        name: str | None = None,
        session_id: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        timeout: float | None = None,
        max_message_mb: int = 64,
        resume_attempts: int = 5,
        tls_server_name: str | None = None,
    ) -> None:
        # Agent.__init__ is not called: it builds a model, tools and a
        # reasoning loop, which are the remote process's.
        self.target = target
        self._channel_args: dict[str, Any] = {
            "credentials": credentials,
            "token": token,
            "max_message_mb": max_message_mb,
        }
        if not _is_a2a(target):
            # Checked now, as the channel checks them when it is made.
            channel_args(target, credentials, max_message_mb, tls_server_name)
            self._channel_args["tls_server_name"] = tls_server_name
        elif tls_server_name is not None:
            raise ValueError("tls_server_name: for a gRPC target (an A2A URL's host is checked)")
        # Made on first use, in the loop that uses it (an asyncio channel
        # belongs to one loop; an agent may be built before any runs).
        self._client: AsyncAgentClient | AsyncA2AClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if name is None:
            name = _remote_name(target, self._channel_args, timeout or 30.0)
        self.name: str = name
        self.state = AgentState(session_id=session_id or uuid.uuid4().hex)
        self.toolkit = Toolkit()
        self.react_config = ReActConfig()
        self._timeout = timeout
        self._resume_attempts = resume_attempts
        self._used = False  # whether the remote session holds anything

    async def reply_stream(
        self,
        inputs: AsMsg | list[AsMsg] | Any = None,
        structured_schema: type[BaseModel] | dict[str, Any] | None = None,
        yield_final_msg: bool = False,
    ) -> AsyncGenerator[Any, None]:
        """Reply to `inputs` (messages, an answer event, or None to go on),
        streaming the remote agent's events; the reply's message last if
        `yield_final_msg`. A reply that failed remotely raises
        `AgentReplyError` after its events."""
        async for item in self._reply(inputs, structured_schema):
            if isinstance(item, AsMsg) and not yield_final_msg:
                continue
            yield item

    async def reply(
        self,
        inputs: AsMsg | list[AsMsg] | Any = None,
        structured_schema: type[BaseModel] | dict[str, Any] | None = None,
    ) -> AsMsg:
        """The reply's message (its events consumed)."""
        final = None
        async for item in self._reply(inputs, structured_schema):
            if isinstance(item, AsMsg):
                final = item
        if final is None:
            raise RuntimeError(f"the remote agent {self.name!r} gave no final message")
        return final

    async def observe(self, msgs: AsMsg | list[AsMsg] | None = None) -> None:
        """Give the remote agent messages to remember."""
        if msgs is None:
            return
        items = [msgs] if isinstance(msgs, AsMsg) else list(msgs)
        self._follow_reset()
        await self._connected().observe(
            [interop.from_agentscope(msg) for msg in items],
            session_id=self.state.session_id,
            timeout=self._timeout,
        )
        self._used = True
        self.state.context.extend(copy.deepcopy(items))

    async def compress_context(self, *args: Any, **kwargs: Any) -> None:
        """Nothing: the remote agent compresses its own context."""
        logger.warning("compress_context() on RemoteAgent %s: the remote agent owns it", self.name)

    async def aclose(self) -> None:
        """Close the channel."""
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None

    def _connected(self) -> AsyncAgentClient | AsyncA2AClient:
        """The client of the running loop."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            if _is_a2a(self.target):
                from ..a2a.client import AsyncA2AClient

                self._client = AsyncA2AClient(self.target, **self._channel_args)
            else:
                self._client = AsyncAgentClient(self.target, **self._channel_args)
            self._loop = loop
        return self._client

    async def __aenter__(self) -> RemoteAgent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _follow_reset(self) -> None:
        """A cleared context (a pipeline resetting its members) is a new
        remote session: the remote agent forgets as the local one would."""
        if self._used and not self.state.context:
            self.state.session_id = uuid.uuid4().hex
            self._used = False

    async def _reply(
        self, inputs: Any, structured_schema: type[BaseModel] | dict[str, Any] | None
    ) -> AsyncGenerator[Any, None]:
        self._follow_reset()
        msgs: list[AsMsg] = []
        answer = None
        if isinstance(inputs, _ANSWERS):
            answer = interop.event_from_agentscope(inputs)
        elif inputs is not None:
            msgs = [inputs] if isinstance(inputs, AsMsg) else list(inputs)
        schema = (
            structured_schema.model_json_schema()
            if isinstance(structured_schema, type)
            else structured_schema
        )
        client = self._connected()
        resuming = (
            {"resume_attempts": self._resume_attempts}
            if isinstance(client, AsyncAgentClient)
            else {}
        )
        stream = client.reply_stream(
            [interop.from_agentscope(msg) for msg in msgs],
            answer=answer,
            session_id=self.state.session_id,
            structured_schema=schema,
            timeout=self._timeout,
            **resuming,
        )
        accepted = False
        async for item in stream:
            if not accepted:  # the remote took the inputs: they are its context now
                accepted, self._used = True, True
                self.state.context.extend(copy.deepcopy(msgs))
                if answer is not None:
                    self._mirror(inputs)
            if isinstance(item, Msg):
                yield interop.to_agentscope(item)
                continue
            event = interop.event_to_agentscope(item)
            self._mirror(event)
            yield event

    def _mirror(self, event: Any) -> None:
        """Apply a reply's event to the mirror of its message."""
        if isinstance(event, ReplyStartEvent):
            self.state.reply_id = event.reply_id
            self.state.cur_iter = 0
            self.state.context.append(AssistantMsg(name=self.name, content=[], id=event.reply_id))
            return
        reply_id = getattr(event, "reply_id", None)
        for msg in reversed(self.state.context):
            if msg.id == reply_id and msg.role == "assistant" and msg.name == self.name:
                msg.append_event(event)
                return


def _is_a2a(target: str | Sequence[str]) -> TypeGuard[str]:
    """Whether `target` names an A2A agent (its URL) rather than an
    AgentService (`host:port`, a gRPC target such as `dns:///...`, or
    several replicas' `host:port`s)."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def _remote_name(target: str | Sequence[str], channel_args: dict[str, Any], timeout: float) -> str:
    """The remote agent's name: its `Describe`, or its A2A card's."""
    if _is_a2a(target):
        from ..a2a.client import fetch_card

        return str(fetch_card(target, token=channel_args["token"], timeout=timeout).name)
    with AgentClient(target, **channel_args) as client:
        return client.describe(timeout=timeout).name
