"""Cancelling a reply (the caller goes away, or its deadline passes) interrupts
it as AgentScope's own interrupt does, leaves the session as a local
interrupt leaves a local agent, and leaks nothing: no task, no open model
stream, no running reply. A client closed under its reader ends the read
with one clear error.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from agentscope.message import UserMsg

from agentscope_proto import from_dict, get_text_content
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto.agents import AgentClient, AsyncAgentClient, reply_request
from agentscope_proto.errors import RemoteError

from hosted import SUNNY, AgentServer, closed_under_reader, serve, user
from replay_agent import make_agent
from replay_server import ReplayServer, wait_until

# What differs between two runs of the same conversation.
_VOLATILE = {"id", "created_at", "finished_at", "reply_id", "session_id", "usage"}


def _shape(value: Any) -> Any:
    """A dump without its ids and times (the runtime reminder's clock included)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"<current-time>.*?</current-time>", "<current-time/>", value)
    return value


def _context(server: AgentServer, session_id: str) -> list[Any]:
    """The session's agent's context, dumped, read on the server's loop."""

    async def read() -> list[Any]:
        session = await server.servicer.sessions.open(session_id, create=False)
        return [msg.model_dump(mode="json") for msg in session.agent.state.context]

    result: list[Any] = server.call(read())
    return result


def _settled(server: AgentServer, replay: ReplayServer) -> bool:
    return not server.servicer.sessions.running and replay.open_streams == 0


async def _interrupt_locally(base_url: str, replay: ReplayServer) -> list[Any]:
    """A local agent, interrupted while its model answers: its context after."""
    agent = make_agent(base_url)
    streams = replay.hung_streams

    async def consume() -> None:
        async for _ in agent.reply_stream(UserMsg("user", "wait")):
            pass

    task = asyncio.create_task(consume())
    while replay.hung_streams == streams:
        assert not task.done(), "the reply ended before its model call"
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return [msg.model_dump(mode="json") for msg in agent.state.context]


def test_a_cancelled_reply_leaves_the_session_as_a_local_interrupt_does(
    served: AgentServer, replay: ReplayServer
) -> None:
    with AgentClient(served.target) as client:
        stream = client.reply_stream(user("wait"))
        session = next(stream).reply_start.session_id
        assert wait_until(lambda: replay.open_streams > 0)
        stream.close()  # cancels the call
        assert wait_until(lambda: _settled(served, replay))
        remote = _context(served, session)
        local = asyncio.run(_interrupt_locally(replay.base_url, replay))
        assert _shape(remote) == _shape(local)
        assert [msg["role"] for msg in remote] == ["user", "assistant"]
        # The session takes its next call as usual.
        assert get_text_content(client.reply(user("hi"), session_id=session)) == SUNNY


def test_a_passed_deadline_interrupts_the_reply(served: AgentServer, replay: ReplayServer) -> None:
    with AgentClient(served.target) as client:
        with pytest.raises(RemoteError) as info:
            client.reply(user("wait"), session_id="deadline", timeout=0.5)
        assert info.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert wait_until(lambda: _settled(served, replay))
        assert get_text_content(client.reply(user("hi"), session_id="deadline")) == SUNNY


def test_a_reply_cancelled_while_waiting_for_its_session_never_runs(
    served: AgentServer, replay: ReplayServer
) -> None:
    with AgentClient(served.target) as client, grpc.insecure_channel(served.target) as channel:
        first = client.reply_stream(user("wait"), session_id="queue")
        next(first)
        stub = pb_grpc.AgentServiceStub(channel)
        second = stub.Reply(reply_request(user("hi"), session_id="queue"))
        assert wait_until(lambda: len(served.servicer.sessions.running) == 2)
        second.cancel()  # while it waits for the session
        # The two calls are on two connections: the server may hear of the
        # first's end before the second's cancellation unless it has this.
        assert wait_until(lambda: len(served.servicer.sessions.running) == 1)
        first.close()
        assert wait_until(lambda: _settled(served, replay))
        said = [get_text_content(_msg(m)) for m in _context(served, "queue")]
        assert said[0] == "wait"
        assert "hi" not in said  # the second reply never reached the agent


def _msg(dump: dict[str, Any]) -> Any:
    return from_dict(dump, dialect="agentscope2")


def test_a_hundred_cancelled_replies_leak_nothing(
    factory: Callable[[], Any], replay: ReplayServer
) -> None:
    server = serve(factory)
    try:
        with AgentClient(server.target) as client:
            assert get_text_content(client.reply(user("hi"), session_id="leak")) == SUNNY
            tasks = server.tasks()
            for _ in range(100):
                stream = client.reply_stream(user("wait"), session_id="leak")
                next(stream)
                stream.close()
            assert wait_until(lambda: _settled(server, replay), timeout=60)
            assert wait_until(lambda: server.tasks() <= tasks)
            said = [get_text_content(_msg(m)) for m in _context(server, "leak")]
            assert said.count("wait") == 100  # each reached the agent, and ended
            assert get_text_content(client.reply(user("hi"), session_id="leak")) == SUNNY
    finally:
        server.stop()


@pytest.mark.parametrize("resume_attempts", [0, 3])
def test_a_client_closed_under_its_reader_ends_the_read_saying_so(
    served: AgentServer, replay: ReplayServer, resume_attempts: int
) -> None:
    """Closed while a thread (blocking client) or a task (asyncio) reads a
    reply, a client ends that read with `RemoteError(CANCELLED, "the client
    was closed")`, also where it would take the reply up: not grpc's refusal
    of a call on a closed channel (`ValueError`, `UsageError`), nor a
    `CancelledError` in a task nobody cancelled. Its calls after are refused
    the same way."""
    session = f"closed-{resume_attempts}"
    outcome: list[BaseException] = []
    client = AgentClient(served.target)

    def read() -> None:
        try:
            for _ in client.reply_stream(
                user("wait"), session_id=session, resume_attempts=resume_attempts
            ):
                pass
        except Exception as exc:  # the outcome this test checks
            outcome.append(exc)

    streams = replay.hung_streams
    reader = threading.Thread(target=read)
    reader.start()
    assert wait_until(lambda: replay.hung_streams > streams)
    client.close()
    reader.join(10)

    async def run() -> list[BaseException]:
        closing = AsyncAgentClient(served.target)
        reply = closing.reply_stream(
            user("wait"), session_id=session + "-async", resume_attempts=resume_attempts
        )
        ended: list[BaseException] = [*await closed_under_reader(reply, closing.close, replay)]
        try:
            await closing.describe()
        except RemoteError as exc:
            ended.append(exc)
        return ended

    outcome += asyncio.run(run())
    with pytest.raises(RemoteError) as after:
        client.describe()
    outcome.append(after.value)
    assert [(type(e), e.code, e.message) for e in outcome if isinstance(e, RemoteError)] == [
        (RemoteError, grpc.StatusCode.CANCELLED, "the client was closed")
    ] * 4
    assert len(outcome) == 4
    # The replies kept running (to be taken up) end by their session's interrupt.
    with grpc.insecure_channel(served.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        for name in (session, session + "-async"):
            request = reply_request(session_id=name)
            request.user_interrupt.SetInParent()
            with contextlib.suppress(grpc.RpcError):
                list(stub.Reply(request, timeout=5))
    assert wait_until(lambda: _settled(served, replay))
