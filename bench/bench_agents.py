"""Agents: `Reply` of an echo agent over our gRPC AgentService, over A2A through
this package (JSON-RPC and gRPC), and behind a bare a2a-sdk server.

The agent (`bench/echo_agent.py`) replies as an AgentScope 2.x agent does,
with 2.x's own event objects, and echoes the user's text with no model, so
that what is measured is the transport of a reply. Servers, each a process of
its own, one event loop each:

- `grpc`: `agentscope-proto serve-agent echo_agent:make_agent` (the real
  command); a reply is 5 events (reply start, text block start, delta and
  end, reply end) and the reply's message, converted to `AgentEvent`s.
- `a2a_jsonrpc`, `a2a_grpc`: the same command with `--a2a-port` and
  `--a2a-grpc-port`: the agent served over A2A by this package (a2a-sdk's
  request handler over the sessions; hypercorn for JSON-RPC); a reply is a
  streamed `SendStreamingMessage`: the task, working, completed with the
  reply as its status message.
- `bare_jsonrpc`, `bare_grpc`: the same agent behind a2a-sdk alone
  (`echo_agent.py --asgi hypercorn --grpc-port`, the ASGI server ours runs):
  the task, working, the text as an artifact, completed. What our A2A path
  adds is measured against these.
- `a2a`: the bare JSON-RPC server on uvicorn, as a2a-sdk's examples run it
  (the AgentService's comparison since the benchmark began).
- `agui_json`: the same command with `--agui-port`: the agent served over
  AG-UI, a run POSTed as a `RunAgentInput` and its events read as
  server-sent events (text, thinking none: RUN_STARTED, the text message's
  start, content and end, RUN_FINISHED); the bytes of each run's answer are
  counted (`wire_bytes_per_reply`); `agui_proto` the same runs in AG-UI's
  protobuf encoding (length-prefixed events).
- `grpc_redis`: `serve-agent ... --state redis://` on a redis-server of its
  own (Debian's; skipped without one): each reply takes the session's
  lease, loads nothing (one replica), logs its responses and saves the
  agent's state; against `grpc` (sessions in memory). Then the resume
  latency on both: a `Resume` from a finished reply's first cursor to its
  first response, p50 and p99. And the two side by side again in 5
  alternating rounds of 5 s, each on a fresh redis-server (`state_rounds`):
  the target's ratio is their median, each the ratio of neighbouring points.
  Each round also counts every process's CPU a reply (client, server,
  redis-server): the three share two cores, so replies per second follow
  it, and its ratio moves less with the machine's other work.

Conversations go 20 turns (the agent's memory grows with them), then start
again in a new session, as the issue's load test runs them.

Load generator: this process, each side with its own official client
(`AsyncAgentClient`; a2a-sdk's `ClientFactory` client, streaming, over the
binding measured; no AgentScope extension asked for, as any A2A client), a
closed loop of `CONCURRENCY` coroutines, each with its own conversation (a
gRPC session, an A2A context) sending the next message as soon as its reply
ended. Throughput counts the replies finished in the measuring window;
latency is a reply's first request byte to its last event. Client and
servers share the machine's cores: each side's client CPU per reply is
reported beside the server's.

Runs in the AgentScope 2.x venv (`.venv-as2`, with a2a-sdk, uvicorn and hypercorn).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from _common import (
    BENCH_DIR,
    closed_loop,
    cpu_seconds,
    free_port,
    latency_ms,
    parse_args,
    write_json,
)

# (side, concurrency levels): the AgentService and the uvicorn baseline alone
# too; every side side by side at 16.
SIDES = (
    ("grpc", (1, 16)),
    ("grpc_redis", (16,)),
    ("a2a", (1, 16)),
    ("a2a_jsonrpc", (16,)),
    ("bare_jsonrpc", (16,)),
    ("a2a_grpc", (16,)),
    ("bare_grpc", (16,)),
    ("agui_json", (16,)),
    ("agui_proto", (16,)),
)
# The user's words: one paragraph, echoed back.
TEXT = (
    "Please summarise the attached quarterly report in three bullet points, keep the "
    "numbers exact, and say which region grew fastest. 数字は正確に。 ✓"
)


# Turns of a conversation before it starts again in a new session.
TURNS = 20


@contextlib.contextmanager
def _redis() -> Iterator[tuple[str | None, int]]:
    """A redis-server of the benchmark's own on a free port: its URL and
    pid, or (None, 0) when Debian's is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None, 0
        return
    port = free_port()
    options = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen([binary, *options], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            break
        time.sleep(0.05)
    try:
        yield f"redis://127.0.0.1:{port}/0", process.pid
    finally:
        process.terminate()
        process.wait(20)


@contextlib.contextmanager
def _server(side: str, state: str | None = None) -> Iterator[tuple[dict[str, int], int]]:
    """A running server for `side` (sessions in `state`, if given): its
    ports by binding, and its pid."""
    ports = {"grpc": free_port(), "http": free_port(), "a2a_grpc": free_port()}
    if side.startswith(("grpc", "a2a_", "agui_")):
        command = [
            sys.executable,
            "-m",
            "agentscope_proto",
            "serve-agent",
            "echo_agent:make_agent",
            "--port",
            str(ports["grpc"]),
            "--log-level",
            "error",
            "--max-sessions",
            "100000",
        ]
        if state is not None:
            command += ["--state", state]
        elif side.startswith("agui_"):
            command += ["--agui-port", str(ports["http"])]
        elif side != "grpc":
            command += ["--a2a-port", str(ports["http"]), "--a2a-grpc-port", str(ports["a2a_grpc"])]
    else:
        command = [sys.executable, str(BENCH_DIR / "echo_agent.py"), "--port", str(ports["http"])]
        if side != "a2a":
            command += ["--asgi", "hypercorn", "--grpc-port", str(ports["a2a_grpc"])]
    process = subprocess.Popen(command, cwd=BENCH_DIR, stdin=subprocess.DEVNULL)
    try:
        yield ports, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# A side: (open its client, one reply of conversation `i` -> the echoed text, close).
Side = tuple[Callable[[int], Awaitable[str]], Callable[[], Awaitable[None]]]


async def _grpc(ports: dict[str, int]) -> Side:
    from agentscope_proto import Msg, get_text_content
    from agentscope_proto.agents import AsyncAgentClient

    client = AsyncAgentClient(f"127.0.0.1:{ports['grpc']}")
    message = {"name": "user", "role": "user", "content": TEXT}
    turns: dict[int, int] = {}

    async def reply(conversation: int) -> str:
        turn = turns[conversation] = turns.get(conversation, -1) + 1
        session = f"c{conversation}-{turn // TURNS}"
        text = ""
        async for item in client.reply_stream(message, session_id=session):
            if isinstance(item, Msg):
                text = get_text_content(item) or ""
        return text

    return reply, client.close


def _a2a_side(binding: str) -> Callable[[dict[str, int]], Awaitable[Side]]:
    """A side of a2a-sdk's own client over `binding`, against any of the A2A servers."""

    async def open_side(ports: dict[str, int]) -> Side:
        import grpc
        from a2a.client import ClientConfig
        from a2a.types import Message, Part, Role, SendMessageRequest

        config = ClientConfig(
            streaming=True,
            supported_protocol_bindings=[binding],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        client = await _connect(config, ports["http"])
        contexts: dict[int, str] = {}
        count = 0

        async def reply(conversation: int) -> str:
            nonlocal count
            count += 1
            message = Message(
                role=Role.ROLE_USER,
                message_id=f"m{count}",
                parts=[Part(text=TEXT)],
                context_id=contexts.get(conversation, ""),
            )
            text = ""
            async for response in client.send_message(SendMessageRequest(message=message)):
                kind = response.WhichOneof("payload")
                if kind == "task":
                    contexts[conversation] = response.task.context_id
                elif kind == "artifact_update":  # a2a-sdk's echo: the text as an artifact
                    text = response.artifact_update.artifact.parts[0].text
                elif kind == "status_update" and response.status_update.status.message.parts:
                    text = response.status_update.status.message.parts[0].text  # ours
            return text

        return reply, client.close

    return open_side


def _agui_side(accept: str) -> Callable[[dict[str, int]], Awaitable[Side]]:
    """A side of plain HTTP runs against `serve-agent --agui-port`, reading
    the run in the encoding `accept` asks for; each run's answer bytes are
    added to `wire_bytes`."""

    async def open_side(ports: dict[str, int]) -> Side:
        import httpx

        client = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{ports['http']}",
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
            timeout=60,
        )
        turns: dict[int, int] = {}
        headers = {"accept": accept, "content-type": "application/json"}

        async def reply(conversation: int) -> str:
            turn = turns[conversation] = turns.get(conversation, -1) + 1
            run = {
                "threadId": f"c{conversation}-{turn // TURNS}",
                "runId": f"r{conversation}-{turn}-{time.monotonic_ns()}",
                "messages": [{"id": f"m{conversation}-{turn}", "role": "user", "content": TEXT}],
            }
            body = b""
            async with client.stream("POST", "/", json=run, headers=headers) as response:
                async for chunk in response.aiter_bytes():
                    body += chunk
            WIRE_BYTES.append(len(body))
            return _AGUI_TEXT[accept](body)

        return reply, client.aclose

    return open_side


def _sse_text(body: bytes) -> str:
    """The text of a run's server-sent events (its TEXT_MESSAGE_CONTENT deltas)."""
    import json

    events = (json.loads(line[5:]) for line in body.splitlines() if line.startswith(b"data:"))
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def _protobuf_text(body: bytes) -> str:
    """The text of a run's protobuf events (AG-UI's framing, read by our schema)."""
    from agentscope_proto.agui.proto import read_frames

    events = (message.text_message_content for message in read_frames(body))
    return "".join(event.delta for event in events if event.delta)


# How a run's answer is read, by the media type asked for.
_AGUI_TEXT: dict[str, Callable[[bytes], str]] = {
    "text/event-stream": _sse_text,
    "application/vnd.ag-ui.event+proto": _protobuf_text,
}
# The answer bytes of each AG-UI run of the side being measured.
WIRE_BYTES: list[int] = []


async def _connect(config: Any, port: int) -> Any:
    """a2a-sdk's client for the server's card, once the server answers."""
    from a2a.client import ClientFactory

    deadline = time.monotonic() + 60
    while True:
        try:
            return await ClientFactory(config).create_from_url(f"http://127.0.0.1:{port}")
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _ready(reply: Callable[[int], Awaitable[str]]) -> None:
    """Wait for the server to answer, and check that it echoes."""
    deadline = time.monotonic() + 60
    while True:
        try:
            text = await reply(0)
            if text != TEXT:
                raise AssertionError(f"the echo agent answered {text!r}")
            return
        except AssertionError:
            raise
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _load(
    open_side: Callable[[dict[str, int]], Awaitable[Side]],
    ports: dict[str, int],
    pid: int,
    concurrency: int,
    warmup: float,
    seconds: float,
    redis_pid: int = 0,
) -> dict[str, Any]:
    reply, close = await open_side(ports)
    await _ready(reply)
    WIRE_BYTES.clear()
    cpu_before, server_before = time.process_time(), cpu_seconds(pid)
    redis_before = cpu_seconds(redis_pid) if redis_pid else 0.0
    # Conversations are numbered from 1.
    latencies = await closed_loop(lambda i: reply(i + 1), concurrency, warmup, seconds)
    client_cpu, server_cpu = time.process_time() - cpu_before, cpu_seconds(pid) - server_before
    redis_cpu = cpu_seconds(redis_pid) - redis_before if redis_pid else 0.0
    await close()
    count = len(latencies)
    total = count / seconds * (warmup + seconds)  # replies over warm-up and window
    wire = {"wire_bytes_per_reply": sum(WIRE_BYTES) / len(WIRE_BYTES)} if WIRE_BYTES else {}
    return {
        **wire,
        "concurrency": concurrency,
        "replies": count,
        "rps": count / seconds,
        **latency_ms(latencies),
        "server_cpu_us_per_reply": server_cpu / total * 1e6,
        "client_cpu_us_per_reply": client_cpu / total * 1e6,
        **({"redis_cpu_us_per_reply": redis_cpu / total * 1e6} if redis_pid else {}),
    }


async def _resume_latency(ports: dict[str, int], samples: int) -> dict[str, Any]:
    """Reattach to finished replies: a `Resume` from each one's first cursor
    to its first response."""
    from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
    from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as grpc_pb
    from agentscope_proto.agents import AsyncAgentClient

    client = AsyncAgentClient(f"127.0.0.1:{ports['grpc']}")
    stub = grpc_pb.AgentServiceStub(client._channel)
    message = pb.ReplyRequest(session_id="resume")
    message.msgs.add(name="user", role="ROLE_USER", text=TEXT)
    latencies = []
    for _ in range(samples):
        responses = [response async for response in stub.Reply(message)]
        start = responses[0]
        request = pb.ResumeRequest(
            session_id="resume", reply_id=start.event.reply_start.reply_id, after=start.cursor
        )
        began = time.perf_counter()
        async for _ in stub.Resume(request):
            latencies.append(time.perf_counter() - began)
            break
    await client.close()
    return {"samples": samples, **latency_ms(latencies)}


CLIENTS: dict[str, Callable[[dict[str, int]], Awaitable[Side]]] = {
    "grpc_redis": _grpc,
    "grpc": _grpc,
    "a2a": _a2a_side("JSONRPC"),
    "a2a_jsonrpc": _a2a_side("JSONRPC"),
    "bare_jsonrpc": _a2a_side("JSONRPC"),
    "a2a_grpc": _a2a_side("GRPC"),
    "bare_grpc": _a2a_side("GRPC"),
    "agui_json": _agui_side("text/event-stream"),
    "agui_proto": _agui_side("application/vnd.ag-ui.event+proto"),
}


def main() -> None:
    args = parse_args(__doc__ or "")
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_before = [round(x, 2) for x in os.getloadavg()]
    warmup, seconds = (0.3, 1.0) if args.quick else (2.0, 10.0)
    sys.path.insert(0, str(BENCH_DIR))
    rows = []
    resume: dict[str, Any] = {}
    samples = 20 if args.quick else 300
    with _redis() as (redis_url, _):
        for concurrency in (1, 16):
            for side, levels in SIDES:
                if concurrency not in levels or (side == "grpc_redis" and redis_url is None):
                    continue
                state = redis_url if side == "grpc_redis" else None
                with _server(side, state) as (ports, pid):
                    row = asyncio.run(
                        _load(CLIENTS[side], ports, pid, concurrency, warmup, seconds)
                    )
                    if side.startswith("grpc") and concurrency == 16:
                        resume[side] = asyncio.run(_resume_latency(ports, samples))
                rows.append({"server": side, **row})
                print(f"[agents] {side} c{concurrency}: {row['rps']:,.0f} replies/s", flush=True)
    state_rounds = _state_rounds(*((1, 0.3, 1.0) if args.quick else (5, 1.0, 5.0)))
    write_json(
        args.json,
        {
            # When, and how busy the shared machine was: this section's
            # figures are wall-clock.
            "started": started,
            "load_before": load_before,
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "text_chars": len(TEXT),
            "warmup_s": warmup,
            "seconds": seconds,
            "a2a_sdk": _version("a2a-sdk"),
            "agentscope": _version("agentscope"),
            "turns_per_session": TURNS,
            "redis": redis_url is not None,
            "rows": rows,
            "resume": resume,
            "state_rounds": state_rounds,
        },
    )


def _state_rounds(rounds: int, warmup: float, seconds: float) -> list[dict[str, float]]:
    """Sessions in memory and in Redis at concurrency 16, in alternating
    rounds, each on fresh servers and a fresh redis-server (as the memory
    side starts with no session; conversations are numbered from 1 in each
    round): the ratio is taken round by round, so that the shared machine's
    drift between the two sides' points cancels."""
    measured: list[dict[str, float]] = []
    for number in range(rounds):
        round_rps = {}
        with _redis() as (redis_url, redis_pid):
            if redis_url is None:
                return measured
            for side, state in (("grpc", None), ("grpc_redis", redis_url)):
                # Every process's CPU a reply (client, server, redis-server):
                # the two sides share the machine's two cores.
                with _server(side, state) as (ports, pid):
                    row = asyncio.run(
                        _load(CLIENTS[side], ports, pid, 16, warmup, seconds, redis_pid)
                    )
                name = "memory" if state is None else "redis"
                round_rps[name] = row["rps"]
                parts = ("client", "server", "redis")
                round_rps[f"{name}_cpu_us"] = sum(
                    row.get(f"{part}_cpu_us_per_reply", 0.0) for part in parts
                )
        measured.append(round_rps)
        ratio = round_rps["redis"] / round_rps["memory"]
        print(f"[agents] state round {number + 1}: redis / memory {ratio:.2f}", flush=True)
    return measured


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
