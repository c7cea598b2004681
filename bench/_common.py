"""What the benchmark scripts share: the corpus, the timer and the result file.

Timing: every contender of one comparison is timed in the same process, in
alternating rounds (A B C, A B C, ...), so that they see the same machine
state; each round runs a contender enough times to last `min_seconds`, and the
result is the median over rounds of the time per call. Time is this
process's CPU time (`time.process_time`), not the wall clock: the machine is
shared, and on a loaded one the wall clock also counts other processes'
turns, by chance more on one side than the other. The garbage collector
stays on (both sides make garbage; that cost is real) but is emptied before
every round, and the objects that exist before timing starts (the imported
libraries) are frozen out of its reach.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
CORPUS_DIR = BENCH_DIR / "corpus"
KINDS = ("chat", "tools", "media", "debate")
SIZES = (20, 200)
# The corpora without inline media, together: the "mixed" corpus of the targets.
MIXED = ("chat", "tools", "debate")


# How AgentScope 1.0.21 names each registry provider's formatters (class-name
# prefix of `<prefix>ChatFormatter` / `<prefix>MultiAgentFormatter`) and the
# body key of our output that holds the message list. The providers
# themselves come from the registry (`registry_providers`), never from here.
AGENTSCOPE_FORMATTERS: dict[str, tuple[str, str]] = {
    "openai": ("OpenAI", "messages"),
    "anthropic": ("Anthropic", "messages"),
    "gemini": ("Gemini", "contents"),
    "dashscope": ("DashScope", "messages"),
    "ollama": ("Ollama", "messages"),
    "deepseek": ("DeepSeek", "messages"),
    "openai_responses": ("OpenAIResponse", "input"),
}


def registry_providers() -> list[str]:
    """The names of the providers of `agentscope_proto.providers.PROVIDERS`
    that AgentScope 1.0.21 has (an "agentscope" variant: the side the
    benchmarks compare with), in the registry's order.

    Such a provider without an `AGENTSCOPE_FORMATTERS` entry stops the
    benchmark: it would otherwise be left out of every comparison silently.
    """
    from agentscope_proto.providers import PROVIDERS

    names = [name for name, provider in PROVIDERS.items() if "agentscope" in provider.variants]
    missing = [name for name in names if name not in AGENTSCOPE_FORMATTERS]
    if missing:
        raise SystemExit(
            f"bench: registry providers without an AGENTSCOPE_FORMATTERS entry: {missing}"
        )
    return names


def format_cache() -> tuple[Callable[[], Any] | None, str]:
    """How to make an empty format cache for `format(..., cache=...)`, if the
    package has one, and what was found (for the report).

    Detected, never assumed: `format()` must take a `cache` argument and the
    package (or `formatting`) must export a class whose name ends in `Cache`
    that builds with no arguments. None otherwise: the cached column then
    says "not available".
    """
    import inspect

    import agentscope_proto
    from agentscope_proto import formatting

    if "cache" not in inspect.signature(formatting.format).parameters:
        return None, "format() takes no cache argument"
    for module in (agentscope_proto, formatting):
        for name in sorted(dir(module)):
            value = getattr(module, name)
            if name.endswith("Cache") and inspect.isclass(value):
                try:
                    value()
                except TypeError:
                    continue
                return value, f"{module.__name__}.{name}() (default size)"
    return None, "format() takes cache= but no cache class was found"


def corpus_names(sizes: tuple[int, ...] = SIZES) -> list[str]:
    return [f"{kind}_{size}" for size in sizes for kind in KINDS]


def load_corpus(name: str) -> list[dict[str, Any]]:
    """The message dicts of one corpus file (`chat_20`, `media_200`, ...)."""
    doc = json.loads((CORPUS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    messages: list[dict[str, Any]] = doc["messages"]
    return messages


@dataclass(frozen=True)
class Budget:
    """How long to measure: rounds per comparison, the least time per round, and
    the conversation sizes to run (a quick run skips the 200-message ones)."""

    rounds: int
    min_seconds: float
    sizes: tuple[int, ...]

    @classmethod
    def of(cls, quick: bool) -> Budget:
        if quick:
            return cls(rounds=3, min_seconds=0.005, sizes=(20,))
        return cls(rounds=5, min_seconds=0.04, sizes=SIZES)


# The clock of every in-process comparison: CPU seconds of this process.
CLOCK = time.process_time

# A timer runs its contender `n` times and returns the seconds that took.
Timer = Callable[[int], float]


def sync_timer(fn: Callable[[], Any]) -> Timer:
    """A timer of a plain function."""

    def run(n: int) -> float:
        started = CLOCK()
        for _ in range(n):
            fn()
        return CLOCK() - started

    return run


def async_timer(loop: asyncio.AbstractEventLoop, fn: Callable[[], Awaitable[Any]]) -> Timer:
    """A timer of a coroutine function: the clock runs inside one coroutine that
    awaits `fn()` `n` times, so the event loop's own cost is not counted."""

    async def timed(n: int) -> float:
        started = CLOCK()
        for _ in range(n):
            await fn()
        return CLOCK() - started

    def run(n: int) -> float:
        return loop.run_until_complete(timed(n))

    return run


def _loops_for(timer: Timer, min_seconds: float) -> int:
    """How many calls last at least `min_seconds` (after one warm-up call)."""
    timer(1)
    loops = 1
    while True:
        elapsed = timer(loops)
        if elapsed >= min_seconds or loops >= 1 << 24:
            return loops
        # Aim a little past the target so the next try usually suffices.
        loops = max(loops * 2, int(loops * min_seconds * 1.2 / max(elapsed, 1e-9)))


def compare(timers: dict[str, Timer], budget: Budget) -> dict[str, float]:
    """Median seconds per call of each contender, timed in alternating rounds."""
    # Everything alive now (imported modules: AgentScope's import alone makes
    # millions of objects) moves out of the collector's reach, so that neither
    # side pays for traversing the other's heap.
    gc.collect()
    gc.freeze()
    loops = {name: _loops_for(timer, budget.min_seconds) for name, timer in timers.items()}
    samples: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(budget.rounds):
        for name, timer in timers.items():
            gc.collect()
            samples[name].append(timer(loops[name]) / loops[name])
    return {name: statistics.median(values) for name, values in samples.items()}


def geomean(values: list[float]) -> float:
    return statistics.geometric_mean(values) if values else float("nan")


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="smoke run: small budget")
    parser.add_argument("--json", type=Path, required=True, help="where to write the results")
    return parser.parse_args()


@contextmanager
def scratch_tempdir(prefix: str) -> Iterator[None]:
    """AgentScope writes a temp file for each tool-result medium it formats:
    into a directory of the run's own, removed after."""
    with tempfile.TemporaryDirectory(prefix=prefix) as path:
        tempfile.tempdir = path
        try:
            yield
        finally:
            tempfile.tempdir = None


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def quiet_logging() -> None:
    """Both sides log the blocks they drop; the benchmark measures the work, not the logging."""
    import logging
    import warnings

    logging.disable(logging.CRITICAL)
    warnings.filterwarnings("ignore")


def machine_info() -> dict[str, Any]:
    """The machine and the versions the numbers were taken with."""
    from importlib.metadata import version

    from google.protobuf.internal import api_implementation

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        memory = "?"
    packages = ["agentscope", "protobuf", "grpcio", "orjson", "agentscope-proto"]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "python"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        commit, changed = "", ""
    if commit and changed:
        commit += " (with uncommitted changes under python/)"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "protobuf_backend": api_implementation.Type(),
        "versions": {name: version(name) for name in packages},
        "commit": commit or "?",
    }


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children, from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command: state, ppid, ...; utime and stime are fields 14, 15.
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def closed_loop(
    send: Callable[[int], Awaitable[Any]], concurrency: int, warmup: float, seconds: float
) -> list[float]:
    """`concurrency` senders, each awaiting `send(its index)` again as soon as
    it returns, for `warmup` then `seconds`; the latencies of the calls sent
    in the window, sorted."""
    latencies: list[float] = []
    clock = time.perf_counter
    start = clock() + warmup
    stop = start + seconds

    async def loop(index: int) -> None:
        while True:
            sent = clock()
            if sent >= stop:
                return
            await send(index)
            if sent >= start:
                latencies.append(clock() - sent)

    await asyncio.gather(*(loop(i) for i in range(concurrency)))
    latencies.sort()
    return latencies


def latency_ms(latencies: list[float]) -> dict[str, float]:
    """The median and 99th percentile of latencies, in milliseconds."""
    latencies = sorted(latencies)
    return {
        "p50_ms": statistics.median(latencies) * 1e3,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3,
    }
