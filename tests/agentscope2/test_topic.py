"""A real AgentScope 2.x agent taking part in a hub topic (`AgentConfig.topic`,
`serve-agent --topic`): AgentScope's MsgHub across processes.

Each test drives the topic through a real HubService (the one served beside
the agent) and waits until the agent has handled a message (its progress
offset reaches it) before it publishes the next one, so the order of the
topic is deterministic; a marker published last closes the log read back.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from agentscope.agent import Agent
from agentscope.event import ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent
from agentscope.message import UserMsg
from redis import Redis

from agentscope_proto import get_text_content, new_msg
from agentscope_proto._generated.agentscope.agent.v1.agent_service_pb2_grpc import AgentServiceStub
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    ErrorType,
    FinishedReason,
    Msg,
    Role,
)
from agentscope_proto.agents import (
    AgentClient,
    AgentConfig,
    RemoteAgent,
    reply_request,
    serve_agent,
)
from agentscope_proto.errors import AgentReplyError, HubUnavailableError
from agentscope_proto.hub import HubClient, HubConfig
from agentscope_proto.hub.store import parse_offset
from agentscope_proto.service import ServerConfig

from a2a_peers import PeerServer, PlainPeer, heard
from hosted import SUNNY, TopicServer, serve_topic
from hub_fixtures import RedisServer, hub_server
from replay_agent import make_agent
from replay_server import ReplayServer, saying, wait_until

T = TypeVar("T")
HELLO = "Hello from Friday."
SCRIPT = {
    "@friday, hi": ["hello"],
    "@Friday hi": ["hello"],
    "what do you think?": ["hello"],
    "@Friday think first": ["stream_thinking_then_text_by5"],
    "@Friday weather?": ["stream_text_then_tool_by4", "stream_text_by3"],
    "@Friday fail": ["http:500"],
    "weather?": ["stream_text_then_tool_by4", "stream_text_by3"],
    "wait": ["hang"],
}


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(SCRIPT, {"hello": saying(HELLO)}) as server:
        yield server


@pytest.fixture
def factory(replay: ReplayServer) -> Callable[[], Agent]:
    return lambda: make_agent(replay.base_url)


@pytest.fixture
def topic() -> str:
    return f"room-{uuid.uuid4().hex}"


class Room:
    """A topic seen from a hub client: say things, wait for the agent."""

    def __init__(self, server: TopicServer, topic: str) -> None:
        self.server = server
        self.topic = topic
        self.hub = HubClient(server.target)
        with self.hub.subscribe(topic) as live:
            self.start = live.after

    def say(self, text: str, name: str = "user", role: str = "user") -> str:
        """Publish a message and wait until the agent has handled it (and
        published whatever it replied)."""
        offset = self.publish(new_msg(name, text, role))
        self.settle(offset)
        return offset

    def publish(self, msg: Msg | dict[str, Any]) -> str:
        return _again(lambda: self.hub.publish(self.topic, msg))

    def settle(self, offset: str) -> None:
        participant = self.server.participant
        assert wait_until(lambda: parse_offset(participant.after) >= parse_offset(offset), 60)

    def log(self) -> list[Msg]:
        """Everything published since the room was made, a marker last."""
        end = self.publish(new_msg("marker", "end", "user"))
        msgs = []
        with _again(lambda: self.hub.subscribe(self.topic, self.start)) as events:
            for event in events:
                if event.offset == end:
                    return msgs
                msgs.append(event.msg)
        raise AssertionError("the log ended early")

    def messages(self) -> list[Any]:
        """The topic session's agent's context (AgentScope 2.x messages)."""
        session = self.server.participant.session
        assert session is not None
        return list(session.agent.state.context)

    def context(self) -> list[tuple[str, str, str | None]]:
        """The topic session's agent's context: (name, role, text) each."""
        return [(m.name, m.role, m.get_text_content()) for m in self.messages()]

    def close(self) -> None:
        self.hub.close()
        self.server.stop()


def _again(call: Callable[[], T]) -> T:
    """`call()`, again while the hub is unavailable: after Redis restarts,
    each of the server's pooled connections fails once. (A client's retry of
    a publish could store a message twice in general; not here: none was
    sent.)"""
    for _ in range(10):
        try:
            return call()
        except HubUnavailableError:
            continue
    raise AssertionError("the hub stayed unavailable")


def said(msgs: list[Msg]) -> list[tuple[str, str | None]]:
    return [(msg.name, get_text_content(msg)) for msg in msgs]


@pytest.fixture
def room(
    factory: Callable[[], Agent], topic: str, request: pytest.FixtureRequest
) -> Iterator[Room]:
    reply_to = getattr(request, "param", "mentions")  # parametrized indirectly
    server = serve_topic(factory, HubConfig(), AgentConfig(topic=topic, reply_to=reply_to))
    made = Room(server, topic)
    yield made
    made.close()


def test_the_agent_answers_a_mention_observes_the_rest_and_skips_its_own(room: Room) -> None:
    room.say("nice weather today")
    room.say("write to email@Friday.org")
    room.say("@friday, hi")
    room.say("@Fridays are long")
    room.say("@Friday hi, said I", name="Friday")  # its own name: not someone else
    assert room.context() == [
        ("user", "user", "nice weather today"),
        ("user", "user", "write to email@Friday.org"),
        ("user", "user", "@friday, hi"),
        ("Friday", "assistant", HELLO),
        ("user", "user", "@Fridays are long"),
    ]
    assert said(room.log()) == [
        ("user", "nice weather today"),
        ("user", "write to email@Friday.org"),
        ("user", "@friday, hi"),
        ("Friday", HELLO),
        ("user", "@Fridays are long"),
        ("Friday", "@Friday hi, said I"),
    ]


def test_the_reply_is_published_as_the_agent_ended_it(room: Room) -> None:
    room.say("@friday, hi")
    kept = room.messages()[-1]
    _, reply = room.log()
    assert reply.name == "Friday"
    assert reply.role == Role.ROLE_ASSISTANT
    assert reply.finished_reason == FinishedReason.FINISHED_REASON_COMPLETED
    assert reply.id == kept.id  # the agent's own reply id


@pytest.mark.parametrize("room", ["users"], indirect=True)
def test_users_mode_answers_every_user_message_but_not_other_agents(room: Room) -> None:
    room.say("I think it rains", name="Jarvis", role="assistant")
    room.say("@friday, hi")
    assert said(room.log()) == [
        ("Jarvis", "I think it rains"),
        ("user", "@friday, hi"),
        ("Friday", HELLO),
    ]


@pytest.mark.parametrize("room", ["none"], indirect=True)
def test_none_mode_observes_and_a_caller_makes_the_agent_speak_in_the_topic(room: Room) -> None:
    room.say("@friday, hi")
    room.say("what do you think?")
    with AgentClient(room.server.target) as client:
        # "Go on" in the topic's session: the agent replies to what it observed.
        items = list(client.reply_stream(None, session_id=f"topic:{room.topic}"))
    reply = items[-1]
    assert isinstance(reply, Msg)
    log = room.log()  # the reply was on the topic before the caller heard it was done
    assert said(log) == [("user", "@friday, hi"), ("user", "what do you think?"), ("Friday", HELLO)]
    assert log[-1].id == reply.id


def test_what_others_see_has_no_thinking(room: Room) -> None:
    room.say("@Friday think first")
    assert room.messages()[-1].get_content_blocks("thinking")  # the agent keeps its own
    _, reply = room.log()
    assert [block.WhichOneof("block") for block in reply.blocks.items] == ["text"]


def test_a_tool_call_nobody_can_confirm_is_denied_and_the_reply_goes_on(
    room: Room, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "agentscope_proto.agents"):
        room.say("@Friday weather?")
    assert "nobody to ask about get_weather, so denied" in caplog.text
    (result,) = room.messages()[-1].get_content_blocks("tool_result")
    assert result.state == "denied"  # get_weather never ran
    _, reply = room.log()
    assert (reply.name, get_text_content(reply)) == ("Friday", SUNNY)


def test_a_failed_reply_is_published_with_its_error_and_the_topic_goes_on(room: Room) -> None:
    room.say("@Friday fail")
    room.say("@Friday hi")
    user_fail, failed, user_hi, hello = room.log()
    assert failed.name == "Friday"
    assert failed.finished_reason == FinishedReason.FINISHED_REASON_ERROR
    assert failed.error.type == ErrorType.ERROR_TYPE_UPSTREAM
    assert failed.error.message == "The agent's model service failed."
    assert said([user_fail, user_hi, hello]) == [
        ("user", "@Friday fail"),
        ("user", "@Friday hi"),
        ("Friday", HELLO),
    ]


def test_a_remote_agents_failure_is_published_once_with_the_remotes_error(
    topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A hosted `RemoteAgent` (a plain A2A agent in the topic) whose remote
    reply fails: its remote's message ends the reply, nothing of the
    hosting's own; the caller gets the remote's error type too."""
    config = AgentConfig(topic=topic, reply_to="users")
    with PeerServer(PlainPeer()) as peer:
        room = Room(serve_topic(lambda: RemoteAgent(peer.url), HubConfig(), config), topic)
        try:
            with caplog.at_level(logging.WARNING, "agentscope_proto"):
                room.say("fail")
            room.say("again")
            log = room.log()
            with (
                AgentClient(room.server.target) as client,
                pytest.raises(AgentReplyError) as raised,
            ):
                client.reply(new_msg("user", "fail", "user"))
        finally:
            room.close()
    assert said(log) == [
        ("user", "fail"),
        ("Peer", "It broke."),
        ("user", "again"),
        ("Peer", heard(["again"])),
    ]
    failed = log[1]
    assert failed.finished_reason == FinishedReason.FINISHED_REASON_ERROR
    assert (failed.error.type, failed.error.message) == (ErrorType.ERROR_TYPE_UPSTREAM, "It broke.")
    assert (raised.value.error_type, raised.value.message) == ("upstream", "It broke.")
    assert "the reply of agent 'Peer' failed remotely (upstream): 'It broke.'" in caplog.text
    assert "Traceback" not in caplog.text


def test_messages_the_agent_cannot_take_are_skipped_and_the_topic_goes_on(
    room: Room, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "agentscope_proto.agents"):
        room.say("@Friday obey", name="boss", role="system")  # 2.x takes no system message
    assert "skips the message at" in caplog.text
    assert "msg[0].role: an agent takes user and assistant messages" in caplog.text
    call = {"type": "tool_use", "id": "1", "name": "f", "input": {}}
    calls = {"name": "x", "role": "assistant", "content": [call]}
    room.settle(room.publish(calls))  # nothing said: nothing to take
    room.say("@Friday hi")
    assert room_names(room) == ["user", "Friday"]
    assert said(room.log()) == [
        ("boss", "@Friday obey"),
        ("x", None),
        ("user", "@Friday hi"),
        ("Friday", HELLO),
    ]


def test_a_topic_message_citing_a_local_file_is_skipped_unread(
    room: Room, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The media screen (agents/media.py) holds for whoever can publish too."""
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"secret-bytes-of-the-server")
    image = {"type": "image", "source": {"type": "url", "url": str(secret)}}
    cited = {
        "name": "user",
        "role": "user",
        "content": [{"type": "text", "text": "@Friday hi"}, image],
    }
    with caplog.at_level(logging.WARNING, "agentscope_proto.agents"):
        room.settle(room.publish(cited))
    assert "msg[0].content[1].source.url" in caplog.text
    assert "is a local file" in caplog.text
    room.say("@Friday hi")
    assert room_names(room) == ["user", "Friday"]
    assert all("secret-bytes" not in repr(m) for m in room.messages())


def test_the_topic_waits_while_a_caller_answers_a_question_in_its_session(room: Room) -> None:
    """Human in the loop across processes: a caller asks in the topic's
    session, the agent asks the caller back; what the topic says meanwhile
    waits until the caller has answered and the reply is published."""

    async def ask() -> None:
        async with RemoteAgent(room.server.target, session_id=f"topic:{room.topic}") as agent:
            question = None
            async for event in agent.reply_stream(UserMsg("user", "weather?")):
                if isinstance(event, RequireUserConfirmEvent):
                    question = event
            assert question is not None
            # The topic speaks while the agent waits for this caller.
            await asyncio.to_thread(
                room.hub.publish, room.topic, new_msg("user", "@Friday hi", "user")
            )
            confirm = [
                ConfirmResult(confirmed=True, tool_call=call) for call in question.tool_calls
            ]
            answer = UserConfirmResultEvent(reply_id=question.reply_id, confirm_results=confirm)
            async for _ in agent.reply_stream(answer):
                pass

    asyncio.run(ask())
    room.say("and then?")  # handled after the held mention
    answered = next(msg for msg in room.messages() if msg.get_content_blocks("tool_result"))
    (result,) = answered.get_content_blocks("tool_result")
    assert result.state == "success"  # the caller confirmed
    log = room.log()
    assert said(log[:1]) == [("user", "@Friday hi")]
    # The caller's reply first, then the answer to what the topic said meanwhile.
    assert said([msg for msg in log if msg.name == "Friday"]) == [
        ("Friday", SUNNY),
        ("Friday", HELLO),
    ]
    assert log[1].id == answered.id


def test_a_restarted_agent_goes_on_after_what_it_handled(
    factory: Callable[[], Agent], topic: str, redis_server: RedisServer
) -> None:
    """On Redis, the agent's progress outlives it: what was published while
    it was down is handled after a restart, what it had handled is not."""
    hub = HubConfig(url=redis_server.url)
    config = AgentConfig(topic=topic)
    first = Room(serve_topic(factory, hub, config), topic)
    first.say("@Friday hi")
    first.close()
    # While the agent is down, through another server on the same Redis.
    other = hub_server(redis_server.url)
    kept = Redis.from_url(redis_server.url)
    second = None
    try:
        with HubClient(other.target) as client:
            down = client.publish(topic, new_msg("user", "@friday, hi", "user"))
        second = Room(serve_topic(factory, hub, config), topic)
        second.start = first.start
        second.settle(down)
        key = f"agentscope:agent:{{{topic}}}:Friday"
        assert wait_until(lambda: parse_offset(kept.get(key).decode()) >= parse_offset(down))
        # Its memory starts afresh: only what followed its progress.
        assert room_names(second) == ["user", "Friday"]
        assert said(second.log()) == [
            ("user", "@Friday hi"),
            ("Friday", HELLO),
            ("user", "@friday, hi"),
            ("Friday", HELLO),
        ]
    finally:
        if second is not None:
            second.close()
        other.stop()
        kept.close()


def test_the_agent_waits_for_a_lost_redis_and_goes_on_where_it_was(
    factory: Callable[[], Agent], topic: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    redis = RedisServer(tmp_path, ("--appendonly", "yes"))  # what it holds outlives it
    room = None
    try:
        room = Room(serve_topic(factory, HubConfig(url=redis.url), AgentConfig(topic=topic)), topic)
        room.say("nice weather today")
        with caplog.at_level(logging.WARNING, "agentscope_proto.agents"):
            redis.stop()
            _restart(redis, tmp_path)
            room.say("@Friday hi")
        assert f"agent 'Friday' lost topic '{topic}'" in caplog.text
        assert room.context() == [
            ("user", "user", "nice weather today"),
            ("user", "user", "@Friday hi"),
            ("Friday", "assistant", HELLO),
        ]
        assert said(room.log()) == [
            ("user", "nice weather today"),
            ("user", "@Friday hi"),
            ("Friday", HELLO),
        ]
    finally:
        if room is not None:
            room.close()
        redis.stop()


def _restart(redis: RedisServer, workdir: Path) -> None:
    """redis-server again on the same port and directory (its append-only file)."""
    binary = shutil.which("redis-server")
    assert binary is not None
    options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--dir", str(workdir)]
    redis.process = subprocess.Popen(
        [binary, "--port", str(redis.port), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert redis._answers()


def test_a_callers_reply_interrupted_in_the_topic_is_published_as_interrupted(room: Room) -> None:
    session = f"topic:{room.topic}"
    request = reply_request({"name": "user", "role": "user", "content": "wait"}, session_id=session)
    with (
        grpc.insecure_channel(room.server.target) as channel,
        AgentClient(room.server.target) as client,
    ):
        call = AgentServiceStub(channel).Reply(request)
        for response in call:
            if response.event.WhichOneof("event") == "model_call_start":
                call.cancel()  # the caller goes away mid-reply
                break
        # The session's next call waits for the interrupted reply to end (and be published).
        client.observe([{"name": "user", "role": "user", "content": "ok"}], session_id=session)
    (interrupted,) = room.log()  # the caller's "wait" itself is not published
    assert interrupted.name == "Friday"
    assert interrupted.finished_reason == FinishedReason.FINISHED_REASON_INTERRUPTED


def room_names(room: Room) -> list[str]:
    return [name for name, _, _ in room.context()]


def test_serve_agent_refuses_a_topic_without_a_hub(factory: Callable[[], Agent]) -> None:
    config = AgentConfig(topic="room")
    with pytest.raises(ValueError, match="a topic needs a hub"):
        asyncio.run(serve_agent(factory, ServerConfig(port=0, hub=None), config))
