"""Agents across processes: AgentScope agents served over gRPC, and called.

- `event_from_dict` / `event_to_dict` (from `agentscope_proto.events`): AgentScope
  2.x's agent events from and to `AgentEvent` (pure).
- `serve_agent` / `agent_service`: host an agent factory's agents, one per
  session (`sessions`, `hosting`, `servicer`, `server`; limits in `AgentConfig`).
- `AgentClient`, `AsyncAgentClient`: call a served agent with the schema's
  types; `RemoteAgent` (needs AgentScope 2.x): a served agent as a local
  AgentScope agent, for pipelines.
- `AgentConfig.topic`: the served agent takes part in a hub topic (`topic`;
  its session is `topic_session(topic)`).
"""

from __future__ import annotations

from typing import Any

from ..events import event_from_dict, event_to_dict
from .client import AgentClient, AsyncAgentClient, reply_request
from .config import AgentConfig, topic_session
from .server import agent_service, agent_servicer, serve_agent
from .servicer import SERVICE_NAME, AgentServicer

__all__ = [
    "SERVICE_NAME",
    "AgentClient",
    "AgentConfig",
    "AgentServicer",
    "AsyncAgentClient",
    "RemoteAgent",
    "agent_service",
    "agent_servicer",
    "event_from_dict",
    "event_to_dict",
    "reply_request",
    "serve_agent",
    "topic_session",
]


def __getattr__(name: str) -> Any:
    # RemoteAgent subclasses AgentScope 2.x's Agent: imported on first use.
    if name == "RemoteAgent":
        from .remote import RemoteAgent

        return RemoteAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
