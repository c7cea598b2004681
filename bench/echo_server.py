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
from pathlib import Path
from typing import Any

import grpc

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.service import FormatterServicer, ServerConfig, serve
from agentscope_proto.service.workers import run_workers


class EchoServicer(FormatterServicer):
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
    config = ServerConfig(port=port, reuse_port=reuse_port)
    asyncio.run(serve(config, servicer=EchoServicer(config)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--response", type=Path, required=True, help="a FormatResponse, binary")
    args = parser.parse_args()
    if args.workers == 1:
        _worker(args.port, False, args.response)
    else:
        # The same supervisor as `agentscope-proto serve --workers N`.
        run_workers(args.workers, _worker, (args.port, True, args.response))


if __name__ == "__main__":
    main()
