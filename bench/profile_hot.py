"""Where the time goes: pyinstrument profiles of our side of each comparison.

Each workload runs in a loop for a fixed time under pyinstrument's sampling
profiler (0.1 ms interval); the result lists, per workload, the share of
samples by package module (own time: time spent in the function itself, with
C calls such as protobuf accessors or `json` counted in the function that made
them) and the functions with the most own time.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import load_corpus, parse_args, quiet_logging, write_json
from bench_parse import _cases, _our_options
from pyinstrument import Profiler

from agentscope_proto import Conversation, from_dict, to_dict
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.formatting import format as proto_format
from agentscope_proto.parsing import StreamParser, parse
from agentscope_proto.service import FormatterServicer, ServerConfig

PACKAGE = "agentscope_proto"


def _where(frame: Any) -> tuple[str, str]:
    """(module, function) of a frame: package modules by name, the rest grouped."""
    path = frame.file_path or ""
    function = frame.function or "?"
    if f"/{PACKAGE}/" in path:
        module = PACKAGE + "." + path.split(f"/{PACKAGE}/", 1)[1].removesuffix(".py")
        module = module.replace("/", ".")
    elif frame.is_synthetic or not path:
        module = "[C / builtins]"
    elif "/site-packages/" in path:
        module = path.split("/site-packages/", 1)[1].split("/", 1)[0]
    elif "/bench/" in path:
        module = "[benchmark loop]"
    else:
        module = "[python stdlib] " + Path(path).stem
    return module, function


def _profile(work: Callable[[], Any], seconds: float) -> dict[str, Any]:
    profiler = Profiler(interval=0.0001)
    calls = 0
    profiler.start()
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        work()
        calls += 1
    profiler.stop()
    session = profiler.last_session
    assert session is not None
    by_module: dict[str, float] = defaultdict(float)
    by_function: dict[tuple[str, str], float] = defaultdict(float)
    stack = [session.root_frame()]
    total = 0.0
    while stack:
        frame = stack.pop()
        if frame is None:
            continue
        stack.extend(frame.children)
        own = frame.total_self_time
        if own <= 0:
            continue
        # Synthetic frames ([self], [await]) are time of their parent function.
        real = frame.parent if frame.is_synthetic and frame.parent is not None else frame
        module, function = _where(real)
        by_module[module] += own
        by_function[(module, function)] += own
        total += own
    modules = sorted(by_module.items(), key=lambda kv: -kv[1])
    functions = sorted(by_function.items(), key=lambda kv: -kv[1])[:12]
    return {
        "calls": calls,
        "us_per_call": seconds / calls * 1e6,
        "modules": [[m, t / total] for m, t in modules if t / total >= 0.01],
        "functions": [[f"{m}:{f}", t / total] for (m, f), t in functions],
    }


class _Context:
    """Just enough of `grpc.aio.ServicerContext` for a successful Format."""

    def time_remaining(self) -> float | None:
        return None

    async def send_initial_metadata(self, metadata: Any) -> None:
        return None


async def _inline(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


def workloads() -> dict[str, tuple[str, Callable[[], Any]]]:
    tools = load_corpus("tools_200")
    tools_msgs = [from_dict(d) for d in tools]
    chat_msgs = [from_dict(d) for d in load_corpus("chat_200")]
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI)
    request.messages.extend(from_dict(d) for d in load_corpus("tools_20"))
    streams = {
        provider: [c for c in _cases(provider) if c["stream"]]
        for provider in ("openai", "anthropic", "dashscope")
    }
    responses = [c for c in _cases("openai") if not c["stream"]]

    # The agent loop of bench_loop_as2.py: the history in AgentScope 2.x's shape.
    tools_as2 = [
        from_dict(to_dict(m, dialect="agentscope2"), dialect="agentscope2") for m in tools_msgs
    ]

    def conversation(provider: str) -> Callable[[], None]:
        def run() -> None:
            history = Conversation(provider)
            for msg in tools_as2:
                history.append(msg)
                history.format_json()

        return run

    servicer = FormatterServicer(ServerConfig())
    loop = asyncio.new_event_loop()
    raw_request = request.SerializeToString()
    last_turn = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=tools_msgs)
    raw_last_turn = last_turn.SerializeToString()

    def handler(raw: bytes) -> Callable[[], None]:
        # The real Format handler on a freshly decoded request, with a stand-in
        # for gRPC's context; its worker-thread hop runs inline (the profiler
        # samples one thread).
        def run() -> None:
            fresh = pb.FormatRequest.FromString(raw)
            loop.run_until_complete(servicer.Format(fresh, _Context()))  # type: ignore[arg-type]

        return run

    def stream(provider: str) -> Callable[[], None]:
        def run() -> None:
            for case in streams[provider]:
                parser = StreamParser(provider, **_our_options(case))
                for chunk in case["chunks"]:
                    parser.feed(chunk)
                parser.finish()

        return run

    def parse_openai() -> None:
        for case in responses:
            parse("openai", case["response"], **_our_options(case))

    return {
        "format_openai_tools_200": (
            "format('openai', tools_200 as Msgs)",
            lambda: proto_format("openai", tools_msgs),
        ),
        "format_openai_chat_200": (
            "format('openai', chat_200 as Msgs)",
            lambda: proto_format("openai", chat_msgs),
        ),
        "format_multi_agent_tools_200": (
            "format('openai', tools_200 as Msgs, multi_agent=True)",
            lambda: proto_format("openai", tools_msgs, multi_agent=True),
        ),
        "server_format_handler": (
            "FormatterServicer.Format on the service request (tools_20, openai), "
            "decoding included, gRPC and the thread hop left out",
            handler(raw_request),
        ),
        "server_format_handler_loop_200": (
            "FormatterServicer.Format on the agent loop's last turn (tools_200, openai), "
            "decoding included, gRPC left out",
            handler(raw_last_turn),
        ),
        "conversation_moonshot_tools_200_as2": (
            "Conversation('moonshot') grown over tools_200 in AgentScope 2.x's shape, "
            "format_json() after every message (provider fidelity; the loop of "
            "bench_loop_as2.py)",
            conversation("moonshot"),
        ),
        "parse_openai": ("parse('openai', ...) over the golden responses", parse_openai),
        "stream_openai": ("StreamParser('openai') over the golden streams", stream("openai")),
        "stream_anthropic": (
            "StreamParser('anthropic') over the golden streams",
            stream("anthropic"),
        ),
        "stream_dashscope": (
            "StreamParser('dashscope') over the golden streams",
            stream("dashscope"),
        ),
        "from_dict_tools_200": (
            "from_dict over tools_200",
            lambda: [from_dict(d) for d in tools],
        ),
        "to_dict_tools_200": ("to_dict over tools_200", lambda: [to_dict(m) for m in tools_msgs]),
    }


def main() -> None:
    args = parse_args(__doc__ or "")
    quiet_logging()
    asyncio.to_thread = _inline  # type: ignore[assignment]
    seconds = 0.2 if args.quick else 3.0
    results = {
        name: {"what": what, **_profile(work, seconds)}
        for name, (what, work) in workloads().items()
    }
    write_json(args.json, results)


if __name__ == "__main__":
    main()
