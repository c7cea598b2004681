"""Where a Format RPC's handler time goes, in-process: a repeatable `timeit` breakdown.

    .venv/bin/python bench/time_handler.py            # the whole handler and its parts

For each request (the service benchmark's cold request, `tools_20` for
OpenAI, and the agent loop's last turn, 200 messages), the median µs per call
(CPU time, not wall time) of the real `FormatterServicer.Format` on a freshly decoded request (gRPC
left out, the context a stand-in), and of the steps it takes one by one:
decoding, the request checks, `format()` itself, the body's JSON and the
response. "handler - (decode + format())" is what the RPC path adds to
decoding and formatting a fresh request.
Not part of `make bench`; its numbers go into reports of changes to the path.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

from _common import load_corpus, quiet_logging

from agentscope_proto import from_dict
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.formatting import body_to_json
from agentscope_proto.formatting import format as proto_format
from agentscope_proto.service import FormatterServicer, ServerConfig
from agentscope_proto.service import servicer as servicer_module


class _Context:
    """Just enough of `grpc.aio.ServicerContext` for a successful Format."""

    def time_remaining(self) -> float | None:
        return None

    async def send_initial_metadata(self, metadata: Any) -> None:
        return None


def _median_us(fn: Callable[[], Any], repeat: int) -> float:
    # CPU time of this process, not wall time: on a shared, loaded machine the
    # wall clock counts other processes' turns too.
    timer = timeit.Timer(fn, timer=time.process_time)
    number, _ = timer.autorange()
    number = max(1, number // 4)
    return statistics.median(t / number for t in timer.repeat(repeat, number)) * 1e6


def _request(corpus: str) -> bytes:
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI)
    request.messages.extend(from_dict(d) for d in load_corpus(corpus))
    return request.SerializeToString()


def measure(raw: bytes, repeat: int) -> dict[str, float]:
    servicer = FormatterServicer(ServerConfig())
    loop = asyncio.new_event_loop()
    request = pb.FormatRequest.FromString(raw)
    body = proto_format("openai", request.messages)
    text = body_to_json(body)
    config = ServerConfig()

    def handler() -> None:
        fresh = pb.FormatRequest.FromString(raw)
        loop.run_until_complete(servicer.Format(fresh, _Context()))  # type: ignore[arg-type]

    def response() -> None:
        out = pb.FormatResponse(body_json=text.decode())
        out.warnings.extend(body.warnings)

    parts = {
        "handler (decode + Format)": handler,
        "decode (FromString)": lambda: pb.FormatRequest.FromString(raw),
        "ByteSize()": request.ByteSize,
        "_count_blocks": lambda: servicer_module._count_blocks(request.messages, config.max_blocks),
        "format()": lambda: proto_format("openai", request.messages),
        # upb makes a message's Python objects on first access: a fresh
        # request's first walk pays for them, whichever step walks it.
        "decode + format()": lambda: proto_format(
            "openai", pb.FormatRequest.FromString(raw).messages
        ),
        "body_to_json": lambda: body_to_json(body),
        "response": response,
    }
    result = {name: _median_us(fn, repeat) for name, fn in parts.items()}
    result["handler - (decode + format())"] = (
        result["handler (decode + Format)"] - result["decode + format()"]
    )
    loop.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    quiet_logging()
    for corpus in ("tools_20", "tools_200"):
        raw = _request(corpus)
        print(f"{corpus} (openai, {len(raw):,} request bytes): median µs per call")
        for name, us in measure(raw, args.repeat).items():
            print(f"  {name:30} {us:9.1f}")


if __name__ == "__main__":
    main()
