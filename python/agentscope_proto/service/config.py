"""How the server runs, and what one request may make it do.

`HubConfig` is here too, beside `ServerConfig.hub`: the hub builds on the
server's parts (hub -> service), so the server's configuration names the
hub's settings without importing the hub.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .._fetch import MediaLimits

__all__ = ["MB", "HubConfig", "ServerConfig", "host_port", "redacted_url"]

MB = 1024 * 1024


def host_port(host: str, port: int) -> str:
    """`host:port` as gRPC and URLs take it: an IPv6 address in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


@dataclass(frozen=True)
class HubConfig:
    """The hub a server runs, and what one client may make it hold.

    SECURITY.md lists each limit; beyond one, RESOURCE_EXHAUSTED.
    """

    # `memory` (one process) or a Redis URL: redis://, rediss:// or unix://.
    url: str = "memory"
    # Messages each topic keeps for subscribers that resume (Redis trims
    # approximately, never below it). Servers sharing a Redis use the same.
    retention: int = 10_000
    # Seconds each topic keeps a message at most (0: no limit): older ones
    # are trimmed when the topic is next published to (Redis: `MINID ~`,
    # approximately, never more). Servers sharing a Redis use the same.
    retention_seconds: int = 0
    # The largest message one Publish may store, in KiB (its protobuf bytes).
    max_msg_kb: int = 1024
    # Subscribe streams open at once on this server (SubscribeBatches too).
    max_subscribers: int = 1000
    # PublishStream streams open at once on this server.
    max_publishers: int = 1000
    # Bytes of messages the memory store keeps over all topics, in MiB; past
    # it the oldest messages of the store go first. (Redis: its maxmemory.)
    memory_mb: int = 256
    # Bytes of messages a Redis hub server holds for one subscriber that
    # reads slower than its topic is published, in MiB; past it the
    # subscription ends RESOURCE_EXHAUSTED and the client resumes from its
    # last offset (the memory store holds none: subscribers read its topics).
    subscriber_buffer_mb: int = 16

    def __post_init__(self) -> None:
        for name in (
            "retention",
            "max_msg_kb",
            "max_subscribers",
            "max_publishers",
            "memory_mb",
            "subscriber_buffer_mb",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.retention_seconds < 0:
            raise ValueError("retention_seconds must be at least 0")


def redacted_url(url: str) -> str:
    """`url` without its password, for logs and errors."""
    return re.sub(r"(://[^:@/]*:)[^@/]*@", r"\1***@", url)


@dataclass(frozen=True)
class ServerConfig:
    """How the server runs. Defaults are safe: loopback, no file or network access."""

    host: str = "127.0.0.1"
    port: int = 50051
    # Also serve the Connect protocol (plain HTTP + JSON) on this port; needs
    # the `http` extra (service/connect.py). None: gRPC only.
    http_port: int | None = None
    max_message_mb: int = 64
    # The web pages (origins, e.g. `https://app.example.com`) whose browsers
    # may call the HTTP surfaces (A2A, AG-UI): none by default
    # (service/http_guard.py).
    cors_origins: tuple[str, ...] = ()
    media_root: Path | None = None
    allow_download: bool = False
    auth_token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    grace_seconds: float = 10.0
    reuse_port: bool = False
    # What one request may make the server do; beyond it, RESOURCE_EXHAUSTED
    # (SECURITY.md lists each limit and why).
    # Content blocks in one Format request, tool result blocks included.
    max_blocks: int = 100_000
    # Bytes (in MiB) of the format cache each worker keeps: messages seen in
    # earlier requests (an agent re-sending its history) are not converted
    # again. 0: no cache. Outputs are the same either way.
    format_cache_mb: int = 0
    # Messages one ParseStream may send.
    max_stream_messages: int = 100_000
    # Bytes of responses one ParseStream may receive: in the cumulative mode
    # each response repeats the message so far, so the output of a stream
    # grows with its square.
    max_stream_output_mb: int = 1024
    # A ParseStream that sends nothing for this long is ended (DEADLINE_EXCEEDED).
    stream_idle_seconds: float = 300.0
    # Size and time caps of media reads and downloads, and the private networks
    # downloads may reach (none by default: the SSRF guard refuses them).
    media_limits: MediaLimits = field(default_factory=MediaLimits)
    # The HubService's store and limits; None: not served. The servers the
    # package runs (`agentscope-proto serve`, `serve_agent`) host it.
    hub: HubConfig | None = field(default_factory=HubConfig)

    def __post_init__(self) -> None:
        for origin in self.cors_origins:
            if not _ORIGIN.fullmatch(origin):
                raise ValueError(
                    f"cors_origins: {origin!r} is not an origin (scheme://host[:port], "
                    "no path; each page's origin is named: there is no wildcard)"
                )


_ORIGIN = re.compile(r"https?://[^/\s*?#@]+")
