"""Service: Format RPC throughput and latency over loopback, against an Echo ceiling.

Servers, each started fresh as its own process tree:

- Format: `python -m agentscope_proto serve --workers N` (the real service);
- Echo: `bench/echo_server.py --workers N`, the same server stack whose Format
  handler returns a precomputed response of the same size (the Format server's
  real response to the same request).

Load generator: this process, grpc.aio, a closed loop of `concurrency`
coroutines each sending the next request as soon as its previous one returns,
spread over up to 8 channels (one TCP connection each, so that SO_REUSEPORT can
spread them over the workers; with several workers, channels are reopened until
every worker holds at least one connection). Requests are serialized once
beforehand and responses are not deserialized, so the client spends as little
CPU as it can. The request: the `tools_20` conversation formatted for OpenAI.

Latency is measured per call from send to response; throughput counts the
calls started in the measuring window. Client and servers share the machine's
cores: the client's CPU per call is reported beside the servers'.

Cold requests: the same request over and over. If the server has a format
cache (a `serve` option naming a cache, found in `serve --help`), these
servers run with it off, so that "cold" means cold.

Agent loop (one worker, concurrency 16): 16 simulated agents, each with its
own ReAct conversation of 200 messages (the `tools` corpus generator with
another seed per agent), each sending its whole history after every turn:
prefixes 1..200, in order. The measured work is fixed: every agent walks its
whole conversation once, and throughput is calls / wall time. The Format
server runs with its format cache off and, if it has one, on (below); the Echo
server answers a request of k messages with the real response to turn k of
the first conversation. A warm-up conversation of its own seed goes first.
With a server cache, the loop runs twice: cache off, and cache on
(`LOOP_CACHE_MB`); its responses to agent 0 are compared with the uncached ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from _common import (
    BENCH_DIR,
    closed_loop,
    cpu_seconds,
    free_port,
    latency_ms,
    load_corpus,
    parse_args,
    write_json,
)
from echo_server import write_responses
from make_corpus import tools as tools_conversation

from agentscope_proto import from_dict
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb

METHOD = "/agentscope.formatter.v1.FormatterService/Format"
CONCURRENCY = (1, 16, 64)
WORKERS = (1, 2)
MAX_CHANNELS = 8
CORPUS = "tools_20"
PROVIDER = pb.PROVIDER_OPENAI
LOOP_AGENTS = 16
LOOP_SEED = 7000  # agent i's conversation: seed LOOP_SEED + i; the warm-up's: LOOP_SEED - 1


LOOP_CACHE_MB = "64"


def _cache_flags() -> tuple[list[str], list[str], str]:
    """`serve` options that turn its format cache off and on (on: `LOOP_CACHE_MB`),
    if it has one, and what was found."""
    text = subprocess.run(
        [sys.executable, "-m", "agentscope_proto", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    options = sorted({w.strip(",[]") for w in text.split() if w.startswith("--") and "cache" in w})
    for option in options:
        if option.endswith(("-mb", "-bytes", "-size")):
            size = LOOP_CACHE_MB if option.endswith("-mb") else str(int(LOOP_CACHE_MB) << 20)
            return (
                [option, "0"],
                [option, size],
                f"cold requests with the server's format cache off ({option} 0)",
            )
    if options:
        return [], [], f"serve has {options}, not understood; servers run with their defaults"
    return [], [], "serve has no format cache option"


@contextlib.contextmanager
def _server(
    kind: str, workers: int, response: Path | None, extra: tuple[str, ...] = ()
) -> Iterator[tuple[int, int]]:
    """A running server; yields (port, pid). `extra`: more command-line options
    (Format: cache options; Echo: `--responses` instead of `--response`)."""
    port = free_port()
    if kind == "format":
        # At the default level the server logs every block a formatter drops, on
        # every request; the benchmark measures the formatting, not the logging.
        command = [sys.executable, "-m", "agentscope_proto", "serve", "--log-level", "error"]
        command += extra
    else:
        assert response is not None
        flag = extra[0] if extra else "--response"
        command = [sys.executable, str(BENCH_DIR / "echo_server.py"), flag, str(response)]
    command += ["--port", str(port), "--workers", str(workers)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    try:
        yield port, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _channel(port: int) -> grpc.aio.Channel:
    # A local subchannel pool gives every channel its own connection.
    return grpc.aio.insecure_channel(
        f"127.0.0.1:{port}",
        options=[("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", -1)],
    )


async def _worker_of(channel: grpc.aio.Channel, request: bytes) -> str:
    call = channel.unary_unary(METHOD)(request)
    metadata = await call.initial_metadata()
    await call
    return str(dict(metadata or ()).get("x-worker-pid", "single"))


async def _open_channels(
    port: int, count: int, workers: int, request: bytes
) -> tuple[list[grpc.aio.Channel], dict[str, int]]:
    """`count` ready channels; with several workers, every worker gets at least one."""
    deadline = time.monotonic() + 60
    while True:
        channels = [_channel(port) for _ in range(count)]
        try:
            pids = [await _worker_of(c, request) for c in channels]
        except grpc.aio.AioRpcError:
            # The server is still starting.
            for c in channels:
                await c.close()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
            continue
        spread = {pid: pids.count(pid) for pid in sorted(set(pids))}
        if len(spread) >= min(workers, count) or time.monotonic() > deadline:
            return channels, spread
        for c in channels:
            await c.close()


async def _run_load(
    port: int, workers: int, request: bytes, concurrency: int, warmup: float, seconds: float
) -> dict[str, Any]:
    channels, spread = await _open_channels(port, min(concurrency, MAX_CHANNELS), workers, request)
    calls = [c.unary_unary(METHOD) for c in channels]
    cpu_before = time.process_time()
    latencies = await closed_loop(
        lambda i: calls[i % len(calls)](request), concurrency, warmup, seconds
    )
    client_cpu = time.process_time() - cpu_before
    for c in channels:
        await c.close()
    count = len(latencies)
    return {
        "concurrency": concurrency,
        "channels": len(channels),
        "connections_per_worker": spread,
        "calls": count,
        "rps": count / seconds,
        **latency_ms(latencies),
        "client_cpu_total_s": client_cpu,
    }


async def _first_response(port: int, request: bytes) -> bytes:
    channel = _channel(port)
    deadline = time.monotonic() + 60
    while True:
        try:
            response: bytes = await channel.unary_unary(METHOD)(request)
            await channel.close()
            return response
        except grpc.aio.AioRpcError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def _measure(
    kind: str,
    workers: int,
    request: bytes,
    response: Path | None,
    warmup: float,
    seconds: float,
    extra: tuple[str, ...] = (),
) -> tuple[list[dict[str, Any]], bytes]:
    rows = []
    with _server(kind, workers, response, extra) as (port, pid):
        body = asyncio.run(_first_response(port, request))
        for concurrency in CONCURRENCY:
            cpu_before = cpu_seconds(pid)
            row = asyncio.run(_run_load(port, workers, request, concurrency, warmup, seconds))
            server_cpu = cpu_seconds(pid) - cpu_before
            # CPU per call over warm-up and measurement together (calls in the
            # warm-up are counted at the measured rate).
            total_calls = row["rps"] * (warmup + seconds)
            row["server_cpu_us_per_call"] = server_cpu / total_calls * 1e6
            row["client_cpu_us_per_call"] = row.pop("client_cpu_total_s") / total_calls * 1e6
            rows.append({"server": kind, "workers": workers, **row})
    return rows, body


class _Conversation:
    """One agent's turns as serialized `FormatRequest`s: turn k sends the
    first k messages. Built by slicing one byte string (a repeated field is
    the concatenation of its entries), so 200 turns do not hold 200 copies."""

    def __init__(self, seed: int, size: int) -> None:
        messages = [from_dict(d) for d in tools_conversation(size, seed)]
        self.header = pb.FormatRequest(provider=PROVIDER).SerializeToString()
        encoded = [pb.FormatRequest(messages=[m]).SerializeToString() for m in messages]
        self.blob = b"".join(encoded)
        self.ends = [sum(len(e) for e in encoded[: k + 1]) for k in range(len(encoded))]

    def __len__(self) -> int:
        return len(self.ends)

    def request(self, turn: int) -> bytes:
        """The request after `turn` turns (1-based)."""
        return self.header + self.blob[: self.ends[turn - 1]]


async def _walk(port: int, conversations: list[_Conversation]) -> dict[str, Any]:
    """Every conversation walked once, turn by turn, all at the same time."""
    channels = [_channel(port) for _ in range(min(len(conversations), MAX_CHANNELS))]
    calls = [c.unary_unary(METHOD) for c in channels]
    latencies: list[float] = []
    clock = time.perf_counter

    async def agent(call: Any, conversation: _Conversation) -> None:
        for turn in range(1, len(conversation) + 1):
            request = conversation.request(turn)
            sent = clock()
            await call(request)
            latencies.append(clock() - sent)

    cpu_before = time.process_time()
    started = clock()
    await asyncio.gather(*(agent(calls[i % len(calls)], c) for i, c in enumerate(conversations)))
    wall = clock() - started
    client_cpu = time.process_time() - cpu_before
    for c in channels:
        await c.close()
    latencies.sort()
    count = len(latencies)
    return {
        "agents": len(conversations),
        "calls": count,
        "seconds": wall,
        "rps": count / wall,
        **latency_ms(latencies),
        "client_cpu_us_per_call": client_cpu / count * 1e6,
    }


async def _responses(port: int, conversation: _Conversation) -> list[bytes]:
    """The server's response to every turn of `conversation`."""
    channel = _channel(port)
    call = channel.unary_unary(METHOD)
    out = [await call(conversation.request(turn)) for turn in range(1, len(conversation) + 1)]
    await channel.close()
    return out


def _measure_loop(
    kind: str,
    response: Path | None,
    warmup: _Conversation,
    agents: list[_Conversation],
    flags: tuple[str, ...] = (),
) -> tuple[dict[str, Any], list[bytes]]:
    """One walk of `agents` against a fresh server; also the server's responses
    to agent 0's turns, asked for after the measurement (so that a server cache
    is not filled with them beforehand)."""
    extra = ("--responses",) if kind == "echo" else flags
    with _server(kind, 1, response, extra) as (port, pid):
        # Warm-up on a conversation of its own: the server's code paths, not
        # the measured agents' cache entries.
        asyncio.run(_first_response(port, warmup.request(1)))
        asyncio.run(_walk(port, [warmup]))
        cpu_before = cpu_seconds(pid)
        row = asyncio.run(_walk(port, agents))
        row["server_cpu_us_per_call"] = (cpu_seconds(pid) - cpu_before) / row["calls"] * 1e6
        replies = asyncio.run(_responses(port, agents[0])) if kind == "format" else []
    return {"server": kind, "workers": 1, "flags": list(flags), **row}, replies


def _loop(size: int, off: list[str], on: list[str]) -> dict[str, Any]:
    warmup = _Conversation(LOOP_SEED - 1, size)
    agents = [_Conversation(LOOP_SEED + i, size) for i in range(LOOP_AGENTS)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        responses = Path(tmp) / "responses.bin"
        format_row, replies = _measure_loop("format", None, warmup, agents, tuple(off))
        rows.append(format_row)
        if on:
            cached_row, cached_replies = _measure_loop("format", None, warmup, agents, tuple(on))
            same = cached_replies == replies
            rows.append({**cached_row, "server": "format_cached", "same_as_uncached": same})
        # Echo answers turn k with the Format server's response to agent 0's turn k.
        write_responses(responses, replies)
        echo_row, _ = _measure_loop("echo", responses, warmup, agents)
        rows.append(echo_row)
    sizes = [len(agents[0].request(turn)) for turn in range(1, size + 1)]
    return {
        "turns": size,
        "agents": LOOP_AGENTS,
        "request_bytes_mean": sum(sizes) / len(sizes),
        "response_bytes_mean": sum(len(r) for r in replies) / len(replies),
        "rows": rows,
    }


def main() -> None:
    args = parse_args(__doc__ or "")
    warmup, seconds = (0.2, 0.6) if args.quick else (1.0, 5.0)
    request = pb.FormatRequest(provider=PROVIDER)
    request.messages.extend(from_dict(d) for d in load_corpus(CORPUS))
    request_bytes = request.SerializeToString()
    cache_off, cache_on, cache_what = _cache_flags()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        response_path = Path(tmp) / "response.binpb"
        response_bytes = b""
        for workers in WORKERS:
            format_rows, response_bytes = _measure(
                "format", workers, request_bytes, None, warmup, seconds, tuple(cache_off)
            )
            response_path.write_bytes(response_bytes)
            echo_rows, echo_bytes = _measure(
                "echo", workers, request_bytes, response_path, warmup, seconds
            )
            assert echo_bytes == response_bytes
            rows += format_rows + echo_rows
    write_json(
        args.json,
        {
            "corpus": CORPUS,
            "provider": "openai",
            "request_bytes": len(request_bytes),
            "response_bytes": len(response_bytes),
            "warmup_s": warmup,
            "seconds": seconds,
            "server_cache": cache_what,
            "rows": rows,
            "loop": _loop(20 if args.quick else 200, cache_off, cache_on),
        },
    )


if __name__ == "__main__":
    main()
