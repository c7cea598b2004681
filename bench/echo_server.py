"""The Echo ceiling of the service benchmark: the FormatterService's own server
stack with a Format handler that does no work.

It runs `agentscope_proto.service.serve` unchanged (grpc.aio, the same channel
options, health, reflection, SO_REUSEPORT worker processes like
`agentscope-proto serve --workers N`) with one difference: `Format` returns a
precomputed `FormatResponse` read from a file (the real response to the
benchmark's request, so the same size) instead of formatting. Requests are
still deserialized by gRPC as `FormatRequest`s.

For the agent-loop benchmark, `--responses` holds one response per turn
(length-delimited, see `write_responses`): a request of `k` messages gets the
`k`-th, the real response to the same turn of the benchmark's first
conversation.

    python bench/echo_server.py --port 50100 --workers 2 --response response.binpb
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import Any, ClassVar

import grpc

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.service import FormatterServicer, ServerConfig, serve
from agentscope_proto.service._rpc import Wired
from agentscope_proto.service.workers import run_workers


def write_responses(path: Path, responses: list[bytes]) -> None:
    """Store serialized `FormatResponse`s, each behind its 4-byte length."""
    path.write_bytes(b"".join(len(r).to_bytes(4, "big") + r for r in responses))


def _read_responses(path: Path) -> list[pb.FormatResponse]:
    data, pos, out = path.read_bytes(), 0, []
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        out.append(pb.FormatResponse.FromString(data[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    return out


class EchoServicer(FormatterServicer):
    """`FormatterServicer` whose Format returns a fixed response."""

    response = pb.FormatResponse()
    # Per turn (agent loop): the response to a request of k messages is [k - 1].
    by_turn: ClassVar[list[pb.FormatResponse]] = []

    async def Format(
        self, request: pb.FormatRequest | Wired, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.FormatResponse:
        # The same stack as the real handler: it gets the request with its bytes.
        if isinstance(request, Wired):
            request = request.message
        # Like the real handler, name the worker when several share the port.
        if self._worker:
            await context.send_initial_metadata(self._worker)
        if self.by_turn:
            return self.by_turn[min(len(request.messages), len(self.by_turn)) - 1]
        return self.response


def _worker(port: int, reuse_port: bool, response_path: Path, per_turn: bool) -> None:
    logging.basicConfig(level=logging.WARNING)
    if per_turn:
        EchoServicer.by_turn = _read_responses(response_path)
    else:
        EchoServicer.response = pb.FormatResponse.FromString(response_path.read_bytes())
    config = ServerConfig(port=port, reuse_port=reuse_port)
    asyncio.run(serve(config, servicer=EchoServicer(config)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--response", type=Path, help="a FormatResponse, binary")
    given.add_argument("--responses", type=Path, help="one FormatResponse per turn")
    args = parser.parse_args()
    path, per_turn = (args.responses, True) if args.responses else (args.response, False)
    if args.workers == 1:
        _worker(args.port, False, path, per_turn)
    else:
        # The same supervisor as `agentscope-proto serve --workers N`.
        run_workers(args.workers, _worker, (args.port, True, path, per_turn))


if __name__ == "__main__":
    main()
