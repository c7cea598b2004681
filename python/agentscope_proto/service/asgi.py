"""An ASGI application served by hypercorn in the running event loop, on a
socket of its own, with the server's TLS settings: what `serve --http-port`
(Connect) and `serve-agent --a2a-port` (A2A over HTTP) listen with.

Needs hypercorn (the `http` and `a2a` extras).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from dataclasses import dataclass
from typing import Any

from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config as HypercornConfig

from .config import ServerConfig

__all__ = ["HttpServer", "listen", "start_asgi"]


@dataclass
class HttpServer:
    """A running HTTP server; `stop()` drains it."""

    port: int
    _shutdown: asyncio.Event
    _task: asyncio.Task[None]

    async def stop(self, grace_seconds: float) -> None:
        self._shutdown.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), grace_seconds + 1)
        except asyncio.TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def listen(config: ServerConfig, port: int) -> socket.socket:
    """A socket listening on `config.host:port` (0: any free port)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        config.host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if config.reuse_port:  # worker processes share the port, as they share gRPC's
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def start_asgi(app: Any, config: ServerConfig, sock: socket.socket) -> HttpServer:
    """Serve `app` on the listening `sock` in this event loop, with
    `config`'s TLS certificates and drain time."""
    bound = int(sock.getsockname()[1])
    settings = HypercornConfig()
    # Hypercorn adopts the listening socket, so that the port is known (and
    # already accepting) before it starts.
    settings.bind = [f"fd://{sock.detach()}"]
    settings.graceful_timeout = config.grace_seconds
    settings.accesslog = None
    # Through the logging setup of the process, not a handler of its own.
    settings.errorlog = logging.getLogger("hypercorn.error")
    if config.tls_cert is not None:
        if config.tls_key is None:
            raise ValueError("--tls-cert needs --tls-key")
        settings.certfile = str(config.tls_cert)
        settings.keyfile = str(config.tls_key)
        if config.tls_client_ca is not None:
            settings.ca_certs = str(config.tls_client_ca)
            settings.verify_mode = ssl.CERT_REQUIRED
    shutdown = asyncio.Event()
    task = asyncio.create_task(hypercorn_serve(app, settings, shutdown_trigger=shutdown.wait))
    return HttpServer(bound, shutdown, task)
