"""What a served agent says about itself, what its callers may make it hold,
and the hub topic it takes part in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .media import MediaPolicy

__all__ = ["REPLY_TO", "A2AConfig", "AgentConfig", "topic_session"]

# What a topic's message must be for the agent to answer it (see `topic.py`).
REPLY_TO = ("mentions", "users", "none")
# The URL schemes of a Redis state store (`AgentConfig.state`).
STATE_SCHEMES = ("redis://", "rediss://", "unix://")
# The prefix of a topic's session id: `topic:<topic>`.
_TOPIC_SESSION = "topic:"
# Session ids hold 128 characters; a topic's has the prefix besides.
MAX_TOPIC = 128 - len(_TOPIC_SESSION)


def topic_session(topic: str) -> str:
    """The id of the session a topic feeds: `topic:<topic>`. A caller who
    replies in it through the AgentService speaks in the topic (its replies
    are published there too)."""
    return _TOPIC_SESSION + topic


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
    # Messages one Reply or Observe may carry: each is converted for the agent
    # (in a worker thread) and formatted again on every model call.
    max_request_msgs: int = 10_000
    # Content blocks one request may carry, those of tool results and hints
    # included: counted as its media are screened, before any is converted.
    max_request_blocks: int = 100_000
    # What callers' media may make the server read and fetch for the agent
    # (`media.py`): by default no local file, and web media only from public
    # addresses, fetched by the server and handed to the agent as bytes.
    media: MediaPolicy = field(default_factory=MediaPolicy)
    # Where sessions live between calls: `memory` (this process: a restart
    # loses them) or a Redis URL (`redis://`, `rediss://`, `unix://`; the
    # `redis` extra), shared by every replica using it (`keeper.py`).
    state: str = "memory"
    # How long a reply's responses are kept for `Resume` after its last one
    # (in the state store: Redis, or this process's memory).
    reply_log_seconds: float = 600.0
    # With the `memory` store, the most the kept reply logs may hold (MiB):
    # past it, the logs appended to least recently are dropped first (Redis:
    # its own `maxmemory`).
    reply_log_mb: int = 256
    # How long a replica that stopped answering holds the sessions it was
    # running calls on: the lease it renews while a call runs (and, with a
    # topic, shared by replicas, the lead of the topic: `topic.py`).
    lease_seconds: float = 10.0
    # A hub topic the agent takes part in (the server's hub, `ServerConfig.hub`):
    # it observes every message published there, in the session
    # `topic_session(topic)`, and publishes its replies there.
    topic: str | None = None
    # Which of the topic's messages the agent answers on its own: `mentions`
    # (a message naming it as @Name), `users` (those and every user message)
    # or `none` (it only observes; a caller makes it speak by replying in
    # the topic's session).
    reply_to: Literal["mentions", "users", "none"] = "mentions"

    def __post_init__(self) -> None:
        for name in (
            "max_sessions",
            "max_replies",
            "max_request_msgs",
            "max_request_blocks",
            "reply_log_mb",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not self.session_idle_seconds > 0:
            raise ValueError("session_idle_seconds must be more than 0")
        if not self.reply_log_seconds > 0:
            raise ValueError("reply_log_seconds must be more than 0")
        if not self.lease_seconds >= 0.1:
            raise ValueError("lease_seconds must be at least 0.1")
        if self.state != "memory" and not self.state.startswith(STATE_SCHEMES):
            raise ValueError(
                f"state: expected memory or a redis://, rediss:// or unix:// URL, "
                f"got {self.state!r}"
            )
        if self.reply_to not in REPLY_TO:
            raise ValueError(f"reply_to: expected one of {', '.join(REPLY_TO)}")
        if self.topic is not None:
            from ..errors import HubError
            from ..hub.store import check_topic

            try:
                check_topic(self.topic)
            except HubError as exc:
                raise ValueError(f"topic: {exc.reason}") from None
            if len(self.topic) > MAX_TOPIC:
                raise ValueError(
                    f"topic: at most {MAX_TOPIC} characters (a session id's 128, less 'topic:')"
                )


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
    # How long a caller may keep the agent card without asking again (its
    # `Cache-Control: max-age`); it revalidates with its ETag after.
    card_max_age: int = 300

    def __post_init__(self) -> None:
        if self.max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        if self.card_max_age < 0:
            raise ValueError("card_max_age must not be negative")
