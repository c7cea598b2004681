"""Soak test: a FormatterService under sustained mixed load on loopback.

    python tests/soak/soak.py [--seconds 60] [--concurrency 64] [--target HOST:PORT]

Starts `agentscope-proto serve` on a free loopback port (unless --target names
a running server), then keeps `--concurrency` calls in flight for `--seconds`:
Format, Parse and ParseStream over golden requests, where a share of the
streams is cancelled after the first snapshot and another share drops its
connection mid-stream. It fails (exit 1) on any unexpected status, on a
server that stops answering health checks, or on server RSS growing by more
than `--max-rss-growth` (10 %) from the end of the warm-up to the end of the
run. It prints one summary line (calls, unexpected outcomes, RSS growth, the
worst p99); `--verbose` adds the full JSON report (calls, errors and p50/p99
latency per RPC), which `--json` also writes to a file. The server's own log
goes to `--server-log` when given.

Bounded: the load stops after `--seconds`, every call has a deadline, and the
server it started is stopped with SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.client import format_request

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from golden_data import formatter_cases, golden_providers

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
# Share of ParseStream calls cancelled after their first snapshot, and of
# those whose connection is dropped mid-stream.
CANCEL_SHARE = 0.10
DROP_SHARE = 0.05
DEADLINE = 30.0


def _provider(name: str) -> Any:
    return pb.Provider.Value(f"PROVIDER_{name.upper()}")


def load_requests() -> dict[str, list[Any]]:
    """Format, Parse and ParseStream requests built from the golden data."""
    formats, parses, streams = [], [], []
    for provider in golden_providers("formatters"):
        for case in formatter_cases(provider):
            if "error" in case or "media/" in json.dumps(case["msgs"]):
                continue
            try:
                request = format_request(
                    provider,
                    case["msgs"],
                    multi_agent=case["multi_agent"],
                    tools=case["tools"],
                    tool_choice=case["tool_choice"],
                    **case["options"],
                )
            except Exception:  # options the wire form cannot carry
                continue
            formats.append(request)
    for path in sorted((GOLDEN / "parsers").glob("*.json")):
        provider = path.stem
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            if case["options"] or "error" in case["expected"]:
                continue
            if case["stream"]:
                chunks = [json.dumps(c) for c in case["chunks"]]
                streams.append((_provider(provider), chunks))
            else:
                response = json.dumps(case["response"])
                parses.append(pb.ParseRequest(provider=_provider(provider), response_json=response))
    return {"Format": formats, "Parse": parses, "ParseStream": streams}


def _stream_requests(provider: Any, chunks: list[str]) -> list[pb.ParseStreamRequest]:
    requests = [pb.ParseStreamRequest(chunk_json=chunk) for chunk in chunks]
    requests[0].provider = provider
    return requests


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.unexpected: list[str] = []

    def record(self, kind: str, outcome: str, expected: set[str], seconds: float) -> None:
        self.outcomes[(kind, outcome)] += 1
        if outcome not in expected:
            if len(self.unexpected) < 20:
                self.unexpected.append(f"{kind}: {outcome}")
            else:
                self.unexpected.append("")
        elif outcome == "OK":
            self.latency[kind].append(seconds)


async def _one_call(
    stub: Any, target: str, requests: dict[str, list[Any]], rng: random.Random, stats: Stats
) -> None:
    kind = rng.choice(["Format", "Parse", "ParseStream"])
    started = time.perf_counter()
    expected = {"OK"}
    try:
        if kind == "Format":
            await stub.Format(rng.choice(requests["Format"]), timeout=DEADLINE)
        elif kind == "Parse":
            await stub.Parse(rng.choice(requests["Parse"]), timeout=DEADLINE)
        else:
            provider, chunks = rng.choice(requests["ParseStream"])
            messages = _stream_requests(provider, chunks)
            roll = rng.random()
            if roll < CANCEL_SHARE:
                kind, expected = "ParseStream/cancel", {"CANCELLED"}
                call = stub.ParseStream(iter(messages), timeout=DEADLINE)
                async for _ in call:
                    call.cancel()
                    break
                await call.code()
                raise _Done("CANCELLED")
            if roll < CANCEL_SHARE + DROP_SHARE:
                kind, expected = "ParseStream/drop", {"CANCELLED", "OK"}
                await _drop_mid_stream(target, messages)
                raise _Done("CANCELLED")
            replies = [reply async for reply in stub.ParseStream(iter(messages), timeout=DEADLINE)]
            if not replies or not replies[-1].done:
                raise _Done("NO_FINAL")
        outcome = "OK"
    except _Done as done:
        outcome = done.outcome
    except grpc.aio.AioRpcError as error:
        outcome = error.code().name
    except asyncio.CancelledError:
        outcome = "CANCELLED" if "cancel" in kind else "CLIENT_CANCELLED"
    stats.record(kind, outcome, expected, time.perf_counter() - started)


class _Done(Exception):
    def __init__(self, outcome: str) -> None:
        self.outcome = outcome


async def _drop_mid_stream(target: str, messages: list[pb.ParseStreamRequest]) -> None:
    """Open a connection of its own, start a stream, and close the connection under it."""
    channel = grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    try:
        stub = pb_grpc.FormatterServiceStub(channel)

        async def slow() -> Any:
            for message in messages:
                yield message
                await asyncio.sleep(0.01)

        call = stub.ParseStream(slow(), timeout=DEADLINE)
        async for _ in call:
            break
    finally:
        await channel.close(grace=None)


async def _worker(
    target: str, requests: dict[str, list[Any]], seed: int, until: float, stats: Stats
) -> None:
    rng = random.Random(seed)
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.FormatterServiceStub(channel)
        while time.monotonic() < until:
            await _one_call(stub, target, requests, rng, stats)


async def _load(
    target: str, requests: dict[str, list[Any]], seconds: float, concurrency: int, seed: int
) -> Stats:
    stats = Stats()
    until = time.monotonic() + seconds
    await asyncio.gather(
        *(_worker(target, requests, seed * 1000 + i, until, stats) for i in range(concurrency))
    )
    return stats


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _healthy(target: str) -> bool:
    with grpc.insecure_channel(target) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _start_server(log: Any, cache_mb: int) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "agentscope_proto", "serve", "--port", str(port)]
    command += ["--format-cache-mb", str(cache_mb)]
    process = subprocess.Popen([*command, "--log-level", "error", "--grace", "5"], stderr=log)
    target = f"127.0.0.1:{port}"
    grpc.channel_ready_future(grpc.insecure_channel(target)).result(timeout=30)
    return process, target


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the RSS baseline")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-rss-growth", type=float, default=0.10)
    parser.add_argument(
        "--format-cache-mb",
        type=int,
        default=4,
        help="the started server's format cache (its bound is part of the RSS check)",
    )
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--target", help="an already running server (RSS is then not checked)")
    parser.add_argument("--pid", type=int, help="the --target server's pid, to check its RSS")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    parser.add_argument("--server-log", type=Path, help="the started server's stderr (appended)")
    parser.add_argument("--verbose", action="store_true", help="print the full JSON report")
    args = parser.parse_args()

    requests = load_requests()
    process = None
    server_log = None
    if args.target:
        target, pid = args.target, args.pid
    else:
        if args.server_log:
            args.server_log.parent.mkdir(parents=True, exist_ok=True)
            server_log = args.server_log.open("ab")
        process, target = _start_server(server_log, args.format_cache_mb)
        pid = process.pid
    try:
        asyncio.run(_load(target, requests, args.warmup, args.concurrency, args.seed))
        baseline = _rss_kb(pid) if pid else 0
        started = time.monotonic()
        stats = asyncio.run(_load(target, requests, args.seconds, args.concurrency, args.seed + 1))
        elapsed = time.monotonic() - started
        time.sleep(1.0)  # let cancelled calls finish on the server
        final = _rss_kb(pid) if pid else 0
        healthy = _healthy(target)
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
        if server_log is not None:
            server_log.close()

    calls = sum(stats.outcomes.values())
    growth = (final - baseline) / baseline if baseline else 0.0
    summary: dict[str, Any] = {
        "seconds": round(elapsed, 1),
        "concurrency": args.concurrency,
        "calls": calls,
        "calls_per_second": round(calls / elapsed, 1),
        "outcomes": {f"{k} {o}": n for (k, o), n in sorted(stats.outcomes.items())},
        "unexpected": len(stats.unexpected),
        "latency_ms": {
            kind: {
                "p50": round(statistics.median(values) * 1e3, 2),
                "p99": round(_percentile(values, 0.99) * 1e3, 2),
            }
            for kind, values in sorted(stats.latency.items())
        },
        "rss_mb": {"baseline": round(baseline / 1024, 1), "final": round(final / 1024, 1)},
        "rss_growth": round(growth, 4),
        "healthy": healthy,
    }
    if args.verbose:
        print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    failures = []
    if stats.unexpected:
        failures.append(f"unexpected outcomes: {[u for u in stats.unexpected if u][:20]}")
    if pid and growth > args.max_rss_growth:
        failures.append(f"server RSS grew {growth:.1%} (limit {args.max_rss_growth:.0%})")
    if not healthy:
        failures.append("the server stopped answering health checks")
    if not calls:
        failures.append("no calls were made")
    worst = max(
        ((kind, times["p99"]) for kind, times in summary["latency_ms"].items()),
        key=lambda item: item[1],
        default=("-", 0.0),
    )
    line = (
        f"{summary['seconds']:.0f} s at {args.concurrency} concurrent: {calls:,} calls "
        f"({summary['calls_per_second']:,.0f}/s), {len(stats.unexpected)} unexpected, "
        f"RSS growth {growth:.1%}, worst p99 {worst[1]:.0f} ms ({worst[0]})"
    )
    if args.json:
        line += f" (report: {args.json})"
    for failure in failures:
        print(f"soak: FAIL: {failure}", file=sys.stderr)
    print(
        f"soak: {'FAIL' if failures else 'OK'}: {line}", file=sys.stderr if failures else sys.stdout
    )
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    sys.exit(main())
