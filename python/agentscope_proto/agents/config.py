"""What a served agent says about itself, and what its callers may make it hold."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["A2AConfig", "AgentConfig"]


@dataclass(frozen=True)
class AgentConfig:
    """How `serve-agent` hosts its agent. The limits bound what callers can
    make the server hold (SECURITY.md lists each and why); beyond one, a call
    is RESOURCE_EXHAUSTED."""

    # Describe's `description` and `version` (the agent card's).
    description: str = ""
    version: str = ""
    # Sessions alive at once: each holds an agent and its memory. Sessions
    # idle past `session_idle_seconds` make room first; a new session beyond
    # the limit is refused, never someone else's evicted.
    max_sessions: int = 1000
    # A session with no call for this long is dropped (its agent with it).
    session_idle_seconds: float = 3600.0
    # Replies running (or waiting for their session) at once, over all sessions.
    max_replies: int = 64

    def __post_init__(self) -> None:
        for name in ("max_sessions", "max_replies"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not self.session_idle_seconds > 0:
            raise ValueError("session_idle_seconds must be more than 0")


@dataclass(frozen=True)
class A2AConfig:
    """How `serve-agent --a2a-port` serves the agent as an A2A 1.0 agent
    (agentscope_proto.a2a.server; needs the `a2a` extra)."""

    # JSON-RPC and HTTP+JSON, and the agent card, on this port (0: any free port).
    port: int
    # A2A's gRPC binding on this port too; None: not served.
    grpc_port: int | None = None
    # The host name the agent card lists (default: the server's `host`): set it
    # when binding all interfaces, or behind a proxy.
    public_host: str | None = None
    # Tasks the server keeps for GetTask: beyond it the oldest finished ones
    # are forgotten (a running or waiting task never is).
    max_tasks: int = 10_000

    def __post_init__(self) -> None:
        if self.max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
