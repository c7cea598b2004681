"""How the FormatterService runs, and what one request may make it do."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .._fetch import MediaLimits

if TYPE_CHECKING:
    from ..hub.store import HubConfig

__all__ = ["MB", "ServerConfig", "host_port"]

MB = 1024 * 1024


def host_port(host: str, port: int) -> str:
    """`host:port` as gRPC and URLs take it: an IPv6 address in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def _default_hub() -> HubConfig:
    # Imported here: the hub builds on the server's parts (hub -> service),
    # so the server's config names the hub's only when it makes one.
    from ..hub.store import HubConfig

    return HubConfig()


@dataclass(frozen=True)
class ServerConfig:
    """How the server runs. Defaults are safe: loopback, no file or network access."""

    host: str = "127.0.0.1"
    port: int = 50051
    # Also serve the Connect protocol (plain HTTP + JSON) on this port; needs
    # the `http` extra (service/connect.py). None: gRPC only.
    http_port: int | None = None
    max_message_mb: int = 64
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
    # The HubService's store and limits (hub/store.py); None: not served.
    hub: HubConfig | None = field(default_factory=_default_hub)
