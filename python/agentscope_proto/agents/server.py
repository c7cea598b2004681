"""`serve_agent`: an AgentScope agent behind the AgentService.

The agent service is a `HostedService` like the FormatterService, so a
server can host it beside others (`serve_agent(..., services=[...])`, or
`service.serve(config, services=[await agent_service(...), ...])`); health
and reflection list every one. With `AgentConfig.topic`, `serve_agent` also
makes the agent a participant of that topic of the server's hub (`topic.py`);
with an `A2AConfig`, the same agents (the same sessions) are an A2A 1.0 agent
too, on ports of their own (`a2a/server.py`), and with an AG-UI port an AG-UI
agent (`agui/server.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from ..hub.factory import open_hub_store
from ..hub.servicer import HubServicer, hub_service
from ..service.app import HostedService, add_service, serve
from ..service.config import ServerConfig
from ..service.hosting import Listener
from .config import A2AConfig, AgentConfig
from .hosting import hosting_for
from .servicer import SERVICE_NAME, AgentServicer
from .sessions import AgentFactory, Sessions, new_agent
from .state import open_state_store
from .topic import join_topic

__all__ = ["agent_service", "agent_servicer", "serve_agent"]

logger = logging.getLogger("agentscope_proto.agents")


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
    store = await open_state_store(config.state, description.name, config.reply_log_mb << 20)
    return AgentServicer(Sessions(factory, hosting, config, store), description)


async def agent_service(
    factory: AgentFactory,
    config: AgentConfig | None = None,
    *,
    probe: Any = None,
    a2a: A2AConfig | None = None,
    agui_port: int | None = None,
) -> HostedService:
    """The AgentService for `factory`'s agents (see `agent_servicer`), to
    host; with `a2a`, the same agents as an A2A 1.0 agent too (the `a2a`
    extra); with `agui_port`, as an AG-UI agent on that port (the `agui`
    extra)."""
    servicer = await agent_servicer(factory, config, probe=probe)
    return _hosted(servicer, a2a=a2a, agui_port=agui_port)


def _hosted(
    servicer: AgentServicer,
    drain: Callable[[], Awaitable[None]] | None = None,
    a2a: A2AConfig | None = None,
    agui_port: int | None = None,
) -> HostedService:
    listeners: list[Callable[[ServerConfig], Awaitable[Listener]]] = []
    if a2a is not None:
        from ..a2a.server import a2a_listener

        listeners.append(a2a_listener(servicer, a2a))
    if agui_port is not None:
        from ..agui.server import agui_listener

        listeners.append(agui_listener(servicer.sessions, agui_port))
    return HostedService(
        SERVICE_NAME,
        lambda server: add_service(server, pb, "AgentService", servicer),
        drain,
        _all_of(listeners) if listeners else None,
    )


def _all_of(
    listeners: Sequence[Callable[[ServerConfig], Awaitable[Listener]]],
) -> Callable[[ServerConfig], Awaitable[Listener]]:
    """One listener of several (the A2A and AG-UI servers), started in turn:
    those started are stopped if a later one fails to."""

    async def listen(config: ServerConfig) -> Listener:
        started: list[Listener] = []
        try:
            for start in listeners:
                started.append(await start(config))
        except BaseException:
            await asyncio.gather(*(each.stop(0) for each in started))
            raise
        return _Listeners(started)

    return listen


class _Listeners:
    """Several listeners as one `Listener`."""

    def __init__(self, listeners: Sequence[Listener]) -> None:
        self._listeners = listeners

    @property
    def addresses(self) -> list[str]:
        return [address for each in self._listeners for address in each.addresses]

    async def stop(self, grace_seconds: float) -> None:
        await asyncio.gather(*(each.stop(grace_seconds) for each in self._listeners))


async def serve_agent(
    factory: AgentFactory,
    config: ServerConfig | None = None,
    agent_config: AgentConfig | None = None,
    *,
    services: Sequence[HostedService] = (),
    ready: Callable[[int], None] | None = None,
    probe: Any = None,
    a2a: A2AConfig | None = None,
    a2a_port: int | None = None,
    a2a_grpc_port: int | None = None,
    agui_port: int | None = None,
) -> None:
    """Serve `factory`'s agents (and `services` beside them) until
    SIGTERM/SIGINT, with `config`'s address, auth, TLS and limits (`probe`:
    see `agent_servicer`); with `a2a` (or its two ports, `a2a_port` and
    `a2a_grpc_port`), also as an A2A 1.0 agent (JSON-RPC, HTTP+JSON and its
    card on the one, gRPC on the other if given; the `a2a` extra); with
    `agui_port`, also as an AG-UI agent on that port (`agui/server.py`; the
    `agui` extra).

    With `agent_config.topic`, the agent takes part in that topic of the
    server's hub (`config.hub`, which the server hosts too): it follows the
    topic before the server listens, and leaves it first when it drains.
    """
    config = config or ServerConfig()
    agent_config = agent_config or AgentConfig()
    if a2a_port is not None:
        if a2a is not None:
            raise ValueError("give a2a= or a2a_port=, not both")
        a2a = A2AConfig(port=a2a_port, grpc_port=a2a_grpc_port)
    elif a2a_grpc_port is not None:
        raise ValueError("a2a_grpc_port needs a2a_port (the agent card is served over HTTP)")
    if agent_config.topic is not None and config.hub is None:
        raise ValueError("a topic needs a hub: ServerConfig(hub=HubConfig(...))")
    servicer = await agent_servicer(factory, agent_config, probe=probe)
    # The server line says what the FormatterService may read; this, the agent's.
    logger.info("agent %r: %s", servicer.description.name, agent_config.media.describe())
    try:
        await _serve(servicer, config, agent_config, ready, services, a2a, agui_port)
    finally:
        await servicer.sessions.hand_over()
        await servicer.sessions.keeper.store.close()


async def _serve(
    servicer: AgentServicer,
    config: ServerConfig,
    agent_config: AgentConfig,
    ready: Callable[[int], None] | None,
    services: Sequence[HostedService],
    a2a: A2AConfig | None,
    agui_port: int | None,
) -> None:
    """Serve the agent, with its hub and topic if it has them."""
    drain = servicer.sessions.drain
    if config.hub is None:
        await serve(config, ready, services=[_hosted(servicer, drain, a2a, agui_port), *services])
        return
    hub = HubServicer(await open_hub_store(config.hub), config.hub)
    try:
        if agent_config.topic is None:
            hosted = [_hosted(servicer, drain, a2a, agui_port), hub_service(hub), *services]
            await serve(config, ready, services=hosted)
            return
        participant = await join_topic(
            servicer.sessions, servicer.description.name, hub.store, config.hub, agent_config
        )

        async def leave_and_drain() -> None:
            await participant.close()
            await drain()

        try:
            hosted = [
                _hosted(servicer, leave_and_drain, a2a, agui_port),
                hub_service(hub),
                *services,
            ]
            await serve(config, ready, services=hosted)
        finally:
            await participant.close()
    finally:
        await hub.store.close()
