"""A real server (the FormatterService, or the services given, and the
HubService as `config.hub` says) on a free loopback port, run in a background
thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentscope_proto.hub import HubServicer, hub_service, open_hub_store
from agentscope_proto.service import ServerConfig, build_server, set_serving
from agentscope_proto.service.app import HostedService, formatter_service

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
        self.hub: HubServicer | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            run = self._loop.run_until_complete
            hosted = (
                list(run(self._services()))
                if self._services is not None
                else [formatter_service(self.config)]
            )
            if self.config.hub is not None:
                self.hub = HubServicer(run(open_hub_store(self.config.hub)), self.config.hub)
                hosted.append(hub_service(self.hub))
            self._server, self.health, self.port = build_server(self.config, services=hosted)
            run(self._server.start())
            run(set_serving(self.health, True, [service.name for service in hosted]))
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

    def stop(self, grace: float = 0) -> None:
        """Stop as `serve` drains: hub streams end UNAVAILABLE, then the server
        stops (in-flight calls get `grace` seconds), then the hub's store closes.
        Once stopped, a no-op."""
        if not self._thread.is_alive():
            return
        if self.hub is not None:
            self.call(self.hub.close())
        if self._server is not None:
            self.call(self._server.stop(grace))
        if self.hub is not None:
            self.call(self.hub.store.close())
        self.call(cancel_the_rest())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


async def cancel_the_rest() -> None:
    """Cancel what still runs on the loop (as `asyncio.run` does when it
    ends), so that no task is destroyed pending when the loop stops."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=5)
