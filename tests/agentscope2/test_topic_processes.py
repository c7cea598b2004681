"""Three participants of one topic, three processes, one Redis: two real
AgentScope 2.x agents, each served by its own `agentscope-proto serve-agent
--hub redis://... --topic T` (topic_agents.py), and a plain hub client that
speaks through one agent's server and listens through the other's.

Every message reaches the listener once, in publish order, under its
speaker's name; an agent answers only what names it, so one agent asking the
other makes exactly one answer, and nobody answers their own words.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_proto import new_msg
from agentscope_proto.hub import HubClient
from agentscope_proto.hub.store import parse_offset

from agent_processes import HERE, AgentProcess, Listener, all_handled, stop_all
from replay_server import ReplayServer, saying

ASK = "@Friday, what time is it in Tokyo?"
FORWARD = "Let me ask @Jarvis: what time is it in Tokyo?"
NOON = "It is noon in Tokyo."
THANKS = "@Jarvis, thanks!"
WELCOME = "You are welcome."
# By what the person said last and how many replies followed it in the
# agent's context: Jarvis hears Friday's question after the person's.
FRIDAY = {ASK: ["forward"]}
JARVIS = {ASK: ["noon", "noon"], THANKS: ["welcome"]}
RECORDINGS = {
    "forward": saying(FORWARD),
    "noon": saying(NOON),
    "welcome": saying(WELCOME),
}


@pytest.fixture
def agents(redis_server: Any) -> Iterator[tuple[str, str, str]]:
    """Friday and Jarvis on one topic: (topic, Friday's target, Jarvis's)."""
    topic = f"room-{uuid.uuid4().hex}"
    with (
        ReplayServer(FRIDAY, RECORDINGS) as friday_model,
        ReplayServer(JARVIS, RECORDINGS) as jarvis_model,
    ):
        env = {
            **os.environ,
            "FRIDAY_MODEL_URL": friday_model.base_url,
            "JARVIS_MODEL_URL": jarvis_model.base_url,
            "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)]),
        }
        flags = ["--port", "0", "--hub", redis_server.url, "--topic", topic]
        started: list[AgentProcess] = []
        try:
            for name in ("friday", "jarvis"):
                started.append(AgentProcess([f"topic_agents:{name}", *flags], env))
            friday, jarvis = (process.wait_listening() for process in started)
            yield topic, friday, jarvis
        finally:
            stop_all(started)


def test_two_agents_and_a_person_in_one_topic_across_processes(
    agents: tuple[str, str, str], redis_server: Any
) -> None:
    topic, friday, jarvis = agents
    listener = Listener(jarvis, topic)
    person = HubClient(friday)
    try:
        asked = person.publish(topic, new_msg("alice", ASK, "user"))
        # Friday answers alice by asking Jarvis; Jarvis answers Friday; nobody else.
        assert listener.next(3) == [("alice", ASK), ("Friday", FORWARD), ("Jarvis", NOON)]
        person.publish(topic, new_msg("alice", THANKS, "user"))
        assert listener.next(2) == [("alice", THANKS), ("Jarvis", WELCOME)]

        # Quiet: once both agents have handled a last message, nothing more
        # comes from them (each records its progress after publishing).
        last = person.publish(topic, new_msg("alice", "bye", "user"))
        assert all_handled(redis_server.url, topic, ["Friday", "Jarvis"], last)
        person.publish(topic, new_msg("alice", "end", "user"))
        assert listener.next(2) == [("alice", "bye"), ("alice", "end")]
        assert parse_offset(asked) < parse_offset(last)
    finally:
        listener.close()
        person.close()
