"""Faults under load: SIGTERM mid-traffic, a killed worker, deadlines shorter than the work.

All on loopback, bounded in calls and seconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from agentscope_proto import _core, formatting, parsing
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    Msg,
    Role,
    TextBlock,
)
from agentscope_proto.service import ServerConfig

from adversarial_inputs import golden
from server_harness import RunningServer

COMMAND = [sys.executable, "-m", "agentscope_proto", "serve"]
OLLAMA = json.dumps({"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True})


class Serve:
    """`agentscope-proto serve` in a subprocess on a free port, waited for."""

    def __init__(self, *args: str, listeners: int = 1) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.process = subprocess.Popen(
            [*COMMAND, "--port", str(self.port), *args], stderr=subprocess.PIPE, text=True
        )
        self.log: list[str] = []
        deadline = time.monotonic() + 30
        while sum("listening on" in line for line in self.log) < listeners:
            assert time.monotonic() < deadline, "".join(self.log)
            line = self.process.stderr.readline() if self.process.stderr else ""
            if not line and self.process.poll() is not None:
                raise AssertionError("server exited:\n" + "".join(self.log))
            self.log.append(line)
        # Keep draining stderr so the server never blocks on a full pipe.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        for line in self.process.stderr or ():
            self.log.append(line)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait(self, signum: int | None = signal.SIGTERM) -> int:
        if signum is not None and self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._reader.join(5)


def _stream_requests(count: int, delay: float) -> Iterator[pb.ParseStreamRequest]:
    for index in range(count):
        chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": f"{index} "}}]}
        request = pb.ParseStreamRequest(chunk_json=json.dumps(chunk))
        if index == 0:
            request.provider = pb.PROVIDER_OPENAI
        yield request
        time.sleep(delay)


def _format_request() -> pb.FormatRequest:
    case = golden("formatters", "openai")[0]
    from agentscope_proto.client import format_request

    return format_request("openai", case["msgs"])


def _large_request() -> pb.FormatRequest:
    msg = Msg(name="u", role=Role.ROLE_USER)
    msg.blocks.items.extend([ContentBlock(text=TextBlock(text="a" * 500))] * 40_000)
    return pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=[msg])


def _large_format(target: str, outcome: list[str], request: pb.FormatRequest) -> None:
    options = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
    with grpc.insecure_channel(target, options=options) as channel:
        try:
            pb_grpc.FormatterServiceStub(channel).Format(request, timeout=30)
            outcome.append("OK")
        except grpc.RpcError as error:
            outcome.append(error.code().name)


# -- SIGTERM under load ------------------------------------------------------------


def _large_started(line: str) -> bool:
    # The servicer's DEBUG line for a call whose work began (`_unary`).
    _, found, rest = line.partition("Format started: ")
    return bool(found) and int(rest.split()[0]) > 1_000_000


def test_sigterm_under_load_every_call_completes_or_gets_a_status() -> None:
    served = Serve("--grace", "6", "--log-level", "debug")
    outcomes: list[tuple[str, str]] = []
    lock = threading.Lock()
    stop = threading.Event()
    format_request = _format_request()
    parse_request = pb.ParseRequest(provider=pb.PROVIDER_OLLAMA, response_json=OLLAMA)

    def client(kind: str) -> None:
        # One channel per client, calls back to back until the server is gone.
        with grpc.insecure_channel(served.target) as channel:
            stub = pb_grpc.FormatterServiceStub(channel)
            while not stop.is_set():
                try:
                    if kind == "format":
                        stub.Format(format_request, timeout=30)
                    elif kind == "parse":
                        stub.Parse(parse_request, timeout=30)
                    elif kind == "short stream":  # 0.5 s: within the grace period
                        replies = list(stub.ParseStream(_stream_requests(10, 0.05), timeout=30))
                        assert replies[-1].done
                    else:  # 8 s: longer than the grace period
                        replies = list(stub.ParseStream(_stream_requests(80, 0.1), timeout=30))
                        assert replies[-1].done
                    outcome = "OK"
                except grpc.RpcError as error:
                    outcome = error.code().name
                with lock:
                    outcomes.append((kind, outcome))
                if outcome != "OK":
                    return

    # Built before any call starts, so that the waits below cover only the calls:
    # on a loaded machine building it can take longer than a long stream lasts.
    large = _large_request()
    kinds = ["format"] * 4 + ["parse"] * 4 + ["short stream"] * 4 + ["long stream"] * 4
    threads = [threading.Thread(target=client, args=(kind,)) for kind in kinds]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    # One large Format (about a second of work) in flight at the signal: the
    # signal waits for the server's word that its work began, since on a busy
    # machine its connection alone can take longer than any fixed sleep.
    slow: list[str] = []
    seen = len(served.log)
    slow_call = threading.Thread(target=_large_format, args=(served.target, slow, large))
    slow_call.start()
    deadline = time.monotonic() + 5  # the long streams (8 s) must still be running
    while True:
        lines = served.log[seen:]
        seen += len(lines)
        if any(_large_started(line) for line in lines):
            break
        if time.monotonic() > deadline:
            stop.set()
            served.wait(signal.SIGKILL)
            pytest.fail("the large Format never started:\n" + "".join(served.log[-20:]))
        time.sleep(0.02)
    code = served.wait(signal.SIGTERM)
    stop.set()
    for thread in [*threads, slow_call]:
        thread.join(30)
    assert not [t for t in [*threads, slow_call] if t.is_alive()], "a call never returned"
    assert slow == ["OK"], "an RPC in flight at SIGTERM did not complete"
    assert code == 0, "".join(served.log)
    # Every call ended with a result or a status; the in-flight ones that fit in
    # the grace period completed, the others were cancelled, none vanished.
    codes = {outcome for _, outcome in outcomes}
    assert codes <= {"OK", "UNAVAILABLE", "CANCELLED"}, outcomes
    assert ("short stream", "OK") in outcomes
    assert ("format", "OK") in outcomes
    long = [outcome for kind, outcome in outcomes if kind == "long stream"]
    assert long, outcomes
    assert set(long) <= {"UNAVAILABLE", "CANCELLED"}, long
    assert any("draining" in line for line in served.log)


# -- a killed worker ----------------------------------------------------------------


def _call_worker(target: str) -> str:
    # A fresh connection each time, for the kernel to place.
    with grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)]) as channel:
        stub = pb_grpc.FormatterServiceStub(channel)
        request = pb.ParseRequest(provider=pb.PROVIDER_OLLAMA, response_json=OLLAMA)
        _, call = stub.Parse.with_call(request, timeout=10)
    return next(str(v) for k, v in call.initial_metadata() if k == "x-worker-pid")


def test_killing_one_worker_leaves_the_other_serving() -> None:
    served = Serve("--workers", "2", listeners=2)
    try:
        pids: set[str] = set()
        for _ in range(100):
            pids.add(_call_worker(served.target))
            if len(pids) == 2:
                break
        assert len(pids) == 2, pids
        victim, survivor = sorted(pids)
        os.kill(int(victim), signal.SIGKILL)
        time.sleep(0.3)  # the kernel drops the dead worker's socket from the port group
        answered = [_call_worker(served.target) for _ in range(20)]
        assert set(answered) == {survivor}
    finally:
        code = served.wait(signal.SIGTERM)
    # The supervisor reports the lost worker instead of exiting cleanly.
    assert code != 0
    assert "workers exited with" in "".join(served.log)


# -- deadlines stop the work ---------------------------------------------------------


@pytest.fixture
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


def _settled(counter: list[int], pause: float = 0.3) -> int:
    """The counter once it stopped moving for `pause` seconds."""
    before = -1
    while counter[0] != before:
        before = counter[0]
        time.sleep(pause)
    return before


def test_a_format_deadline_shorter_than_the_work_stops_it(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    converted = [0]
    view = formatting._view

    def slow_view(msg: Any, index: int) -> Any:
        time.sleep(0.002)
        converted[0] += 1
        return view(msg, index)

    monkeypatch.setattr(formatting, "_view", slow_view)
    # The Python walk, whose views are slowed (the compiled core builds none).
    monkeypatch.setattr(_core, "_mode", "python")
    msgs = [Msg(name="u", role=Role.ROLE_USER, text=str(i)) for i in range(2000)]  # ~4 s of work
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=msgs)
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.FormatterServiceStub(channel)
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as caught:
            stub.Format(request, timeout=0.3)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 1.0
    done = _settled(converted)
    assert 0 < done < 1000, f"the server went on to convert {done} of 2000 messages"


def test_a_parse_stream_deadline_stops_the_parsing(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fed = [0]
    feed = parsing.StreamParser.feed

    def counting_feed(self: parsing.StreamParser, chunk: Any) -> Any:
        fed[0] += 1
        return feed(self, chunk)

    monkeypatch.setattr(parsing.StreamParser, "feed", counting_feed)
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.FormatterServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            list(stub.ParseStream(_stream_requests(200, 0.01), timeout=0.5))
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    done = _settled(fed)
    assert 0 < done < 100, f"the server went on to parse {done} of 200 chunks"


def test_an_expired_deadline_is_not_started(server: RunningServer) -> None:
    # A deadline too short to even send the request: the work never runs. (A tiny
    # request could beat a 1 µs deadline on some grpcio versions; 20 MB cannot.)
    large = _large_request()
    options = [("grpc.max_send_message_length", 64 * 1024 * 1024)]
    with grpc.insecure_channel(server.target, options=options) as channel:
        stub = pb_grpc.FormatterServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Format(large, timeout=0.001)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
