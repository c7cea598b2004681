"""Real AgentScope 2.x agents to host (tests/replay_agent.py: the agent the
golden replies are recorded from), their model a local replay of recorded
OpenAI streams (tests/replay_server.py). Nothing reaches the network.

`serve` starts an AgentService of such agents on a free port, `serve_a2a`
the same with its A2A servers; the fixtures (conftest.py) share one replay
and one server per module. `serve_topic` starts one whose agent takes part
in a topic of the hub it hosts beside.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto.a2a.server import A2AServer, start_a2a
from agentscope_proto.agents import SERVICE_NAME, AgentConfig, AgentServicer, agent_servicer
from agentscope_proto.agents.config import A2AConfig
from agentscope_proto.agents.topic import TopicParticipant, join_topic
from agentscope_proto.hub import HubConfig, HubServicer, hub_service, open_hub_store
from agentscope_proto.service import ServerConfig
from agentscope_proto.service.app import HostedService, add_service

from replay_server import ReplayServer
from server_harness import RunningServer

# What the user says -> the recorded OpenAI streams the model calls replay
# (the golden OpenAI parser cases), one per model call of the reply.
SCRIPT = {
    "hi": ["stream_text_by3", "stream_text_by3"],  # the second: a reply that goes on
    "think first": ["stream_thinking_then_text_by5"],
    "weather?": ["stream_text_then_tool_by4", "stream_text_by3"],
    "three tools": ["stream_parallel_tools_interleaved_by3", "stream_text_by3"],
    "fail": ["http:500"],
    "rate limited": ["http:429"],
    "wait": ["hang"],
    "where am I?": ["stream_text_then_tool_by4@GenerateStructuredOutput"],
    # A team leader assigning "weather?" to Friday (recordings.json).
    "ask Friday": ["stream_team_assign_friday", "stream_text_by3"],
}
RECORDINGS = json.loads((Path(__file__).with_name("recordings.json")).read_text(encoding="utf-8"))
# The text the recorded streams end with.
SUNNY = "The weather in Paris is sunny and 22 degrees."


class AgentServer(RunningServer):
    """A running AgentService; `servicer` is its servicer (on the server's loop)."""

    servicer: AgentServicer

    def stop(self, grace: float = 0) -> None:
        """Stop as `serve_agent` does: the server, the sessions (their leases
        given up), then their store."""
        if self._thread.is_alive() and self._server is not None:
            self.call(self._server.stop(grace))
            self.call(self.servicer.sessions.hand_over())
            self.call(self.servicer.sessions.keeper.store.close())
        super().stop(grace)


S = TypeVar("S", bound=AgentServer)


def _start(
    kind: type[S],
    factory: Callable[[], Any],
    agent_config: AgentConfig | None,
    config: ServerConfig | None,
) -> S:
    async def services() -> list[HostedService]:
        server.servicer = await agent_servicer(factory, agent_config)
        return [
            HostedService(
                SERVICE_NAME, lambda s: add_service(s, pb, "AgentService", server.servicer)
            )
        ]

    server = kind(config or ServerConfig(port=0), services)
    server.start()
    return server


def serve(
    factory: Callable[[], Any],
    agent_config: AgentConfig | None = None,
    config: ServerConfig | None = None,
) -> AgentServer:
    """An AgentService of `factory`'s agents, started on a free port."""
    return _start(AgentServer, factory, agent_config, config)


class A2AServed(AgentServer):
    """A running AgentService with its A2A servers (`a2a`: JSON-RPC and
    HTTP+JSON at `a2a.url`, gRPC too)."""

    a2a: A2AServer

    def stop(self, grace: float = 0) -> None:
        self.call(self.a2a.stop(grace))
        super().stop(grace)


def serve_a2a(
    factory: Callable[[], Any],
    agent_config: AgentConfig | None = None,
    config: ServerConfig | None = None,
) -> A2AServed:
    """`serve`, and the same agents over A2A on free ports."""
    served = _start(A2AServed, factory, agent_config, config)
    try:
        a2a = A2AConfig(port=0, grpc_port=0)
        served.a2a = served.call(start_a2a(served.servicer, a2a, served.config))
    except BaseException:
        AgentServer.stop(served)
        raise
    return served


def user(text: str) -> dict[str, Any]:
    """A user message in AgentScope 2.x's JSON."""
    return {"name": "user", "role": "user", "content": [{"type": "text", "text": text}]}


class TopicServer(AgentServer):
    """A running AgentService whose agent takes part in a topic of the hub
    served beside it; `participant` is the agent in the topic."""

    participant: TopicParticipant

    def stop(self, grace: float = 0) -> None:
        """Leave the topic first, as `serve_agent` drains."""
        self.call(self.participant.close())
        super().stop(grace)


def serve_topic(
    factory: Callable[[], Any], hub: HubConfig, agent_config: AgentConfig
) -> TopicServer:
    """An AgentService of `factory`'s agents in `agent_config.topic` on the
    hub `hub` configures (hosted beside it), started on a free port."""

    async def services() -> list[HostedService]:
        server.servicer = await agent_servicer(factory, agent_config)
        store = await open_hub_store(hub)
        server.hub = HubServicer(store, hub)
        name = server.servicer.description.name
        server.participant = await join_topic(
            server.servicer.sessions, name, store, hub, agent_config
        )
        add = lambda s: add_service(s, pb, "AgentService", server.servicer)  # noqa: E731
        return [HostedService(SERVICE_NAME, add), hub_service(server.hub)]

    server = TopicServer(ServerConfig(port=0), services)
    return server.start()  # type: ignore[return-value]


async def closed_under_reader(
    reply: AsyncIterator[Any], close: Callable[[], Awaitable[None]], replay: ReplayServer
) -> list[Exception]:
    """Read `reply` (a "wait": its model call hangs) in a task, `close()` its
    client once its model call is open, and give what the read ended with (its
    task must end, not be cancelled)."""
    ended: list[Exception] = []

    async def read() -> None:
        try:
            async for _ in reply:
                pass
        except Exception as exc:  # what the caller checks
            ended.append(exc)

    streams = replay.hung_streams
    task = asyncio.ensure_future(read())
    for _ in range(3000):  # 30 s
        if replay.hung_streams > streams:
            break
        assert not task.done(), f"the reply ended before its model call: {ended}"
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the reply's model call never opened")
    await close()
    await asyncio.wait_for(task, 10)
    return ended
