"""Three agents in one conversation over A2A, through a hub topic: two
AgentScope agents, each served by a process of its own (`serve-agent
--a2a-port`), and a plain a2a-sdk agent (tests/a2a_peers.py). Each is a
`RemoteAgent` of its A2A URL; what anyone says is published to the topic,
and each agent, when its turn comes, replies to what the topic brought since
it last spoke. Every message must arrive with its speaker: in the AgentScope
agents' model requests (through the extension) and in the plain agent's text
(`[name]: `).

The hub glue here is the test's own loop (subscribe, hand each agent what is
new, publish its reply).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import Msg

from agentscope_proto import get_text_content, interop, new_msg
from agentscope_proto.agents import RemoteAgent
from agentscope_proto.hub.client import AsyncHubClient
from agentscope_proto.service import ServerConfig

from a2a_peers import PeerServer, PlainPeer, heard
from hosted import RECORDINGS, SUNNY
from replay_server import ReplayServer
from server_harness import RunningServer

HERE = Path(__file__).resolve().parent
ROUNDS = 2


def _serve(factory: str, replay: ReplayServer) -> subprocess.Popen[str]:
    """`serve-agent FACTORY --a2a-port 0` in a process of its own."""
    command = [
        str(Path(sys.executable).parent / "agentscope-proto"),
        "serve-agent",
        f"room_agents:{factory}",
        "--port",
        "0",
        "--a2a-port",
        "0",
        "--grace",
        "1",
    ]
    env = {**os.environ, "OPENAI_BASE_URL": replay.base_url}
    return subprocess.Popen(command, cwd=HERE, env=env, stderr=subprocess.PIPE, text=True)


def _a2a_url(process: subprocess.Popen[str]) -> str:
    """The A2A URL a started server's log line lists."""
    assert process.stderr is not None
    log = []
    for line in process.stderr:
        log.append(line)
        found = re.search(r"(http://\S+) \(A2A JSON-RPC", line)
        if found:
            return found.group(1)
    raise AssertionError("the server did not start:\n" + "".join(log))


@pytest.fixture(scope="module")
def room() -> Iterator[tuple[ReplayServer, list[str], PeerServer, RunningServer]]:
    # Every call answers SUNNY: the replay picks by the user's words ("hi")
    # and the number of agents' messages since.
    with ReplayServer({"hi": ["stream_text_by3"] * 12}, RECORDINGS["cases"]) as replay:
        processes = [_serve(factory, replay) for factory in ("make_friday", "make_saturday")]
        hub = RunningServer(ServerConfig(port=0)).start()  # a memory hub
        try:
            urls = [_a2a_url(process) for process in processes]
            with PeerServer(PlainPeer()) as peer:
                yield replay, [*urls, peer.url], peer, hub
        finally:
            hub.stop()
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(30)


async def _converse(urls: list[str], hub_target: str) -> list[Any]:
    """Alice says hi to the room; then each agent in turn, ROUNDS times,
    replies to what is new in the topic. The topic's messages, in order."""
    agents = [RemoteAgent(url) for url in urls]
    seen = dict.fromkeys(range(len(agents)), 0)
    log: list[Any] = []
    async with AsyncHubClient(hub_target) as hub:
        topic = await hub.subscribe("room")
        published = 1
        await hub.publish("room", new_msg("Alice", "hi", "user"))
        for _ in range(ROUNDS):
            for index, agent in enumerate(agents):
                while len(log) < published:
                    log.append((await topic.__anext__()).msg)
                new = [msg for msg in log[seen[index] :] if msg.name != agent.name]
                seen[index] = len(log)
                reply: Msg = await agent.reply([interop.to_agentscope(msg) for msg in new])
                await hub.publish("room", interop.from_agentscope(reply))
                published += 1
        while len(log) < published:
            log.append((await topic.__anext__()).msg)
        await topic.close()
    for agent in agents:
        await agent.aclose()
    return log


def _said(messages: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(role, name, text) of each named message of a model request (the
    system prompt aside)."""
    out = []
    for message in messages:
        if "name" in message and message["role"] != "system":
            content = message["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            out.append((message["role"], message["name"], text))
    return out


def _requests_of(replay: ReplayServer, name: str) -> list[list[tuple[str, str, str]]]:
    prompt = f"You are {name}."
    return [
        _said(body["messages"])
        for body in replay.requests
        if prompt in str(body["messages"][0].get("content"))
    ]


def test_every_message_arrives_with_its_speaker(
    room: tuple[ReplayServer, list[str], PeerServer, RunningServer],
) -> None:
    replay, urls, peer, hub = room
    log = asyncio.run(_converse(urls, hub.target))
    names = [msg.name for msg in log]
    assert names == ["Alice", *(["Friday", "Saturday", "Peer"] * ROUNDS)]
    peer_heard = heard(["[Alice]: hi", f"[Friday]: {SUNNY}", f"[Saturday]: {SUNNY}"])
    assert get_text_content(log[3]) == peer_heard
    # The AgentScope agents got every message with its speaker (the extension).
    friday, saturday = _requests_of(replay, "Friday"), _requests_of(replay, "Saturday")
    assert friday[0] == [("user", "Alice", "hi")]
    assert saturday[0] == [("user", "Alice", "hi"), ("assistant", "Friday", SUNNY)]
    assert friday[1] == [
        ("user", "Alice", "hi"),
        ("assistant", "Friday", SUNNY),
        ("assistant", "Saturday", SUNNY),
        ("assistant", "Peer", peer_heard),
    ]
    # The plain agent read who spoke from the text.
    second = [part.text for part in peer.executor.received[-1].parts]
    assert second == [f"[Friday]: {SUNNY}", f"[Saturday]: {SUNNY}"]
