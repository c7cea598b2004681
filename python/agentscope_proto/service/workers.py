"""Several server processes sharing one port: gRPC's multi-core pattern for Python.

Each worker is a fresh (spawned) process that binds the same port with
SO_REUSEPORT, and the kernel balances connections among them. The parent only
starts the workers, forwards SIGTERM/SIGINT to them (each drains on its own)
and waits. `agentscope-proto serve --workers N` and the benchmark's Echo
server (bench/echo_server.py) both run through `run_workers`.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["WorkersFailedError", "run_workers"]


class WorkersFailedError(RuntimeError):
    """A worker exited other than cleanly (code 0) or by the forwarded SIGTERM."""

    def __init__(self, codes: Sequence[int | None]) -> None:
        super().__init__(f"workers exited with {list(codes)}")
        self.codes = list(codes)


def run_workers(count: int, target: Callable[..., object], args: Sequence[Any] = ()) -> None:
    """Run `target(*args)` in `count` spawned processes until they all exit.

    `target` and `args` must be picklable (a module-level function and plain
    data): spawned workers import the package afresh rather than inherit a
    forked copy of the parent's gRPC state, which gRPC does not support.
    Raises `WorkersFailedError` when a worker fails.
    """
    if count < 1:
        raise ValueError("count must be at least 1")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=target, args=tuple(args)) for _ in range(count)]
    for worker in workers:
        worker.start()

    def forward(signum: int, frame: object) -> None:
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for worker in workers:
            worker.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    codes = [worker.exitcode for worker in workers]
    if any(code not in (0, -signal.SIGTERM) for code in codes):
        raise WorkersFailedError(codes)
