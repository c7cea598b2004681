"""`serve_agent`: an AgentScope agent behind the AgentService.

The agent service is a `HostedService` like the FormatterService, so a
server can host it beside others (`serve_agent(..., services=[...])`, or
`service.serve(config, services=[await agent_service(...), ...])`); health
and reflection list every one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from ..service.app import HostedService, add_service, serve
from ..service.config import ServerConfig
from .config import A2AConfig, AgentConfig
from .hosting import hosting_for
from .servicer import SERVICE_NAME, AgentServicer
from .sessions import AgentFactory, Sessions, new_agent

__all__ = ["agent_service", "agent_servicer", "serve_agent"]


async def agent_servicer(
    factory: AgentFactory, config: AgentConfig | None = None, *, probe: Any = None
) -> AgentServicer:
    """The servicer of the agents `factory` makes (a zero-argument callable,
    sync or async, returning a new agent; called once per session).

    An agent of the factory's (`probe`, made now when not given) tells what
    the agents are (their hosting, their description); it serves no session.
    Raises `TypeError` if it is not an AgentScope agent.
    """
    config = config or AgentConfig()
    if probe is None:
        probe = await new_agent(factory)
    hosting = hosting_for(probe)
    description = await hosting.describe(probe)
    description.description = config.description
    description.version = config.version
    return AgentServicer(Sessions(factory, hosting, config), description)


async def agent_service(
    factory: AgentFactory,
    config: AgentConfig | None = None,
    *,
    probe: Any = None,
    a2a: A2AConfig | None = None,
) -> HostedService:
    """The AgentService for `factory`'s agents (see `agent_servicer`), to
    host; with `a2a`, the same agents (the same sessions) as an A2A 1.0
    agent too, on ports of its own (needs the `a2a` extra)."""
    servicer = await agent_servicer(factory, config, probe=probe)
    listen = None
    if a2a is not None:
        from ..a2a.server import a2a_listener

        listen = a2a_listener(servicer, a2a)
    return HostedService(
        SERVICE_NAME,
        lambda server: add_service(server, pb, "AgentService", servicer),
        listen=listen,
    )


async def serve_agent(
    factory: AgentFactory,
    config: ServerConfig | None = None,
    agent_config: AgentConfig | None = None,
    *,
    services: Sequence[HostedService] = (),
    ready: Callable[[int], None] | None = None,
    a2a_port: int | None = None,
    a2a_grpc_port: int | None = None,
) -> None:
    """Serve `factory`'s agents (and `services` beside them) until
    SIGTERM/SIGINT, with `config`'s address, auth, TLS and limits; with
    `a2a_port`, also as an A2A 1.0 agent (JSON-RPC, HTTP+JSON and its card
    there, gRPC on `a2a_grpc_port` if given; the `a2a` extra)."""
    a2a = None
    if a2a_port is not None:
        a2a = A2AConfig(port=a2a_port, grpc_port=a2a_grpc_port)
    elif a2a_grpc_port is not None:
        raise ValueError("a2a_grpc_port needs a2a_port (the agent card is served over HTTP)")
    agent = await agent_service(factory, agent_config, a2a=a2a)
    await serve(config or ServerConfig(), ready, services=[agent, *services])
