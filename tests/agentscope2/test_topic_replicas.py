"""Replicas of one agent on one hub topic are one participant: `serve-agent
--topic T --hub redis://... --state redis://...` run three (or two) times on
one real redis-server, the agent a real AgentScope 2.x agent whose model is
the replay (topic_agents.py).

One replica follows the topic at a time (its follower lease): a message
addressed to the agent is answered once, not once per replica, and the
topic's session lives in the store, so a caller's reply in `topic:T` on
another replica, or the replica taking over from a follower that was killed
or stopped, remembers the conversation (the model's request holds it).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc

import agentscope_proto
from agentscope_proto import from_dict, get_text_content, new_msg
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto.hub import HubClient

from agent_processes import HERE, AgentProcess, Listener, all_handled, redis_client, stop_all
from hosted import user
from hub_fixtures import RedisCluster, RedisServer
from replay_server import ReplayServer, saying, wait_until

# The package these tests import (a checkout's), for a replica's process to serve.
_PACKAGE_ROOT = str(Path(agentscope_proto.__file__).resolve().parents[1])
INTRO = "@Friday, my name is Alice."
NICE = "Nice to meet you, Alice."
ASK = "@Friday, what is my name?"
NAME = "Your name is Alice."
TOLD = "What did I tell you?"
TOLD_ANSWER = "You told me your name."
HELD = "@Friday, hold on: my name is Alice."
SCRIPT = {INTRO: ["nice"], ASK: ["name"], TOLD: ["told"], HELD: ["hold:nice"]}
RECORDINGS = {"nice": saying(NICE), "name": saying(NAME), "told": saying(TOLD_ANSWER)}


class Replicas:
    """`count` replicas of topic_agents:friday on `topic`, hub and state on
    one Redis, with a lease of `lease` seconds."""

    def __init__(
        self, redis: RedisServer | RedisCluster, replay: ReplayServer, count: int, lease: str
    ) -> None:
        self.redis_url = redis.url
        self.topic = f"room-{uuid.uuid4().hex}"
        env = {
            **os.environ,
            "FRIDAY_MODEL_URL": replay.base_url,
            "PYTHONPATH": os.pathsep.join([_PACKAGE_ROOT, str(HERE.parent), str(HERE)]),
        }
        flags = ["--port", "0", "--hub", redis.url, "--topic", self.topic]
        flags += ["--state", redis.url, "--lease-seconds", lease]
        self.processes: list[AgentProcess] = []
        try:
            for _ in range(count):
                self.processes.append(AgentProcess(["topic_agents:friday", *flags], env))
            for process in self.processes:
                process.wait_listening()
        except BaseException:
            self.stop()  # none left behind
            raise

    def follower(self, among: list[AgentProcess] | None = None) -> AgentProcess:
        """The replica that follows the topic (of `among`): the one that
        says so in its log."""
        among = among or self.processes
        found: list[AgentProcess] = []

        def said() -> bool:
            found[:] = [p for p in among if any("follows topic" in line for line in p.log)]
            return bool(found)

        assert wait_until(said, 30), "no replica follows the topic"
        assert len(found) == 1, "two replicas follow the topic"
        return found[0]

    def others(self, process: AgentProcess) -> list[AgentProcess]:
        return [other for other in self.processes if other is not process]

    def lease_holder(self) -> bytes | None:
        with redis_client(self.redis_url) as redis:
            value: bytes | None = redis.get(f"agentscope:follower:{{{self.topic}}}:Friday")
            return value

    def handled(self, offset: str) -> None:
        """Wait until the follower recorded its progress past `offset` (its
        turn's state saved before)."""
        assert all_handled(self.redis_url, self.topic, ["Friday"], offset)

    def stop(self) -> None:
        """SIGTERM those still running (a test killed or stopped one)."""
        stop_all([p for p in self.processes if p.process.poll() is None])


@contextlib.contextmanager
def _replicas(
    redis: RedisServer | RedisCluster, count: int, lease: str
) -> Iterator[tuple[Replicas, ReplayServer]]:
    with ReplayServer(SCRIPT, RECORDINGS) as replay:
        started = Replicas(redis, replay, count, lease)
        try:
            yield started, replay
        finally:
            started.stop()


def _reply(target: str, words: str, session: str) -> list[pb.ReplyResponse]:
    request = pb.ReplyRequest(msgs=[from_dict(user(words), "agentscope2")], session_id=session)
    with grpc.insecure_channel(target) as channel:
        return list(pb_grpc.AgentServiceStub(channel).Reply(request, timeout=60))


def _remembers_the_intro(replay: ReplayServer) -> bool:
    """Whether the model was last given the first turn (the agent's memory of it)."""
    history = str(replay.requests[-1]["messages"])
    return INTRO in history and NICE in history


def test_replicas_answer_once_and_a_caller_in_the_topic_session_on_any_replica(
    redis_server: RedisServer,
) -> None:
    # A lease no pause of a busy test machine outlasts: one follower throughout.
    with _replicas(redis_server, 3, "10") as (replicas, replay):
        _answer_once_across_replicas(replicas, replay)


def _answer_once_across_replicas(replicas: Replicas, replay: ReplayServer) -> None:
    follower = replicas.follower()
    other = replicas.others(follower)[0]
    listener = Listener(other.target, replicas.topic)
    person = HubClient(other.target)
    try:
        person.publish(replicas.topic, new_msg("alice", INTRO, "user"))
        assert listener.next(2) == [("alice", INTRO), ("Friday", NICE)]
        # A caller in the topic's session on a replica that does not follow
        # the topic: the session's state comes from the store, and the
        # reply is published once, by that replica.
        responses = _reply(other.target, TOLD, f"topic:{replicas.topic}")
        assert get_text_content(responses[-1].msg) == TOLD_ANSWER
        assert _remembers_the_intro(replay)
        assert listener.next(1) == [("Friday", TOLD_ANSWER)]

        # Quiet: once the follower handled a last message nothing more comes
        # from any replica, and the model answered twice in all.
        last = person.publish(replicas.topic, new_msg("alice", "bye", "user"))
        replicas.handled(last)
        person.publish(replicas.topic, new_msg("alice", "end", "user"))
        assert listener.next(2) == [("alice", "bye"), ("alice", "end")]
        assert len(replay.requests) == 2
        assert replicas.follower() is follower
    finally:
        listener.close()
        person.close()


def test_a_killed_follower_is_replaced_within_its_lease_and_the_agent_remembers(
    redis_server: RedisServer,
) -> None:
    with _replicas(redis_server, 3, "1") as (replicas, replay):
        _replaced_after_a_kill(replicas, replay)


def test_a_killed_follower_is_replaced_on_a_redis_cluster(tmp_path: Path) -> None:
    """The same with the hub and the state on a 3-master Redis Cluster: the
    follower lease and the progress on their topic's slot, the session's
    keys on theirs."""
    cluster = RedisCluster(tmp_path)
    try:
        with _replicas(cluster, 2, "1") as (replicas, replay):
            _replaced_after_a_kill(replicas, replay)
    finally:
        cluster.stop()


def _replaced_after_a_kill(replicas: Replicas, replay: ReplayServer) -> None:
    follower = replicas.follower()
    others = replicas.others(follower)
    listener = Listener(others[0].target, replicas.topic)
    person = HubClient(others[0].target)
    try:
        intro = person.publish(replicas.topic, new_msg("alice", INTRO, "user"))
        assert listener.next(2) == [("alice", INTRO), ("Friday", NICE)]
        replicas.handled(intro)  # else the kill could land before its progress is kept
        follower.process.kill()
        follower.process.wait(30)

        person.publish(replicas.topic, new_msg("alice", ASK, "user"))
        assert listener.next(2) == [("alice", ASK), ("Friday", NAME)]
        assert _remembers_the_intro(replay)
        assert len(replay.requests) == 2
    finally:
        listener.close()
        person.close()


def test_a_stopped_follower_hands_the_topic_over_at_once(redis_server: RedisServer) -> None:
    """SIGTERM: the follower gives its lease up as it stops (a 30 s lease
    would otherwise hold the topic that long), and the other replica goes on
    with the agent's memory."""
    with _replicas(redis_server, 2, "30") as (replicas, replay):
        follower = replicas.follower()
        (other,) = replicas.others(follower)
        listener = Listener(other.target, replicas.topic)
        person = HubClient(other.target)
        try:
            intro = person.publish(replicas.topic, new_msg("alice", INTRO, "user"))
            assert listener.next(2) == [("alice", INTRO), ("Friday", NICE)]
            replicas.handled(intro)
            held = replicas.lease_holder()
            assert held is not None
            follower.stop()
            assert replicas.lease_holder() != held

            person.publish(replicas.topic, new_msg("alice", ASK, "user"))
            assert listener.next(2) == [("alice", ASK), ("Friday", NAME)]
            assert _remembers_the_intro(replay)
            assert replicas.follower([other]) is other
        finally:
            listener.close()
            person.close()


def test_a_follower_stopped_mid_turn_leaves_the_turn_unsaved_to_the_next(
    redis_server: RedisServer,
) -> None:
    """SIGTERM while the follower's reply waits on its model: the reply is
    interrupted and not saved (nor published, nor its progress kept), so
    the replica taking over runs the turn again from the stored state: its
    model sees the message once and no interrupted attempt."""
    with _replicas(redis_server, 2, "30") as (replicas, replay):
        follower = replicas.follower()
        (other,) = replicas.others(follower)
        listener = Listener(other.target, replicas.topic)
        person = HubClient(other.target)
        try:
            person.publish(replicas.topic, new_msg("alice", HELD, "user"))
            assert wait_until(lambda: len(replay.requests) == 1)  # held in its model call
            follower.stop()
            replay.release.set()
            assert listener.next(2) == [("alice", HELD), ("Friday", NICE)]
            # What the model was given: the message once, no reply to it (the
            # system prompt and 2.x's reminder, a user message without a name, aside).
            given = [m for m in replay.requests[-1]["messages"] if m["role"] != "system"]
            given = [m for m in given if m.get("name")]
            assert [(m["role"], m["name"]) for m in given] == [("user", "alice")], given
        finally:
            listener.close()
            person.close()
