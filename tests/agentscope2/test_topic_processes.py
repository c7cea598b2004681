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
import queue
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from agentscope_proto import get_text_content, new_msg
from agentscope_proto.hub import HubClient
from agentscope_proto.hub.store import parse_offset

from replay_server import ReplayServer, saying, wait_until

HERE = Path(__file__).resolve().parent
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


class AgentProcess:
    """`agentscope-proto serve-agent topic_agents:<name>` on a free port."""

    def __init__(self, name: str, topic: str, redis_url: str, env: dict[str, str]) -> None:
        command = str(Path(sys.executable).parent / "agentscope-proto")
        argv = [command, "serve-agent", f"topic_agents:{name}", "--port", "0"]
        argv += ["--hub", redis_url, "--topic", topic]
        self.process = subprocess.Popen(argv, cwd=HERE, env=env, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        self._listening = threading.Event()
        self.target = ""
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:  # drained throughout: a full pipe would block it
            self.log.append(line)
            found = re.search(r"listening on (\S+:\d+) \(gRPC\)", line)
            if found:
                self.target = found.group(1)
                self._listening.set()
        self._listening.set()

    def wait_listening(self) -> str:
        self._listening.wait(120)
        assert self.target, "the server did not start:\n" + "".join(self.log)
        return self.target


class Listener:
    """A hub subscription read in a thread: (name, text) of each message."""

    def __init__(self, target: str, topic: str) -> None:
        self._client = HubClient(target)
        self._events = self._client.subscribe(topic)  # live once this returns
        self._heard: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        for event in self._events:
            self._heard.put(event)

    def next(self, count: int) -> list[tuple[str, str | None]]:
        events = [self._heard.get(timeout=120) for _ in range(count)]
        return [(event.msg.name, get_text_content(event.msg)) for event in events]

    def close(self) -> None:
        self._events.close()
        self._client.close()


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
        started = [
            AgentProcess(name, topic, redis_server.url, env) for name in ("friday", "jarvis")
        ]
        try:
            friday, jarvis = (process.wait_listening() for process in started)
            yield topic, friday, jarvis
        finally:
            for process in started:
                process.process.terminate()
            for process in started:
                process.process.wait(30)


def test_two_agents_and_a_person_in_one_topic_across_processes(
    agents: tuple[str, str, str], redis_server: Any
) -> None:
    topic, friday, jarvis = agents
    listener = Listener(jarvis, topic)
    person = HubClient(friday)
    kept = Redis.from_url(redis_server.url)
    try:
        asked = person.publish(topic, new_msg("alice", ASK, "user"))
        # Friday answers alice by asking Jarvis; Jarvis answers Friday; nobody else.
        assert listener.next(3) == [("alice", ASK), ("Friday", FORWARD), ("Jarvis", NOON)]
        person.publish(topic, new_msg("alice", THANKS, "user"))
        assert listener.next(2) == [("alice", THANKS), ("Jarvis", WELCOME)]

        # Quiet: once both agents have handled a last message, nothing more
        # comes from them (each records its progress after publishing).
        last = person.publish(topic, new_msg("alice", "bye", "user"))
        for name in ("Friday", "Jarvis"):
            key = f"agentscope:agent:{{{topic}}}:{name}"
            assert wait_until(lambda key=key: _at_least(kept.get(key), last), 60)
        person.publish(topic, new_msg("alice", "end", "user"))
        assert listener.next(2) == [("alice", "bye"), ("alice", "end")]
        assert parse_offset(asked) < parse_offset(last)
    finally:
        listener.close()
        person.close()
        kept.close()


def _at_least(kept: bytes | None, offset: str) -> bool:
    return kept is not None and parse_offset(kept.decode()) >= parse_offset(offset)
