"""The Echo ceiling of the service benchmark: the FormatterService's own server
stack with a Format handler that does no work.

It runs `agentscope_proto.service.serve` unchanged (grpc.aio, the same channel
options, health, reflection, SO_REUSEPORT worker processes like
`agentscope-proto serve --workers N`) with one difference: `Format` returns a
precomputed `FormatResponse` read from a file (the real response to the
benchmark's request, so the same size) instead of formatting. Requests are
still deserialized by gRPC as `FormatRequest`s.

    python bench/echo_server.py --port 50100 --workers 2 --response response.binpb
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

import grpc

from agentscope_proto import service as server_module
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb


class EchoServicer(server_module.FormatterServicer):
    """`FormatterServicer` whose Format returns a fixed response."""

    response = pb.FormatResponse()

    async def Format(
        self, request: pb.FormatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.FormatResponse:
        # Like the real handler, name the worker when several share the port.
        if self._worker:
            await context.send_initial_metadata(self._worker)
        return self.response


def _worker(port: int, reuse_port: bool, response_path: Path) -> None:
    logging.basicConfig(level=logging.WARNING)
    EchoServicer.response = pb.FormatResponse.FromString(response_path.read_bytes())
    config = server_module.ServerConfig(port=port, reuse_port=reuse_port)
    asyncio.run(server_module.serve(config, servicer=EchoServicer(config)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--response", type=Path, required=True, help="a FormatResponse, binary")
    args = parser.parse_args()
    if args.workers == 1:
        _worker(args.port, False, args.response)
        return
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_worker, args=(args.port, True, args.response))
        for _ in range(args.workers)
    ]
    for worker in workers:
        worker.start()

    def forward(signum: int, frame: object) -> None:
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    main()
