"""Hub: publish→deliver on Redis, the hub (served, direct) vs AgentScope 2.x's replay log.

All sides run on one fresh redis-server (Debian's), side by side in
alternating rounds, each round on a topic of its own, with the same
message, the same numbers of publishers and subscribers, on the same
machine:

- ours: `agentscope-proto serve --hub redis://...` (its own process) and, in
  this process, one `AsyncHubClient`: the publishers, coroutines each awaiting
  `publish()` for one message after another (the client sends them over its
  PublishStream; those that wait together go in one request), the
  subscribers, subscriptions receiving them (SubscribeBatches; typed messages,
  decoded);
- ours, direct: `DirectHub` in this process, for Python code with the hub's
  Redis credentials: the publishers await `DirectHub.publish()` (the
  publishes that wait together go in one script call), the subscribers
  read the topic's stream straight from Redis (one blocked `XREAD` for both),
  no hub server in the way;
- ours, direct to served: `DirectHub` publishers, and subscribers on the hub
  server through `AsyncHubClient` (they receive the same stream);
- ours, unary: the same server and message, through the first release's
  calls, one unary `Publish` per message and one `Subscribe` stream message
  per event (raw grpc.aio stubs): the before of this comparison;
- AgentScope: `agentscope.app.message_bus.RedisMessageBus` (2.0.11) in this
  process, the publishers calling `log_append(key, msg.model_dump(mode="json"))`
  one after another and the subscribers reading with `log_read(key,
  since=cursor)`, as its replay log is read: its API has no blocking read,
  so a reader polls, at once again after a read that returned entries and
  after 1 ms after an empty one (JSON dicts, decoded).

Every publisher waits for each message's answer (its offset, or the entry
id) before it publishes the next, on every side. A round publishes 6,000
messages (300 in a quick run), the same AgentScope 2.x message (a text and
a tool call), and ends when every subscriber has them all. Throughput is
messages / (last delivery - first publish); the latency of a message is its
delivery time minus the time its publish call started, over every message
at every subscriber (wall clock: the server, Redis and this process share
the machine's cores). CPU time is taken per process for every round (this
process, the hub server, redis-server): CPU per message depends less than
the wall clock on what else the machine runs. Each configuration runs its
own rounds; the report gives medians and the range over the rounds. Runs under
the venv that has AgentScope 2.x (.venv-as2).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import latency_ms, parse_args, write_json

# (publishers, subscribers) of each configuration: the first release's
# 4 and 2, and more publishers at once (a busier hub).
CONFIGS = ((4, 2), (16, 2), (64, 2))
POLL_IDLE_S = 0.001


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def _redis(workdir: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("bench hub: redis-server is not installed (apt-get install redis-server)")
    for _ in range(20):
        port = _free_port()
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir]
        command = [binary, "--port", str(port), *options]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while process.poll() is None and not _answers(port) and time.monotonic() < deadline:
            time.sleep(0.02)
        if process.poll() is None and _answers(port):
            try:
                yield f"redis://127.0.0.1:{port}/0", process
            finally:
                process.terminate()
                process.wait(10)
            return
        process.kill()
        process.wait()
    raise SystemExit("bench hub: redis-server did not start")


@contextmanager
def _hub_server(url: str) -> Iterator[tuple[str, int]]:
    port = _free_port()
    command = [sys.executable, "-m", "agentscope_proto", "serve", "--port", str(port)]
    process = subprocess.Popen([*command, "--hub", url, "--log-level", "error"])
    try:
        yield f"127.0.0.1:{port}", process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _message() -> tuple[Any, Any]:
    """The message both sides carry: AgentScope 2.x's, and ours read from its JSON."""
    from agentscope.message import Msg, TextBlock, ToolCallBlock

    from agentscope_proto import from_dict

    theirs = Msg(
        name="planner",
        role="assistant",
        content=[
            TextBlock(text="Let me look that up for you: the weather in Paris tomorrow."),
            ToolCallBlock(id="call_1", name="get_weather", input='{"city": "Paris"}'),
        ],
    )
    return theirs, from_dict(theirs.model_dump(mode="json"))


Round = Callable[[int], Awaitable[dict[str, Any]]]


def _result(
    started: float,
    sent: list[float],
    acked: list[float],
    delivered: list[list[tuple[int, float]]],
    cpu: float,
) -> dict[str, Any]:
    """The round's figures; `acked`: each publish call's duration (until its
    answer); `delivered`: (message index, time) per subscriber."""
    last = max(times[-1][1] for times in delivered)
    latencies = sorted(t - sent[i] for times in delivered for i, t in times)
    return {
        "messages": len(sent),
        "msgs_per_s": len(sent) / (last - started),
        **latency_ms(latencies),
        "ack_p50_ms": statistics.median(acked) * 1e3,
        "client_cpu_s": cpu,
    }


async def _timed(
    ours: Any,
    messages: int,
    publishers: int,
    publish: Callable[[Any], Awaitable[Any]],
    subscriptions: list[Any],
) -> dict[str, Any]:
    """One round: `publishers` coroutines publish `messages` copies of `ours`
    (each its id) through `publish`, every subscription reads them all."""
    sent = [0.0] * messages
    acked = [0.0] * messages
    delivered: list[list[tuple[int, float]]] = []
    clock = time.perf_counter
    cpu = time.process_time()
    started = clock()

    async def publish_from(first: int) -> None:
        msg = type(ours)()
        for i in range(first, messages, publishers):
            sent[i] = clock()
            msg.CopyFrom(ours)
            msg.id = str(i)
            await publish(msg)
            acked[i] = clock() - sent[i]

    async def receive(subscription: Any) -> None:
        times = []
        async for event in subscription:
            times.append((int(event.msg.id), clock()))
            if len(times) == messages:
                break
        delivered.append(times)

    await asyncio.gather(
        *(publish_from(p) for p in range(publishers)), *(receive(s) for s in subscriptions)
    )
    return _result(started, sent, acked, delivered, time.process_time() - cpu)


def _ours(target: str, ours: Any, publishers: int, subscribers: int) -> Round:
    from agentscope_proto.hub import AsyncHubClient

    async def run(messages: int) -> dict[str, Any]:
        topic = f"bench/{uuid.uuid4().hex}"
        client = AsyncHubClient(target)
        subscriptions = [await client.subscribe(topic) for _ in range(subscribers)]

        async def publish(msg: Any) -> None:
            await client.publish(topic, msg)

        result = await _timed(ours, messages, publishers, publish, subscriptions)
        for subscription in subscriptions:
            await subscription.close()
        await client.close()
        return result

    return run


def _ours_direct(
    url: str, target: str | None, ours: Any, publishers: int, subscribers: int
) -> Round:
    """Publishers on `DirectHub` (the hub's streams from this process, no
    server); subscribers on it too, or (`target`) on the hub server's
    SubscribeBatches through `AsyncHubClient`, which receive the same stream."""
    from agentscope_proto.hub import AsyncHubClient, DirectHub

    async def run(messages: int) -> dict[str, Any]:
        topic = f"bench/{uuid.uuid4().hex}"
        hub = await DirectHub.connect(url)
        client = AsyncHubClient(target) if target else None
        subscribe = client.subscribe if client else hub.subscribe
        subscriptions = [await subscribe(topic) for _ in range(subscribers)]

        async def publish(msg: Any) -> None:
            await hub.publish(topic, msg)

        result = await _timed(ours, messages, publishers, publish, subscriptions)
        for subscription in subscriptions:
            closed = subscription.close()
            if closed is not None:
                await closed
        if client:
            await client.close()
        await hub.close()
        return result

    return run


def _ours_unary(target: str, ours: Any, publishers: int, subscribers: int) -> Round:
    """The first release's calls: a unary Publish per message, a Subscribe
    stream message per event (the stubs, as its clients used them)."""
    import grpc

    from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as pb
    from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2_grpc as pb_grpc

    async def run(messages: int) -> dict[str, Any]:
        topic = f"bench/{uuid.uuid4().hex}"
        channel = grpc.aio.insecure_channel(target)
        stub = pb_grpc.HubServiceStub(channel)
        calls = [stub.Subscribe(pb.SubscribeRequest(topic=topic)) for _ in range(subscribers)]
        for call in calls:
            await call.initial_metadata()  # live

        async def publish(msg: Any) -> None:
            await stub.Publish(pb.PublishRequest(topic=topic, msg=msg))

        async def events(call: Any) -> AsyncIterator[Any]:
            while True:
                yield await call.read()

        result = await _timed(ours, messages, publishers, publish, [events(c) for c in calls])
        for call in calls:
            call.cancel()
        await channel.close()
        return result

    return run


def _redis_message_bus() -> Any:
    """AgentScope's `RedisMessageBus`, its own code. `agentscope.app`'s
    `__init__` imports the whole app server (FastAPI, APScheduler: an extra
    the pinned 2.0.11 environment does not have); the message bus needs only
    redis, so its package is imported without running that `__init__`."""
    import importlib
    import types

    import agentscope

    if "agentscope.app" not in sys.modules:
        app = types.ModuleType("agentscope.app")
        app.__path__ = [str(Path(agentscope.__file__).parent / "app")]
        sys.modules["agentscope.app"] = app
    return importlib.import_module("agentscope.app.message_bus").RedisMessageBus


def _agentscope(url: str, theirs: Any, publishers: int, subscribers: int) -> Round:
    bus_class = _redis_message_bus()
    payload = theirs.model_dump(mode="json")
    port = int(url.rsplit(":", 1)[1].split("/")[0])

    async def run(messages: int) -> dict[str, Any]:
        key = f"bench:{uuid.uuid4().hex}"
        async with bus_class(host="127.0.0.1", port=port) as bus:
            sent = [0.0] * messages
            acked = [0.0] * messages
            delivered: list[list[tuple[int, float]]] = []
            clock = time.perf_counter
            cpu = time.process_time()
            started = clock()

            async def publish(first: int) -> None:
                for i in range(first, messages, publishers):
                    sent[i] = clock()
                    await bus.log_append(key, {**payload, "id": str(i)})
                    acked[i] = clock() - sent[i]

            async def receive() -> None:
                times: list[tuple[int, float]] = []
                cursor = None
                while len(times) < messages:
                    entries = await bus.log_read(key, since=cursor, max_count=100)
                    if not entries:
                        await asyncio.sleep(POLL_IDLE_S)
                        continue
                    now = clock()
                    for entry_id, event in entries:
                        times.append((int(event["id"]), now))
                        cursor = entry_id
                delivered.append(times)

            await asyncio.gather(
                *(publish(p) for p in range(publishers)), *(receive() for _ in range(subscribers))
            )
            cpu = time.process_time() - cpu
        return _result(started, sent, acked, delivered, cpu)

    return run


def main() -> None:
    args = parse_args(__doc__ or "")
    messages, rounds = (300, 2) if args.quick else (6000, 5)
    theirs, ours = _message()
    started = time.strftime("%Y-%m-%d %H:%M %Z")
    load_before = os.getloadavg()
    results = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        _redis(tmp) as (url, redis_process),
        _hub_server(url) as (target, server_pid),
    ):
        loop = asyncio.new_event_loop()
        for publishers, subscribers in CONFIGS[:2] if args.quick else CONFIGS:
            sides: dict[str, Round] = {
                "ours": _ours(target, ours, publishers, subscribers),
                "ours_direct": _ours_direct(url, None, ours, publishers, subscribers),
                "ours_direct_served": _ours_direct(url, target, ours, publishers, subscribers),
                "ours_unary": _ours_unary(target, ours, publishers, subscribers),
                "agentscope": _agentscope(url, theirs, publishers, subscribers),
            }
            for side in sides.values():  # warm-up, and the server has started
                loop.run_until_complete(_retrying(side, 50))
            samples: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
            for _ in range(rounds):
                for name, side in sides.items():
                    server_cpu = _cpu_seconds(server_pid)
                    redis_cpu = _cpu_seconds(redis_process.pid)
                    row = loop.run_until_complete(side(messages))
                    row["server_cpu_s"] = _cpu_seconds(server_pid) - server_cpu
                    row["redis_cpu_s"] = _cpu_seconds(redis_process.pid) - redis_cpu
                    samples[name].append(row)
            results.append(
                {
                    "publishers": publishers,
                    "subscribers": subscribers,
                    "sides": {name: _summary(rows) for name, rows in samples.items()},
                    "rounds": samples,
                }
            )
        loop.close()
    write_json(
        args.json,
        {
            "started": started,
            "load": [round(x, 2) for x in (*load_before, *os.getloadavg())],
            "messages": messages,
            "rounds": rounds,
            "poll_idle_ms": POLL_IDLE_S * 1e3,
            "msg_bytes": {"ours": ours.ByteSize(), "agentscope": len(theirs.model_dump_json())},
            "redis_parser": _redis_parser(),
            "configs": results,
        },
    )


def _redis_parser() -> str:
    """Which reply parser redis-py uses here (both sides share it)."""
    from redis.utils import HIREDIS_AVAILABLE

    return "hiredis" if HIREDIS_AVAILABLE else "redis-py's own (pure Python)"


async def _retrying(side: Round, messages: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            await side(messages)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the rounds (throughput and latency rounds
    apart), and the range of the throughput and p99 over them."""
    summary = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
    for key in ("msgs_per_s", "p99_ms"):
        summary[f"{key}_min"] = min(row[key] for row in rows)
        summary[f"{key}_max"] = max(row[key] for row in rows)
    return summary


if __name__ == "__main__":
    main()
