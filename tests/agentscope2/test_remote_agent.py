"""`RemoteAgent`: a served agent as a local AgentScope 2.x agent, in the
caller's own loop and inside AgentScope's pipelines, human-in-the-loop
included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.event import (
    ConfirmResult,
    ReplyEndEvent,
    ReplyStartEvent,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    ToolResultEndEvent,
    UserConfirmResultEvent,
)
from agentscope.message import Msg, UserMsg
from agentscope.pipeline import TeamMember, TeamPipeline
from pydantic import BaseModel

from agentscope_proto.agents import RemoteAgent
from agentscope_proto.errors import AgentReplyError

from hosted import SUNNY, AgentServer
from replay_agent import make_agent


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_it_is_an_agent_named_after_the_remote_one(served: AgentServer) -> None:
    remote = RemoteAgent(served.target)
    assert isinstance(remote, Agent)
    assert remote.name == "Friday"
    assert RemoteAgent(served.target, name="Weather").name == "Weather"
    TeamMember(agent=remote, description="knows the weather")  # pydantic checks the type


def test_the_name_a_certificate_holds_is_for_grpc_targets_and_several_ips_need_it() -> None:
    """Over TLS, several replicas' IP targets need `tls_server_name` (checked
    on each replica's certificate); an A2A URL takes none (its host is checked)."""
    import grpc

    credentials = grpc.ssl_channel_credentials()
    with pytest.raises(ValueError, match=r"^tls_server_name: several IP targets over TLS"):
        RemoteAgent(["127.0.0.1:1", "127.0.0.1:2"], name="r", credentials=credentials)
    with pytest.raises(ValueError, match=r"^tls_server_name: for a gRPC target"):
        RemoteAgent("https://agents.internal/", name="r", tls_server_name="agents.internal")
    remote = RemoteAgent(
        ["127.0.0.1:1", "127.0.0.1:2"],
        name="r",
        credentials=credentials,
        tls_server_name="agents.internal",
    )
    assert remote.name == "r"


def test_reply_and_reply_stream_give_what_a_local_agent_gives(served: AgentServer) -> None:
    async def main() -> tuple[list[Any], Msg]:
        async with RemoteAgent(served.target) as remote:
            items = [item async for item in remote.reply_stream(UserMsg("user", "hi"))]
            return items, await remote.reply(UserMsg("user", "hi"))

    items, msg = _run(main())
    assert isinstance(items[0], ReplyStartEvent)
    assert isinstance(items[-1], ReplyEndEvent)
    assert not any(isinstance(item, Msg) for item in items)
    text = "".join(item.delta for item in items if isinstance(item, TextBlockDeltaEvent))
    assert text == SUNNY
    assert isinstance(msg, Msg)
    assert msg.get_text_content() == SUNNY
    assert msg.finished_reason == "completed"


def test_a_confirmation_is_answered_from_the_callers_side(served: AgentServer) -> None:
    async def main() -> tuple[Any, ...]:
        remote = RemoteAgent(served.target)
        asked = [item async for item in remote.reply_stream(UserMsg("user", "weather?"))]
        request = asked[-1]
        assert isinstance(request, RequireUserConfirmEvent)
        assert remote.state.has_awaiting_tool_calls(remote.name)
        assert remote.state.reply_id == request.reply_id
        answer = UserConfirmResultEvent(
            reply_id=request.reply_id,
            confirm_results=[ConfirmResult(confirmed=True, tool_call=request.tool_calls[0])],
        )
        items = [item async for item in remote.reply_stream(answer, yield_final_msg=True)]
        waiting_after = remote.state.has_awaiting_tool_calls(remote.name)
        await remote.aclose()
        return items, waiting_after, remote.state.context

    items, waiting_after, context = _run(main())
    results = [item for item in items if isinstance(item, ToolResultEndEvent)]
    assert [result.state for result in results] == ["success"]
    assert isinstance(items[-1], Msg)
    assert items[-1].get_text_content() == SUNNY
    assert not waiting_after
    # The mirror: the user's words, then the reply rebuilt from its events.
    assert [msg.role for msg in context] == ["user", "assistant"]
    blocks = [block.type for block in context[-1].content]
    assert blocks.count("tool_call") == 1
    assert blocks.count("tool_result") == 1


def test_observed_messages_reach_the_remote_session(served: AgentServer) -> None:
    async def main() -> str:
        remote = RemoteAgent(served.target)
        await remote.observe(UserMsg("Bob", "Remember: the sky is green."))
        await remote.reply(UserMsg("user", "hi"))
        return remote.state.session_id

    session = _run(main())
    said = [m.get_text_content() for m in served.call(_agent_context(served, session))]
    assert said[0] == "Remember: the sky is green."


async def _agent_context(server: AgentServer, session_id: str) -> list[Any]:
    session = await server.servicer.sessions.open(session_id, create=False)
    return list(session.agent.state.context)


def test_a_cleared_context_starts_a_new_remote_session(served: AgentServer) -> None:
    async def main() -> tuple[str, str]:
        remote = RemoteAgent(served.target)
        await remote.reply(UserMsg("user", "hi"))
        first = remote.state.session_id
        remote.state.context.clear()  # as TeamPipeline resets its members
        await remote.reply(UserMsg("user", "hi"))
        return first, remote.state.session_id

    first, second = _run(main())
    assert first != second


class Place(BaseModel):
    city: str
    unit: str = "celsius"


def test_structured_output_takes_a_pydantic_model(served: AgentServer) -> None:
    msg = _run(RemoteAgent(served.target).reply(UserMsg("user", "where am I?"), Place))
    assert msg.structured_output == {"city": "Paris", "unit": "celsius"}


def test_a_remote_failure_raises_after_its_events(served: AgentServer) -> None:
    async def collect(items: list[Any]) -> None:
        async for item in RemoteAgent(served.target).reply_stream(UserMsg("user", "fail")):
            items.append(item)

    async def main() -> list[Any]:
        items: list[Any] = []
        with pytest.raises(AgentReplyError) as info:
            await collect(items)
        assert info.value.error_type == "upstream"
        return items

    items = _run(main())
    assert isinstance(items[-1], ReplyEndEvent)
    assert items[-1].finished_reason == "error"
    assert items[-1].error.type == "upstream"


def test_a_team_pipeline_runs_a_remote_member_and_its_confirmation(
    served: AgentServer, factory: Callable[[], Any]
) -> None:
    """A local leader assigns to the remote Friday; Friday asks to confirm its
    tool call; the caller answers through the pipeline; both finish."""

    async def main() -> tuple[list[Any], list[Any]]:
        leader = make_agent(_base_url(factory), name="Leader")
        member = TeamMember(agent=RemoteAgent(served.target), description="knows the weather")
        team = TeamPipeline(leader, [member])
        first = [event async for event in team.reply_stream(UserMsg("user", "ask Friday"))]
        request = first[-1]
        assert isinstance(request, RequireUserConfirmEvent)
        answer = UserConfirmResultEvent(
            reply_id=request.reply_id,
            confirm_results=[ConfirmResult(confirmed=True, tool_call=request.tool_calls[0])],
        )
        second = [event async for event in team.reply_stream(answer)]
        return first, second

    first, second = _run(main())
    assert any(isinstance(e, ReplyStartEvent) and e.name == "Friday" for e in first)
    ends = [(e.reply_id, e.finished_reason) for e in second if isinstance(e, ReplyEndEvent)]
    assert len(ends) == 2  # Friday's reply, then the leader's
    assert all(reason == "completed" for _, reason in ends)
    text = "".join(e.delta for e in second if isinstance(e, TextBlockDeltaEvent))
    assert text == SUNNY * 2


def _base_url(factory: Callable[[], Any]) -> str:
    url: str = factory().model.client.base_url.__str__().rstrip("/")
    return url
