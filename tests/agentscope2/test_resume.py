"""`AgentService.Resume`: a reply taken up where its caller stopped reading,
each response once, on the replica that runs it or another (a real
redis-server). A replica's death mid-reply: test_takeover.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from agentscope_proto import FinishedReason, from_dict
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto.agents import AgentConfig

from hosted import AgentServer, serve, user
from hub_fixtures import RedisServer
from replay_server import ReplayServer


@pytest.fixture
def started(factory: Callable[[], Any]) -> Iterator[Callable[..., AgentServer]]:
    servers: list[AgentServer] = []

    def start(**config: Any) -> AgentServer:
        servers.append(serve(factory, AgentConfig(**config)))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def _request(words: str, session: str, *, keep_running: bool = True) -> pb.ReplyRequest:
    return pb.ReplyRequest(
        msgs=[from_dict(user(words), "agentscope2")], session_id=session, keep_running=keep_running
    )


def _key(response: pb.ReplyResponse) -> bytes:
    """A response without its cursor: what both ways of reading must agree on."""
    copy = pb.ReplyResponse()
    copy.CopyFrom(response)
    copy.ClearField("cursor")
    return copy.SerializeToString(deterministic=True)


def _reply_id(responses: list[pb.ReplyResponse]) -> str:
    return responses[0].event.reply_start.reply_id


def _resume(target: str, session: str, reply_id: str, after: str) -> list[pb.ReplyResponse]:
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        request = pb.ResumeRequest(session_id=session, reply_id=reply_id, after=after)
        return list(stub.Resume(request, timeout=60))


def _read_then_drop(target: str, request: pb.ReplyRequest, count: int) -> list[pb.ReplyResponse]:
    """The first `count` responses of a Reply; then the call is cancelled."""
    with grpc.insecure_channel(target) as channel:
        call = pb_grpc.AgentServiceStub(channel).Reply(request, timeout=60)
        first = [next(call) for _ in range(count)]
        call.cancel()
    return first


def test_every_response_has_an_increasing_cursor_and_resume_from_the_start_repeats_them(
    started: Callable[..., AgentServer],
) -> None:
    server = started()
    with grpc.insecure_channel(server.target) as channel:
        whole = list(pb_grpc.AgentServiceStub(channel).Reply(_request("hi", "s1"), timeout=60))
    cursors = [response.cursor for response in whole]
    assert all(cursors)
    assert len(set(cursors)) == len(cursors)
    again = _resume(server.target, "s1", _reply_id(whole), "")
    assert [_key(r) for r in again] == [_key(r) for r in whole]
    assert [r.cursor for r in again] == cursors
    # After the last: nothing follows (the reply ended).
    assert _resume(server.target, "s1", _reply_id(whole), cursors[-1]) == []


def test_a_caller_that_drops_resumes_and_gets_the_rest_once(
    started: Callable[..., AgentServer],
) -> None:
    server = started()
    first = _read_then_drop(server.target, _request("weather?", "s2"), 3)
    rest = _resume(server.target, "s2", _reply_id(first), first[-1].cursor)
    whole = _resume(server.target, "s2", _reply_id(first), "")
    assert [_key(r) for r in first + rest] == [_key(r) for r in whole]
    assert rest[-1].done
    assert rest[-1].event.WhichOneof("event") == "require_user_confirm"


def test_a_reply_not_kept_running_is_interrupted_when_its_caller_drops(
    started: Callable[..., AgentServer],
) -> None:
    server = started()
    # Its model never answers: the reply still runs when its caller drops
    # (a reply that finished first, as "weather?" could, has nothing to interrupt).
    first = _read_then_drop(server.target, _request("wait", "s3", keep_running=False), 2)
    rest = _resume(server.target, "s3", _reply_id(first), first[-1].cursor)
    assert rest[-1].done
    assert rest[-1].msg.finished_reason == FinishedReason.FINISHED_REASON_INTERRUPTED


def test_bad_resumes_are_refused_naming_the_field(started: Callable[..., AgentServer]) -> None:
    server = started()
    with grpc.insecure_channel(server.target) as channel:
        whole = list(pb_grpc.AgentServiceStub(channel).Reply(_request("hi", "s4"), timeout=60))
        other = list(pb_grpc.AgentServiceStub(channel).Reply(_request("hi", "s4"), timeout=60))
    cases = {
        "an unknown reply": ("s4", "nope", "", grpc.StatusCode.NOT_FOUND, "reply_id"),
        "another reply's cursor": (
            "s4",
            _reply_id(whole),
            other[1].cursor,
            grpc.StatusCode.INVALID_ARGUMENT,
            "after",
        ),
        "another session": ("s5", _reply_id(whole), "", grpc.StatusCode.NOT_FOUND, "reply_id"),
        "no reply id": ("s4", "", "", grpc.StatusCode.INVALID_ARGUMENT, "reply_id"),
    }
    for what, (session, reply_id, after, code, field) in cases.items():
        with pytest.raises(grpc.RpcError) as info:
            _resume(server.target, session, reply_id, after)
        assert info.value.code() == code, what
        assert (info.value.details() or "").startswith(f"{field}:"), what


def test_another_replica_resumes_a_reply_in_flight(
    started: Callable[..., AgentServer], redis_server: RedisServer
) -> None:
    a = started(state=redis_server.url, lease_seconds=1)
    b = started(state=redis_server.url, lease_seconds=1)
    first = _read_then_drop(a.target, _request("three tools", "r1"), 2)
    rest = _resume(b.target, "r1", _reply_id(first), first[-1].cursor)
    whole = _resume(a.target, "r1", _reply_id(first), "")
    assert [_key(r) for r in first + rest] == [_key(r) for r in whole]
    assert rest[-1].done


def _assert_interrupted_through(
    running: AgentServer, asked: AgentServer, session: str, timeout: float = 60
) -> None:
    """A kept reply whose model never answers runs on `running`, its caller
    gone; a `user_interrupt` sent to `asked` ends it, and its own turn
    there, within `timeout`: a resume sees it end interrupted."""
    from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as events

    first = _read_then_drop(running.target, _request("wait", session), 2)
    interrupt = pb.ReplyRequest(
        session_id=session, user_interrupt=events.UserInterruptEvent(reply_id=_reply_id(first))
    )
    with grpc.insecure_channel(asked.target) as channel:
        list(pb_grpc.AgentServiceStub(channel).Reply(interrupt, timeout=timeout))
    rest = _resume(asked.target, session, _reply_id(first), first[-1].cursor)
    assert rest[-1].done
    assert rest[-1].msg.finished_reason == FinishedReason.FINISHED_REASON_INTERRUPTED


def test_a_reply_kept_running_is_interrupted_by_a_user_interrupt(
    started: Callable[..., AgentServer],
) -> None:
    """Its caller gone, a reply whose model never answers is ended by a
    Reply with a `user_interrupt` answer in its session: a resume sees it
    end interrupted."""
    server = started()
    _assert_interrupted_through(server, server, "i1")


def test_a_client_takes_its_reply_up_by_itself_when_the_connection_drops() -> None:
    """A `resume_attempts` client through a proxy that drops the connection
    while the model is mid-stream: the client resumes, and yields every
    event once, in order, as the reply's log holds them."""
    from agentscope_proto.agents import AgentClient
    from tcp_proxy import Proxy

    from replay_agent import make_agent

    with ReplayServer({"slow": ["hold:stream_text_by3"]}) as replay:
        server = serve(lambda: make_agent(replay.base_url))
        proxy = Proxy(server.port)
        try:
            with AgentClient(proxy.target) as client:
                stream = client.reply_stream(user("slow"), session_id="c1", resume_attempts=5)
                seen = [next(stream)]
                while seen[-1].WhichOneof("event") != "model_call_start":
                    seen.append(next(stream))
                proxy.cut()
                replay.release.set()
                seen += list(stream)
            reply_id = seen[0].reply_start.reply_id
            logged = _resume(server.target, "c1", reply_id, "")
            expected = [r.event for r in logged] + [logged[-1].msg]
            assert seen == expected
        finally:
            proxy.close()
            server.stop()


def test_a_client_gives_up_after_its_attempts_with_a_clear_error() -> None:
    from agentscope_proto.agents import AgentClient
    from agentscope_proto.errors import RemoteError
    from tcp_proxy import Proxy

    from replay_agent import make_agent

    with ReplayServer({"slow": ["hold:stream_text_by3"]}) as replay:
        server = serve(lambda: make_agent(replay.base_url))
        proxy = Proxy(server.port)
        try:
            with AgentClient(proxy.target) as client:
                stream = client.reply_stream(user("slow"), session_id="c2", resume_attempts=2)
                while next(stream).WhichOneof("event") != "model_call_start":
                    pass
                proxy.close()  # nothing listens there any more
                with pytest.raises(RemoteError, match="2 attempts to take it up failed"):
                    list(stream)
        finally:
            replay.release.set()
            server.stop()


@pytest.mark.parametrize(
    ("host", "aio"), [("127.0.0.1", False), ("localhost", False), ("localhost", True)]
)
def test_a_client_of_two_replicas_resumes_on_the_other_when_one_is_cut_off(
    redis_server: RedisServer, host: str, aio: bool
) -> None:
    """Replicas A and B on one Redis; the client (blocking, or asyncio's) is
    given both (by IP address: one channel; by host name: a channel each)
    and reaches A (through a proxy). A becomes unreachable mid-reply (it runs
    on): the client moves to B, which takes the reply up from the log A goes
    on writing, each event once."""
    from tcp_proxy import Proxy

    from replay_agent import make_agent

    config = AgentConfig(state=redis_server.url, lease_seconds=1)
    session = f"{host}-{aio}"
    with ReplayServer({"slow": ["hold:stream_text_by3"]}) as replay:
        a = serve(lambda: make_agent(replay.base_url), config)
        b = serve(lambda: make_agent(replay.base_url), config)
        to_a = Proxy(a.port)

        def cut_off() -> None:  # A runs on, out of the client's reach
            to_a.close()
            replay.release.set()

        try:
            targets = [f"{host}:{to_a.port}", f"{host}:{b.port}"]
            read = _read_async if aio else _read_sync
            seen = read(targets, session, cut_off)
            logged = _resume(b.target, session, seen[0].reply_start.reply_id, "")
            assert seen == [r.event for r in logged] + [logged[-1].msg]
        finally:
            to_a.close()
            a.stop()
            b.stop()


def _read_sync(targets: list[str], session: str, cut_off: Callable[[], None]) -> list[Any]:
    """A reply read through an `AgentClient` of `targets`, cut off once its
    model call started."""
    from agentscope_proto.agents import AgentClient

    with AgentClient(targets) as client:
        stream = client.reply_stream(user("slow"), session_id=session, resume_attempts=5)
        seen = [next(stream)]
        while seen[-1].WhichOneof("event") != "model_call_start":
            seen.append(next(stream))
        cut_off()
        return seen + list(stream)


def _read_async(targets: list[str], session: str, cut_off: Callable[[], None]) -> list[Any]:
    """`_read_sync` through an `AsyncAgentClient`."""
    import asyncio

    from agentscope_proto._generated.agentscope.agent.v1.events_pb2 import AgentEvent
    from agentscope_proto.agents import AsyncAgentClient

    async def read() -> list[Any]:
        async with AsyncAgentClient(targets) as client:
            seen = []
            stream = client.reply_stream(user("slow"), session_id=session, resume_attempts=5)
            async for item in stream:
                seen.append(item)
                if isinstance(item, AgentEvent) and item.WhichOneof("event") == "model_call_start":
                    cut_off()
            return seen

    return asyncio.run(read())


def test_the_cli_attaches_to_a_reply(started: Callable[..., AgentServer]) -> None:
    """`agentscope-proto attach`: the reply after a cursor as JSON lines; an
    unknown reply in one line and exit 2 (bad input)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    server = started()
    first = _read_then_drop(server.target, _request("weather?", "a1"), 2)
    command = [str(Path(sys.executable).parent / "agentscope-proto"), "attach", "a1"]
    result = subprocess.run(
        [*command, _reply_id(first), "--after", first[-1].cursor, "--target", server.target],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    expected = _resume(server.target, "a1", _reply_id(first), first[-1].cursor)
    assert [line["cursor"] for line in lines] == [r.cursor for r in expected]
    assert lines[-1]["done"] is True
    unknown = subprocess.run(
        [*command, "nope", "--target", server.target],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert unknown.returncode == 2
    assert unknown.stderr.count("\n") == 1
    assert "no reply 'nope'" in unknown.stderr


def test_a_kept_reply_is_interrupted_from_another_replica(
    started: Callable[..., AgentServer], redis_server: RedisServer
) -> None:
    """A `user_interrupt` sent to replica B ends the reply running on A (at
    A's next lease renewal, a third of the lease's time), and B then takes
    the session's turn."""
    a = started(state=redis_server.url, lease_seconds=1)
    b = started(state=redis_server.url, lease_seconds=1)
    _assert_interrupted_through(a, b, "x1")


def test_a_kept_reply_on_a_lease_held_since_the_last_call_is_interrupted_from_another_replica(
    started: Callable[..., AgentServer], redis_server: RedisServer
) -> None:
    """A's reply goes on the lease A held idle since the session's last call
    (it renews it 20 s in, with these 60 s leases): B's `user_interrupt`
    reaches it through A's notices, not at that renewal, and B then has the
    session's turn (A gives it up as the reply ends): all within 10 s."""
    a = started(state=redis_server.url, lease_seconds=60)
    b = started(state=redis_server.url, lease_seconds=60)
    with grpc.insecure_channel(a.target) as channel:
        assert list(pb_grpc.AgentServiceStub(channel).Reply(_request("hi", "x2"), timeout=60))
    _assert_interrupted_through(a, b, "x2", timeout=10)


def _named(words: str, session: str, reply_id: str) -> pb.ReplyRequest:
    request = _request(words, session)
    request.reply_id = reply_id
    return request


def test_a_named_reply_takes_its_callers_id_and_runs_once_when_sent_again(
    started: Callable[..., AgentServer], replay: ReplayServer
) -> None:
    """`ReplyRequest.reply_id`: the reply's events and message carry it; the
    same request sent again runs nothing and gives the same responses."""
    server = started()
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        first = list(stub.Reply(_named("hi", "n1", "my-reply-1"), timeout=60))
        calls = len(replay.requests)
        again = list(stub.Reply(_named("hi", "n1", "my-reply-1"), timeout=60))
    assert _reply_id(first) == "my-reply-1"
    assert first[-1].msg.id == "my-reply-1"
    assert {r.event.reply_start.reply_id for r in first if r.event.HasField("reply_start")} == {
        "my-reply-1"
    }
    assert [_key(r) for r in again] == [_key(r) for r in first]
    assert len(replay.requests) == calls  # the model was not called again


def test_a_named_reply_sent_again_to_another_replica_while_it_runs_is_read_not_run(
    redis_server: RedisServer,
) -> None:
    """A retry on replica B of a reply running on A (its caller cut off
    before any response, say): B waits for the session's turn, then gives
    A's responses; the model is called once."""
    from replay_agent import make_agent

    config = AgentConfig(state=redis_server.url, lease_seconds=1)
    with ReplayServer({"slow": ["hold:stream_text_by3"]}) as replay:
        a = serve(lambda: make_agent(replay.base_url), config)
        b = serve(lambda: make_agent(replay.base_url), config)
        try:
            first = _read_then_drop(a.target, _named("slow", "n2", "retry-1"), 2)
            replay.release.set()
            with grpc.insecure_channel(b.target) as channel:
                again = list(
                    pb_grpc.AgentServiceStub(channel).Reply(
                        _named("slow", "n2", "retry-1"), timeout=60
                    )
                )
        finally:
            a.stop()
            b.stop()
    assert [_key(r) for r in again[:2]] == [_key(r) for r in first]
    assert again[-1].done
    assert again[-1].msg.id == "retry-1"
    assert len(replay.requests) == 1


def test_bad_reply_ids_are_refused_naming_the_field(started: Callable[..., AgentServer]) -> None:
    server = started()
    answer = pb.ReplyRequest(session_id="n3", reply_id="x")
    answer.user_interrupt.SetInParent()
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        for request in (_named("hi", "n3", "bad\nid"), _named("hi", "n3", "x" * 129), answer):
            with pytest.raises(grpc.RpcError) as info:
                list(stub.Reply(request, timeout=60))
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "reply_id" in (info.value.details() or "")
