"""Three agents in one conversation through a hub topic, each a participant
the product makes, in a process of its own (room_agents.py): two AgentScope
2.x agents served by `agentscope-proto serve-agent ... --hub redis://...
--topic T --a2a-port 0`, and a plain a2a-sdk agent (tests/a2a_peers.py)
joined to the topic by a third `serve-agent` whose agent is a `RemoteAgent`
of its A2A URL. Each answers what @mentions it (the default `--reply-to`).

Every message must arrive with its speaker: on the topic, in the AgentScope
agents' model requests (the extension keeps names) and in the plain agent's
text (`[name]: ` before each speaker's words, as it knows no extension).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_proto import new_msg
from agentscope_proto.hub import HubClient

from a2a_peers import PeerServer, PlainPeer, heard
from agent_processes import AgentProcess, Listener, all_handled, stop_all
from hosted import SUNNY
from replay_server import ReplayServer, saying

HI = "@Friday, hi"
ASK_PEER = "Let me ask @Peer."
TO_SATURDAY = "Thanks. @Saturday, anything to add?"
TO_PEER = "@Peer, it will be sunny."
# The plain agent answers with what it heard: Alice and Friday (which names
# Friday, in Alice's words), then only what is new to it, Friday and
# Saturday (which names Saturday), the rest being in its A2A context.
PEER_HEARD = heard([f"[Alice]: {HI}", f"[Friday]: {ASK_PEER}"])
PEER_HEARD_AGAIN = heard([f"[Friday]: {TO_SATURDAY}", f"[Saturday]: {TO_PEER}"])
RECORDINGS = {
    "ask_peer": saying(ASK_PEER),
    "to_saturday": saying(TO_SATURDAY),
    "to_peer": saying(TO_PEER),
}
# By Alice's words and how many agents' messages followed them in the
# agent's context (the n-th entry for n): Friday answers her (0), then the
# peer (2); Saturday answers Friday (3), then the peer (5).
FRIDAY = {HI: ["ask_peer", "ask_peer", "to_saturday"]}
SATURDAY = {HI: ["to_peer"] * 4 + ["stream_text_by3"] * 2}


@pytest.fixture
def room(redis_server: Any) -> Iterator[tuple[str, str, ReplayServer, ReplayServer, PeerServer]]:
    """The three participants on a fresh topic: (topic, a server's target,
    Friday's model, Saturday's, the plain agent)."""
    topic = f"room-{uuid.uuid4().hex}"
    with (
        ReplayServer(FRIDAY, RECORDINGS) as friday_model,
        ReplayServer(SATURDAY, RECORDINGS) as saturday_model,
        PeerServer(PlainPeer()) as peer,
    ):
        flags = ["--port", "0", "--hub", redis_server.url, "--topic", topic]
        models = {"make_friday": friday_model, "make_saturday": saturday_model}
        started: list[AgentProcess] = []
        try:
            for factory, model in models.items():
                started.append(
                    AgentProcess(
                        [f"room_agents:{factory}", *flags, "--a2a-port", "0"],
                        {**os.environ, "OPENAI_BASE_URL": model.base_url},
                    )
                )
            started.append(
                AgentProcess(
                    ["room_agents:make_peer", *flags], {**os.environ, "PEER_A2A_URL": peer.url}
                )
            )
            targets = [process.wait_listening() for process in started]
            yield topic, targets[0], friday_model, saturday_model, peer
        finally:
            stop_all(started)


def _said(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(role, name, text) of each named message of a model request (the
    system prompt aside)."""
    out = []
    for message in body["messages"]:
        if "name" in message and message["role"] != "system":
            content = message["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            out.append((message["role"], message["name"], text))
    return out


def test_every_message_arrives_with_its_speaker(
    room: tuple[str, str, ReplayServer, ReplayServer, PeerServer], redis_server: Any
) -> None:
    topic, target, friday_model, saturday_model, peer = room
    listener = Listener(target, topic)
    alice = HubClient(target)
    try:
        alice.publish(topic, new_msg("Alice", HI, "user"))
        assert listener.next(7) == [
            ("Alice", HI),
            ("Friday", ASK_PEER),
            ("Peer", PEER_HEARD),
            ("Friday", TO_SATURDAY),
            ("Saturday", TO_PEER),
            ("Peer", PEER_HEARD_AGAIN),
            ("Saturday", SUNNY),
        ]
        # Quiet: nobody is named any more, so nothing more comes.
        last = alice.publish(topic, new_msg("Alice", "bye", "user"))
        assert all_handled(redis_server.url, topic, ["Friday", "Saturday", "Peer"], last)
        alice.publish(topic, new_msg("Alice", "end", "user"))
        assert listener.next(2) == [("Alice", "bye"), ("Alice", "end")]
    finally:
        listener.close()
        alice.close()

    # The AgentScope agents' models saw every message with its speaker.
    said = [
        ("user", "Alice", HI),
        ("assistant", "Friday", ASK_PEER),
        ("assistant", "Peer", PEER_HEARD),
        ("assistant", "Friday", TO_SATURDAY),
        ("assistant", "Saturday", TO_PEER),
        ("assistant", "Peer", PEER_HEARD_AGAIN),
    ]
    assert [_said(body) for body in friday_model.requests] == [said[:1], said[:3]]
    assert [_said(body) for body in saturday_model.requests] == [said[:4], said[:6]]
    # The plain agent was sent who said what in its text, each time what was new.
    assert [[part.text for part in message.parts] for message in peer.executor.received] == [
        [f"[Alice]: {HI}", f"[Friday]: {ASK_PEER}"],
        [f"[Friday]: {TO_SATURDAY}", f"[Saturday]: {TO_PEER}"],
    ]
