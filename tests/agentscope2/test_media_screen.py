"""A served agent is a trust boundary (agents/media.py, Sessions.read_inputs):
a caller's media reference never makes the server read a local file or
reach an internal address, on any inbound path, and one large request holds
no other session's call.

A real AgentScope 2.x agent whose model is the replay server (hosted.py);
a stand-in internal HTTP server on loopback counts what reaches it, and the
model's requests are searched for the secret bytes.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Role as A2ARole
from a2a.types import SendMessageRequest
from a2a.utils.errors import InvalidParamsError
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from agentscope_proto._fetch import MediaLimits
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as events
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    AudioBlock,
    ContentBlock,
    ContentBlocks,
    DataBlock,
    ImageBlock,
    MediaSource,
    Msg,
    Role,
    TextBlock,
    ToolResultBlock,
)
from agentscope_proto.a2a import msgs_to_a2a
from agentscope_proto.agents import AgentConfig
from agentscope_proto.agents.media import (
    LOOP_BLOCKS,
    MediaPolicy,
    OffLoop,
    screen_msgs,
    screen_request,
)

from hosted import AgentServer, serve, serve_a2a
from replay_server import ReplayServer

SECRET = b"secret-bytes-4b1d9e"


class Internal:
    """An internal HTTP service on loopback that serves `SECRET` and counts requests."""

    def __init__(self) -> None:
        self.hits = 0
        internal = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                internal.hits += 1
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(SECRET)))
                self.end_headers()
                self.wfile.write(SECRET)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def internal() -> Iterator[Internal]:
    server = Internal()
    yield server
    server.close()


@pytest.fixture(scope="module")
def served(factory: Callable[[], Any]) -> Iterator[AgentServer]:
    server = serve(factory)
    yield server
    server.stop()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.png"
    path.write_bytes(SECRET)
    return path


def _media(kind: str, url: str) -> ContentBlock:
    source = MediaSource(url=url)
    if kind == "data":
        return ContentBlock(data=DataBlock(source=MediaSource(url=url, media_type="text/plain")))
    if kind == "audio":
        return ContentBlock(audio=AudioBlock(source=source))
    return ContentBlock(image=ImageBlock(source=source))


def _msg(*blocks: ContentBlock, words: str = "hi") -> Msg:
    items = [ContentBlock(text=TextBlock(text=words)), *blocks]
    return Msg(name="user", role=Role.ROLE_USER, blocks=ContentBlocks(items=items))


def _refusal(error: grpc.RpcError) -> str:
    """The block a MEDIA_ACCESS refusal names."""
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION, error
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        failure = error_details_pb2.PreconditionFailure()
        if detail.Unpack(failure):
            (violation,) = failure.violations
            assert violation.type == "MEDIA_ACCESS"
            return violation.subject
    raise AssertionError(f"no PreconditionFailure in {status}")


def _secret_sent(replay: ReplayServer) -> bool:
    sent = repr(replay.requests)
    return SECRET.decode() in sent or base64.b64encode(SECRET).decode() in sent


# Each: the reference a caller names, as a function of the secret file and the
# internal server's port.
REFERENCES = {
    "a data block at a local path": lambda path, port: _media("data", str(path)),
    "an image at a file: URL": lambda path, port: _media("image", path.as_uri()),
    "audio at a loopback URL": lambda path, port: _media(
        "audio", f"http://127.0.0.1:{port}/admin.wav"
    ),
    "an image at localhost": lambda path, port: _media("image", f"http://localhost:{port}/x.png"),
    "an image at the metadata address": lambda path, port: _media(
        "image", "http://169.254.169.254/latest/meta-data/"
    ),
    "an image at an IPv4-mapped loopback": lambda path, port: _media(
        "image", f"http://[::ffff:127.0.0.1]:{port}/x.png"
    ),
    "an ftp: URL": lambda path, port: _media("image", f"ftp://127.0.0.1:{port}/x.png"),
}


@pytest.mark.parametrize("reference", REFERENCES)
def test_a_callers_file_or_internal_url_is_refused_before_the_agent(
    served: AgentServer,
    replay: ReplayServer,
    internal: Internal,
    secret_file: Path,
    reference: str,
) -> None:
    block = REFERENCES[reference](secret_file, internal.port)
    calls, hits = len(replay.requests), internal.hits
    with grpc.insecure_channel(served.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        with pytest.raises(grpc.RpcError) as reply:
            list(stub.Reply(pb.ReplyRequest(msgs=[_msg(block)]), timeout=30))
        with pytest.raises(grpc.RpcError) as observe:
            stub.Observe(pb.ObserveRequest(msgs=[_msg(), _msg(block)]), timeout=30)
    assert _refusal(reply.value) == "msgs[0].content[1].source.url"
    assert _refusal(observe.value) == "msgs[1].content[1].source.url"
    assert len(replay.requests) == calls
    assert internal.hits == hits
    assert not _secret_sent(replay)


def test_media_in_an_answers_tool_results_is_screened_too(
    served: AgentServer, internal: Internal
) -> None:
    inner = ContentBlocks(items=[_media("audio", f"http://127.0.0.1:{internal.port}/a.wav")])
    result = ToolResultBlock(id="call", name="tool", blocks=inner)
    request = pb.ReplyRequest(
        session_id=uuid.uuid4().hex,
        external_execution_result=events.ExternalExecutionResultEvent(
            reply_id="r", execution_results=[result]
        ),
    )
    with grpc.insecure_channel(served.target) as channel, pytest.raises(grpc.RpcError) as info:
        list(pb_grpc.AgentServiceStub(channel).Reply(request, timeout=30))
    path = "external_execution_result.execution_results[0].output[0].source.url"
    assert _refusal(info.value) == path
    assert internal.hits == 0


def test_over_a2a_a_callers_file_is_refused(
    factory: Callable[[], Any], replay: ReplayServer, secret_file: Path
) -> None:
    served = serve_a2a(factory)
    try:
        message = msgs_to_a2a([_msg(_media("image", str(secret_file)))], role=A2ARole.ROLE_USER)
        message.message_id = uuid.uuid4().hex
        calls = len(replay.requests)

        async def send() -> None:
            options = ClientConfig(streaming=False, supported_protocol_bindings=["JSONRPC"])
            client = ClientFactory(options).create(served.a2a.card)
            try:
                async for _ in client.send_message(SendMessageRequest(message=message)):
                    pass
            finally:
                await client.close()

        with pytest.raises(InvalidParamsError) as info:
            asyncio.run(send())
    finally:
        served.stop()
    assert "source.url" in str(info.value)
    assert "local file" in str(info.value)
    assert len(replay.requests) == calls
    assert not _secret_sent(replay)


def test_an_operator_lets_callers_cite_its_media_and_the_agent_gets_bytes(
    factory: Callable[[], Any], replay: ReplayServer, internal: Internal, tmp_path: Path
) -> None:
    (tmp_path / "pic.png").write_bytes(SECRET)
    policy = MediaPolicy(tmp_path, MediaLimits(allow_networks=("127.0.0.1/32",)))
    served = serve(factory, AgentConfig(media=policy))
    hits = internal.hits
    try:
        msg = _msg(
            _media("image", str(tmp_path / "pic.png")),
            _media("image", f"http://127.0.0.1:{internal.port}/y.png"),
        )
        with grpc.insecure_channel(served.target) as channel:
            done = list(pb_grpc.AgentServiceStub(channel).Reply(pb.ReplyRequest(msgs=[msg])))
    finally:
        served.stop()
    assert done[-1].done
    # Fetched once, by the screen; the agent's model got the bytes, no reference.
    assert internal.hits == hits + 1
    sent = repr(replay.requests[-1])
    assert sent.count(base64.b64encode(SECRET).decode()) == 2
    assert str(tmp_path) not in sent
    assert f":{internal.port}/" not in sent


def test_a_request_past_the_message_cap_is_refused_and_holds_no_one(served: AgentServer) -> None:
    """100,000 one-word messages (about 6 MB): refused before conversion, and
    a small reply on another session goes on beside it."""
    big = pb.ReplyRequest(msgs=[_msg(words="word") for _ in range(100_000)])
    small = pb.ReplyRequest(msgs=[_msg()])
    with grpc.insecure_channel(served.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)

        def run_small() -> float:
            started = time.monotonic()
            assert list(stub.Reply(small, timeout=30))[-1].done
            return time.monotonic() - started

        with ThreadPoolExecutor(2) as pool:
            refused = pool.submit(lambda: list(stub.Reply(big, timeout=60)))
            took = pool.submit(run_small).result()
            with pytest.raises(grpc.RpcError) as info:
                refused.result()
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "max_request_msgs" in (info.value.details() or "")
    assert took < 10, f"a small reply beside the big request took {took:.1f} s"


def test_a_large_observe_is_read_off_the_event_loop(served: AgentServer) -> None:
    """At the cap, the conversion runs in a worker thread: the server's loop
    answers another session meanwhile, within a generous bound."""
    cap = AgentConfig().max_request_msgs
    big = pb.ObserveRequest(msgs=[_msg(words=f"word {i}") for i in range(cap)])
    with grpc.insecure_channel(served.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        with ThreadPoolExecutor(2) as pool:
            observed = pool.submit(lambda: stub.Observe(big, timeout=120))
            started = time.monotonic()
            assert list(stub.Reply(pb.ReplyRequest(msgs=[_msg()]), timeout=30))[-1].done
            took = time.monotonic() - started
            assert observed.result().session_id
    assert took < 10, f"a small reply beside a large Observe took {took:.1f} s"


def _call(stub: pb_grpc.AgentServiceStub, request: pb.ReplyRequest | pb.ObserveRequest) -> None:
    if isinstance(request, pb.ReplyRequest):
        list(stub.Reply(request, timeout=30))
    else:
        stub.Observe(request, timeout=30)


def test_a_request_past_the_block_cap_is_refused_before_any_conversion(
    factory: Callable[[], Any],
) -> None:
    """Blocks are counted as the screen walks them, those inside a tool
    result or an answer's results too: one past the cap is RESOURCE_EXHAUSTED,
    at the cap the call goes through."""
    server = serve(factory, AgentConfig(max_request_blocks=4))
    nested = ContentBlock(
        tool_result=ToolResultBlock(
            id="call-1",
            name="tool",
            blocks=ContentBlocks(items=[ContentBlock(text=TextBlock(text="x"))] * 2),
        )
    )
    answer = events.ExternalExecutionResultEvent(
        reply_id="r", execution_results=[ToolResultBlock(id="c", name="t", text="x")] * 5
    )
    over = {
        "Reply": pb.ReplyRequest(msgs=[_msg(), _msg(nested)]),  # 1 + 2 + 2 nested
        "Observe": pb.ObserveRequest(msgs=[_msg()] * 5),
        "an answer's": pb.ReplyRequest(session_id="s", external_execution_result=answer),
    }
    try:
        with grpc.insecure_channel(server.target) as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            for what, request in over.items():
                with pytest.raises(grpc.RpcError) as info:
                    _call(stub, request)
                assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, what
                assert "max_request_blocks" in (info.value.details() or ""), what
            assert stub.Observe(pb.ObserveRequest(msgs=[_msg()] * 4), timeout=30).session_id
            assert list(stub.Reply(pb.ReplyRequest(msgs=[_msg()] * 4), timeout=30))[-1].done
    finally:
        server.stop()


def _blocks_msg(count: int, source: MediaSource | None = None) -> Msg:
    items = [ContentBlock(text=TextBlock(text="hi")) for _ in range(count)]
    if source is not None:
        items.append(ContentBlock(image=ImageBlock(source=source)))
    return Msg(name="user", role=Role.ROLE_USER, blocks=ContentBlocks(items=items))


@pytest.mark.parametrize(
    "msg",
    [
        _blocks_msg(1, MediaSource(url="http://127.0.0.1:9/x.png")),
        _blocks_msg(1, MediaSource(url="/etc/hostname")),
        _blocks_msg(1, MediaSource(url="file:///etc/hostname")),
        _blocks_msg(LOOP_BLOCKS + 1),
    ],
    ids=["download", "path", "file-url", "many-blocks"],
)
def test_a_screen_on_the_event_loop_leaves_fetches_and_many_blocks_to_a_thread(msg: Msg) -> None:
    request = pb.ReplyRequest(msgs=[msg])
    before = request.SerializeToString()
    with pytest.raises(OffLoop):
        screen_request(request, MediaPolicy(), threading.Event(), 100_000, on_loop=True)
    assert request.SerializeToString() == before  # nothing changed: screened again off the loop


def test_a_small_call_is_screened_on_the_event_loop() -> None:
    data = MediaSource(url="data:image/png;base64,iVBORw0KGgo=")
    request = pb.ReplyRequest(msgs=[_blocks_msg(LOOP_BLOCKS - 1, data)])
    screen_request(request, MediaPolicy(), threading.Event(), 100_000, on_loop=True)


@pytest.mark.parametrize(
    ("msgs", "on_loop"),
    [
        ([_blocks_msg(2)], True),
        ([_blocks_msg(2, MediaSource(url="http://127.0.0.1:9/x.png"))], False),
        ([_msg() for _ in range(9)], False),  # past _LOOP_MSGS
        ([_msg(words="x" * (256 * 1024))], False),  # past _LOOP_BYTES
    ],
    ids=["small", "media-url", "many-msgs", "large"],
)
def test_where_a_call_is_read(msgs: list[Msg], on_loop: bool) -> None:
    """A small call is read at once on the loop's thread; one with media to
    fetch, many messages or many bytes in a worker thread."""
    from agentscope_proto.agents.sessions import _read_call

    def work(stop: threading.Event, loop: bool) -> tuple[bool, bool]:
        if loop:
            screen_msgs(msgs, "msgs", MediaPolicy(), stop, 100_000, on_loop=True)
        return loop, threading.current_thread() is threading.main_thread()

    assert asyncio.run(_read_call(work, msgs)) == (on_loop, on_loop)
