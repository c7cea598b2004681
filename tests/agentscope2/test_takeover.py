"""A reply whose replica dies mid-stream, taken over by another replica when
its caller resumes there (`ReplyLog.taken`, `AgentScope2.take_over`): real
`serve-agent` processes on one real redis-server, one SIGKILLed, a real
AgentScope 2.x agent whose tool leaves a trace outside the processes
(counting_agents.py). The reply completes, the caller sees each event once
and every block it saw start ends, and a tool the log has as run is never
run again."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agentscope_proto import from_dict, get_text_content
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto.events import event_reply_id

from agent_processes import HERE, AgentProcess, stop_all
from hosted import SUNNY, user
from hub_fixtures import RedisServer
from replay_server import ReplayServer, wait_until

SCRIPT = {
    # A tool call, then an answer held after its first chunk (the replica
    # is killed while it streams).
    "weather please": ["stream_text_then_tool_by4", "hold:stream_text_by3"],
    "hi": ["hold:stream_text_by3"],
}
_ENDS = {
    "model_call_start": "model_call_end",
    "text_block_start": "text_block_end",
    "tool_call_start": "tool_call_end",
    "tool_result_start": "tool_result_end",
}


class Replicas:
    """Two `serve-agent` replicas of counting_agents:friday on one Redis."""

    def __init__(
        self, redis: Any, replay: ReplayServer, tmp: Path, factory: str = "friday"
    ) -> None:
        self.runs, self.hold = tmp / "runs", tmp / "hold"
        env = {
            **os.environ,
            "FRIDAY_MODEL_URL": replay.base_url,
            "TOOL_RUNS": str(self.runs),
            "TOOL_HOLD": str(self.hold),
            "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)]),
        }
        flags = ["--port", "0", "--state", redis.url, "--lease-seconds", "1"]
        self.dying = AgentProcess([f"counting_agents:{factory}", *flags], env)
        self.living = AgentProcess([f"counting_agents:{factory}", *flags], env)

    def tool_runs(self) -> int:
        return len(self.runs.read_text(encoding="utf-8").splitlines()) if self.runs.exists() else 0

    def kill_while(
        self, words: str | pb.ReplyRequest, session: str, until: Any
    ) -> list[pb.ReplyResponse]:
        """A Reply (of `words`, or a request) on the dying replica, read
        until `until(kinds so far)`; then the replica is SIGKILLed, its call
        still open (a call cancelled first would interrupt the reply there,
        which may end it before the kill lands)."""
        seen: list[pb.ReplyResponse] = []
        with grpc.insecure_channel(self.dying.wait_listening()) as channel:
            request = (
                pb.ReplyRequest(msgs=[from_dict(user(words), "agentscope2")], session_id=session)
                if isinstance(words, str)
                else words
            )
            call = pb_grpc.AgentServiceStub(channel).Reply(request, timeout=60)
            for response in call:
                seen.append(response)
                if until([_kind(r) for r in seen]):
                    break
            self.dying.process.kill()
            self.dying.process.wait(30)
            call.cancel()
        return seen

    def ask(self, words: str, session: str) -> list[pb.ReplyResponse]:
        """A whole Reply on the dying replica (one that asks)."""
        request = pb.ReplyRequest(msgs=[from_dict(user(words), "agentscope2")], session_id=session)
        with grpc.insecure_channel(self.dying.wait_listening()) as channel:
            return list(pb_grpc.AgentServiceStub(channel).Reply(request, timeout=60))

    def resume(self, session: str, seen: list[pb.ReplyResponse]) -> list[pb.ReplyResponse]:
        reply_id = next(event_reply_id(r.event) for r in seen if event_reply_id(r.event))
        request = pb.ResumeRequest(session_id=session, reply_id=reply_id, after=seen[-1].cursor)
        with grpc.insecure_channel(self.living.wait_listening()) as channel:
            return list(pb_grpc.AgentServiceStub(channel).Resume(request, timeout=60))

    def reply(self, words: str, session: str) -> list[pb.ReplyResponse]:
        request = pb.ReplyRequest(msgs=[from_dict(user(words), "agentscope2")], session_id=session)
        with grpc.insecure_channel(self.living.wait_listening()) as channel:
            return list(pb_grpc.AgentServiceStub(channel).Reply(request, timeout=60))


@pytest.fixture
def replicas(redis_server: RedisServer, tmp_path: Path) -> Iterator[tuple[Replicas, ReplayServer]]:
    with ReplayServer(SCRIPT) as replay:
        started = Replicas(redis_server, replay, tmp_path)
        try:
            yield started, replay
        finally:
            replay.release.set()
            if started.dying.process.poll() is None:
                started.dying.process.kill()  # a test that failed before killing it
            stop_all([started.living])


def _tool_started(servers: Replicas) -> Any:
    """Until the tool's start is out and the tool runs (it holds)."""
    return lambda kinds: (
        "tool_result_start" in kinds and wait_until(lambda: servers.tool_runs() == 1)
    )


def _model_called(replay: ReplayServer) -> Any:
    """Until the model call started and reached the model (which holds it)."""
    return lambda kinds: "model_call_start" in kinds and wait_until(lambda: replay.requests)


def _kind(response: pb.ReplyResponse) -> str:
    return str(response.event.WhichOneof("event") or "")


def _assert_whole(responses: list[pb.ReplyResponse]) -> None:
    """Each event once, one start, the last `done`, and every block, model
    call and tool result that started ended (in the events' own terms)."""
    ids = [r.event.id for r in responses if r.HasField("event")]
    assert len(ids) == len(set(ids)), "an event came twice"
    kinds = [_kind(r) for r in responses]
    assert kinds.count("reply_start") == 1
    assert responses[-1].done
    assert all(not r.done for r in responses[:-1])
    for start, end in _ENDS.items():
        assert kinds.count(start) == kinds.count(end), (start, kinds)


def test_a_reply_taken_over_completes_and_its_tool_runs_once(
    replicas: tuple[Replicas, ReplayServer],
) -> None:
    """Killed while the model answers after the tool ran: the other replica
    goes on from the checkpoint, with the tool's logged result."""
    _taken_over_after_its_tool(*replicas)


def test_a_reply_is_taken_over_on_a_redis_cluster(tmp_path: Path) -> None:
    """The same on a 3-master Redis Cluster: a session's keys, its replies'
    logs and their checkpoints on the node of its slot."""
    from hub_fixtures import RedisCluster

    cluster = RedisCluster(tmp_path)
    try:
        with ReplayServer(SCRIPT) as replay:
            servers = Replicas(cluster, replay, tmp_path)
            try:
                _taken_over_after_its_tool(servers, replay)
            finally:
                replay.release.set()
                if servers.dying.process.poll() is None:
                    servers.dying.process.kill()
                stop_all([servers.living])
    finally:
        cluster.stop()


def _taken_over_after_its_tool(servers: Replicas, replay: ReplayServer) -> None:
    seen = servers.kill_while(
        "weather please", "t1", lambda kinds: kinds.count("model_call_start") == 2
    )
    assert "tool_result_end" in [_kind(r) for r in seen]
    replay.release.set()
    rest = servers.resume("t1", seen)
    whole = seen + rest
    _assert_whole(whole)
    assert servers.tool_runs() == 1
    assert get_text_content(whole[-1].msg) == SUNNY
    # The session remembers the whole reply (its tool result and answer).
    servers.reply("hi", "t1")
    history = str(replay.requests[-1]["messages"])
    assert "Sunny in Paris, 21" in history
    assert SUNNY in history


def test_a_tool_running_when_its_replica_died_is_not_run_again(
    replicas: tuple[Replicas, ReplayServer],
) -> None:
    """Killed while the tool runs: the other replica gives it an interrupted
    result (it may have run) and goes on; the model hears so."""
    servers, replay = replicas
    servers.hold.touch()
    seen = servers.kill_while("weather please", "t2", _tool_started(servers))
    replay.release.set()
    rest = servers.resume("t2", seen)
    whole = seen + rest
    _assert_whole(whole)
    assert servers.tool_runs() == 1
    ended = [r.event.tool_result_end for r in whole if _kind(r) == "tool_result_end"]
    assert [end.state for end in ended] == [3]  # TOOL_RESULT_STATE_INTERRUPTED
    assert "may or may not have run" in str(replay.requests[-1]["messages"])
    assert whole[-1].done


def test_a_reply_with_nothing_run_but_its_model_runs_again(
    replicas: tuple[Replicas, ReplayServer],
) -> None:
    """Killed in its first model call: the other replica runs the reply
    again from its request, under the same reply id."""
    servers, replay = replicas
    seen = servers.kill_while("hi", "t3", _model_called(replay))
    replay.release.set()
    rest = servers.resume("t3", seen)
    whole = seen + rest
    _assert_whole(whole)
    reply_id = seen[0].event.reply_start.reply_id
    assert whole[-1].msg.id == reply_id
    assert get_text_content(whole[-1].msg) == SUNNY


def test_a_reply_the_session_went_on_without_ends_with_an_error(
    replicas: tuple[Replicas, ReplayServer],
) -> None:
    """Another call saved the session after the replica died: the left reply
    is not run over it; its resume ends with an error saying why."""
    servers, replay = replicas
    seen = servers.kill_while("hi", "t4", _model_called(replay))
    replay.release.set()
    assert servers.reply("hi", "t4")[-1].done
    with pytest.raises(grpc.RpcError) as info:
        servers.resume("t4", seen)
    assert "went on from its last saved state without it" in (info.value.details() or "")


def test_an_answers_reply_taken_over_gives_its_running_tool_an_interrupted_result(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """A confirmation answered on the dying replica: the confirmed tool is
    running when it is killed. The other replica takes the answer's reply
    over from the session's stored state (the reply that asked): the tool
    gets an interrupted result, it is not run again, and the reply ends."""
    with ReplayServer(SCRIPT) as replay:
        servers = Replicas(redis_server, replay, tmp_path, factory="friday_asks")
        try:
            asked = servers.ask("weather please", "t5")
            question = asked[-1].event.require_user_confirm
            assert question.tool_calls
            answer = pb.ReplyRequest(session_id="t5")
            answer.user_confirm_result.reply_id = question.reply_id
            result = answer.user_confirm_result.confirm_results.add(confirmed=True)
            result.tool_call.CopyFrom(question.tool_calls[0])
            servers.hold.touch()
            seen = servers.kill_while(answer, "t5", _tool_started(servers))
            replay.release.set()
            rest = servers.resume("t5", seen)
        finally:
            replay.release.set()
            if servers.dying.process.poll() is None:
                servers.dying.process.kill()
            stop_all([servers.living])
    whole = seen + rest
    ids = [r.event.id for r in whole if r.HasField("event")]
    assert len(ids) == len(set(ids))
    ended = [r.event.tool_result_end for r in whole if _kind(r) == "tool_result_end"]
    assert [end.state for end in ended] == [3]  # TOOL_RESULT_STATE_INTERRUPTED
    assert servers.tool_runs() == 1
    assert whole[-1].done
    assert get_text_content(whole[-1].msg) == SUNNY
