"""Agents talking A2A to a served agent: AgentScope 2.x's own
`agentscope.agent.A2AAgent` (a client nobody here wrote: its replies must
come back as AgentScope expects them), and `RemoteAgent` with an A2A URL
(the extension: the same events, answers and structured output as over the
AgentService).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from a2a.client import ClientConfig, ClientFactory
from agentscope.agent import A2AAgent, Agent
from agentscope.event import (
    ConfirmResult,
    ReplyEndEvent,
    ReplyStartEvent,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    TextBlockStartEvent,
    ToolResultEndEvent,
    UserConfirmResultEvent,
)
from agentscope.message import Msg, UserMsg
from pydantic import BaseModel

from agentscope_proto.agents import RemoteAgent
from agentscope_proto.errors import AgentReplyError

from hosted import SUNNY, A2AServed, closed_under_reader, serve_a2a
from replay_server import ReplayServer, wait_until


@pytest.fixture(scope="module")
def served(factory: Callable[[], Any]) -> Iterator[A2AServed]:
    server = serve_a2a(factory)
    yield server
    server.stop()


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _context(server: A2AServed, session_id: str) -> list[Any]:
    session = await server.servicer.sessions.open(session_id, create=False)
    return list(session.agent.state.context)


# --- AgentScope 2.x's own A2AAgent ---------------------------------------------


def test_agentscopes_own_a2a_agent_gets_the_reply_as_it_expects(served: A2AServed) -> None:
    async def main() -> tuple[list[Any], Msg, str | None]:
        async with A2AAgent(served.a2a.card) as agent:
            items = [
                item
                async for item in agent.reply_stream(UserMsg("user", "hi"), yield_final_msg=True)
            ]
            again = await agent.reply(UserMsg("user", "hi"))
            return items, again, agent.state.context_id

    items, again, context_id = _run(main())
    kinds = [type(item) for item in items]
    assert kinds == [
        ReplyStartEvent,
        TextBlockStartEvent,
        TextBlockDeltaEvent,
        TextBlockEndEvent,
        ReplyEndEvent,
        Msg,
    ]
    reply = items[-1]
    assert (reply.name, reply.role, reply.get_text_content()) == ("Friday", "assistant", SUNNY)
    assert items[-2].finished_reason == "completed"
    assert again.get_text_content() == SUNNY
    # Both replies went on in one session: the A2A context is the session.
    assert context_id is not None
    context = served.call(_context(served, context_id))
    assert [msg.role for msg in context] == ["user", "assistant", "user", "assistant"]


def test_agentscopes_own_a2a_agent_answers_a_confirmation_in_words(served: A2AServed) -> None:
    async def main() -> tuple[Msg, Msg, str | None]:
        async with A2AAgent(served.a2a.card) as agent:
            asked = await agent.reply(UserMsg("user", "weather?"))
            waiting = agent.state.task_id
            answered = await agent.reply(UserMsg("user", "yes"))
            return asked, answered, waiting

    asked, answered, waiting = _run(main())
    assert "Friday asks to run get_weather(" in asked.get_text_content()
    assert waiting is not None  # the task waits: its next message continues it
    assert answered.get_text_content() == SUNNY


def test_agentscopes_own_a2a_agent_over_grpc(served: A2AServed) -> None:
    async def main() -> Msg:
        config = ClientConfig(
            streaming=True,
            supported_protocol_bindings=["GRPC"],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        client = ClientFactory(config).create(served.a2a.card)
        async with A2AAgent(served.a2a.card, client=client) as agent:
            return await agent.reply(UserMsg("user", "hi"))

    assert _run(main()).get_text_content() == SUNNY


# --- RemoteAgent with an A2A URL ---------------------------------------------------


def test_a_remote_a2a_agent_is_an_agent_named_from_its_card(served: A2AServed) -> None:
    remote = RemoteAgent(served.a2a.url)
    assert isinstance(remote, Agent)
    assert remote.name == "Friday"


def test_a_remote_a2a_agent_streams_the_events_of_the_agentservice(served: A2AServed) -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        async with RemoteAgent(served.a2a.url) as over_a2a, RemoteAgent(served.target) as direct:
            first = [
                i async for i in over_a2a.reply_stream(UserMsg("user", "hi"), yield_final_msg=True)
            ]
            second = [
                i async for i in direct.reply_stream(UserMsg("user", "hi"), yield_final_msg=True)
            ]
            return first, second

    over_a2a, direct = _run(main())
    assert [type(item) for item in over_a2a] == [type(item) for item in direct]
    assert over_a2a[-1].get_text_content() == direct[-1].get_text_content() == SUNNY


def test_a_remote_a2a_agent_asks_and_is_answered_from_the_callers_side(
    served: A2AServed,
) -> None:
    async def main() -> tuple[list[Any], bool]:
        remote = RemoteAgent(served.a2a.url)
        asked = [item async for item in remote.reply_stream(UserMsg("user", "weather?"))]
        request = asked[-1]
        assert isinstance(request, RequireUserConfirmEvent)
        assert remote.state.has_awaiting_tool_calls(remote.name)
        answer = UserConfirmResultEvent(
            reply_id=request.reply_id,
            confirm_results=[ConfirmResult(confirmed=True, tool_call=request.tool_calls[0])],
        )
        items = [item async for item in remote.reply_stream(answer, yield_final_msg=True)]
        waiting = remote.state.has_awaiting_tool_calls(remote.name)
        await remote.aclose()
        return items, waiting

    items, waiting = _run(main())
    results = [item for item in items if isinstance(item, ToolResultEndEvent)]
    assert [result.state for result in results] == ["success"]
    assert items[-1].get_text_content() == SUNNY
    assert not waiting


class Place(BaseModel):
    city: str
    unit: str = "celsius"


def test_a_remote_a2a_agent_takes_a_structured_output_schema(served: A2AServed) -> None:
    msg = _run(RemoteAgent(served.a2a.url).reply(UserMsg("user", "where am I?"), Place))
    assert msg.structured_output == {"city": "Paris", "unit": "celsius"}


def test_a_remote_a2a_failure_raises_after_its_events(served: A2AServed) -> None:
    async def collect(items: list[Any]) -> None:
        async for item in RemoteAgent(served.a2a.url).reply_stream(UserMsg("user", "fail")):
            items.append(item)

    items: list[Any] = []
    with pytest.raises(AgentReplyError) as info:
        _run(collect(items))
    assert info.value.error_type == "upstream"
    assert isinstance(items[-1], ReplyEndEvent)
    assert items[-1].finished_reason == "error"


def test_cancelling_the_caller_interrupts_the_remote_a2a_reply(
    served: A2AServed, replay: ReplayServer
) -> None:
    async def main() -> str:
        remote = RemoteAgent(served.a2a.url)

        async def consume() -> None:
            async for _ in remote.reply_stream(UserMsg("user", "wait")):
                pass

        task = asyncio.create_task(consume())
        while replay.open_streams == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await remote.aclose()
        return str(remote.state.session_id)

    session = _run(main())
    assert wait_until(lambda: not served.servicer.sessions.running and replay.open_streams == 0)
    # The reply was closed as an interrupt closes it; the session goes on.
    context = served.call(_context(served, session))
    assert [msg.role for msg in context] == ["user", "assistant"]
    again = _run(RemoteAgent(served.a2a.url, session_id=session).reply(UserMsg("user", "hi")))
    assert again.get_text_content() == SUNNY


@pytest.mark.parametrize("binding", ["JSONRPC", "GRPC"])
def test_a_closed_a2a_client_ends_the_reply_it_reads_saying_so(
    served: A2AServed, replay: ReplayServer, binding: str
) -> None:
    """An `AsyncA2AClient` closed while a task reads a reply ends that read
    with `RemoteError(CANCELLED, "the client was closed")` (not a network
    error, nor a `CancelledError` in a task nobody cancelled), and refuses
    its calls after."""
    from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
    from agentscope_proto.a2a.client import AsyncA2AClient
    from agentscope_proto.agents import reply_request
    from agentscope_proto.errors import RemoteError

    session = f"closed-{binding}"

    async def main() -> list[Exception]:
        client = AsyncA2AClient(served.a2a.url, bindings=[binding])
        reply = client.reply_stream(
            {"role": "user", "name": "u", "content": "wait"}, session_id=session
        )
        ended = await closed_under_reader(reply, client.close, replay)
        for call in (
            client.describe,
            lambda: client.reply({"role": "user", "name": "u", "content": "hi"}),
        ):
            try:
                await call()
            except RemoteError as exc:
                ended.append(exc)
        return ended

    ended = _run(main())
    assert [(e.code, e.message) for e in ended] == [
        (grpc.StatusCode.CANCELLED, "the client was closed")
    ] * 3
    # Its task goes on on the server (the closed client could not cancel it): interrupted here.
    with grpc.insecure_channel(served.target) as channel:
        request = reply_request(session_id=session)
        request.user_interrupt.SetInParent()
        list(pb_grpc.AgentServiceStub(channel).Reply(request, timeout=10))
    assert wait_until(lambda: not served.servicer.sessions.running and replay.open_streams == 0)


def test_observed_messages_reach_the_remote_a2a_session(served: A2AServed) -> None:
    async def main() -> str:
        remote = RemoteAgent(served.a2a.url)
        await remote.observe(UserMsg("Bob", "Remember: the sky is green."))
        await remote.reply(UserMsg("user", "hi"))
        await remote.aclose()
        return str(remote.state.session_id)

    session = _run(main())
    context = served.call(_context(served, session))
    assert [(msg.name, msg.get_text_content()) for msg in context[:2]] == [
        ("Bob", "Remember: the sky is green."),
        ("user", "hi"),
    ]
