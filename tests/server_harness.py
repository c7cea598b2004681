"""A real server (the FormatterService, or the services given) on a free loopback
port, run in a background thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentscope_proto.service import ServerConfig, build_server, set_serving
from agentscope_proto.service.app import HostedService

ServicesFactory = Callable[[], Awaitable[Sequence[HostedService]]]


class RunningServer:
    """Starts `build_server(config)` on its own event loop; `stop()` shuts it down.

    `services` (a coroutine function, run on the server's loop) gives the
    services to host instead of the FormatterService.
    """

    def __init__(self, config: ServerConfig, services: ServicesFactory | None = None) -> None:
        self.config = config
        self._services = services
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: Any = None
        self.health: Any = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            hosted = None
            if self._services is not None:
                hosted = list(self._loop.run_until_complete(self._services()))
            self._server, self.health, self.port = build_server(self.config, services=hosted)
            self._loop.run_until_complete(self._server.start())
            names = [service.name for service in hosted] if hosted is not None else None
            serving = (
                set_serving(self.health, True, names) if names else set_serving(self.health, True)
            )
            self._loop.run_until_complete(serving)
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> RunningServer:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    @property
    def target(self) -> str:
        return f"{self.config.host}:{self.port}"

    def call(self, coro: Any) -> Any:
        """Run a coroutine on the server's loop (e.g. to flip health)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def tasks(self) -> int:
        """How many tasks the server's loop has now."""

        async def count() -> int:
            return len(asyncio.all_tasks()) - 1  # not this one

        result: int = self.call(count())
        return result

    def stop(self) -> None:
        if self._server is not None:
            self.call(self._server.stop(0))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
