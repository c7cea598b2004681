"""A rolling restart under load: three `serve-agent` replicas on one real
redis-server, each in turn stopped as an operator does (SIGTERM, SIGKILL
after its grace) and started again on its port, while 16 sessions of 20
turns each run through clients given all three replicas (half of them by
IP address, one channel; half by host name, a channel each). No turn is lost
or run twice, and each session's agent remembers every earlier turn: the
model's last request of each session holds the session's 20 user turns
once each, in order."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_proto import get_text_content
from agentscope_proto.agents import AgentClient

from agent_processes import HERE, AgentProcess, stop_all
from hosted import SUNNY, user
from hub_fixtures import RedisServer, free_port
from replay_server import ReplayServer, normalised, user_words

SESSIONS, TURNS = 16, 20
# Between two turns of a session: the turns span the three restarts. Each
# turn's model call streams for about 0.9 s ("slow:"), longer than a
# replica's grace: replies are in flight when their replica stops, and are
# handed over.
_PACE_S = 0.1
_GRACE_S = 0.3
# How the clients name the replicas: by address, or by host name.
_HOSTS = ("127.0.0.1", "localhost")


def _words(session: int, turn: int) -> str:
    return f"session {session} turn {turn}"


class _Replica:
    """A `serve-agent` on a fixed port, restarted there."""

    def __init__(self, redis: RedisServer, env: dict[str, str]) -> None:
        self.port = free_port()
        self._flags = ["--port", str(self.port), "--state", redis.url, "--lease-seconds", "1"]
        self._flags += ["--grace", str(_GRACE_S)]
        self._env = env
        # Every process's log, the stopped ones' too (shown on a failure).
        self.logs: list[list[str]] = []
        self.process = self._start()

    def _start(self) -> AgentProcess:
        process = AgentProcess(["topic_agents:friday", *self._flags], self._env)
        self.logs.append(process.log)
        process.wait_listening()
        return process

    def restart(self) -> None:
        """SIGTERM; SIGKILL if it outlives its grace by 5 s; started again."""
        self.process.process.send_signal(signal.SIGTERM)
        try:
            self.process.process.wait(_GRACE_S + 5)
        except subprocess.TimeoutExpired:
            self.process.process.kill()
            self.process.process.wait(10)
        self.process = self._start()


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    script = {
        _words(s, t): ["slow:stream_text_by3"] for s in range(SESSIONS) for t in range(1, TURNS + 1)
    }
    with ReplayServer(script) as server:
        yield server


def _session(targets: list[str], session: int, out: dict[int, Any]) -> None:
    """The session's turns, one after another; what each ended with."""
    answers = []
    try:
        with AgentClient(targets) as client:
            for turn in range(1, TURNS + 1):
                items = list(
                    client.reply_stream(
                        user(_words(session, turn)),
                        session_id=f"roll-{session}",
                        resume_attempts=10,
                        timeout=60,
                    )
                )
                answers.append(get_text_content(items[-1]))
                time.sleep(_PACE_S)
        out[session] = answers
    except Exception as exc:
        out[session] = exc


def _user_turns(body: dict[str, Any]) -> list[str]:
    """The user's words in a model request, oldest first (not 2.x's reminders)."""
    turns = []
    for message in body["messages"]:
        if message.get("role") == "user":
            words, _ = user_words([message])
            if words:
                turns.append(normalised(words))
    return turns


def test_a_rolling_restart_loses_and_repeats_no_turn(
    redis_server: RedisServer, replay: ReplayServer
) -> None:
    env = {
        **os.environ,
        "FRIDAY_MODEL_URL": replay.base_url,
        "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)]),
    }
    replicas = [_Replica(redis_server, env) for _ in range(3)]
    targets = {host: [f"{host}:{replica.port}" for replica in replicas] for host in _HOSTS}
    results: dict[int, Any] = {}
    try:
        threads = [
            threading.Thread(target=_session, args=(targets[_HOSTS[s % 2]], s, results))
            for s in range(SESSIONS)
        ]
        for thread in threads:
            thread.start()
        for replica in replicas:
            time.sleep(1.5)
            replica.restart()
        for thread in threads:
            thread.join(180)
    finally:
        stop_all([replica.process for replica in replicas])
    try:
        _check(results, replay)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nthe replicas' warnings:\n{_warnings(replicas)}") from None


def _warnings(replicas: list[_Replica]) -> str:
    return "".join(
        line
        for replica in replicas
        for log in replica.logs
        for line in log
        if " WARNING " in line or " ERROR " in line
    )


def _check(results: dict[int, Any], replay: ReplayServer) -> None:
    """Every session's turns answered, once each, and remembered."""
    failed = {s: r for s, r in results.items() if isinstance(r, Exception)}
    assert not failed, failed
    assert sorted(results) == list(range(SESSIONS))
    # Replies were in flight as replicas stopped: their rest was run again.
    assert len(replay.requests) > SESSIONS * TURNS
    for session, answers in results.items():
        assert answers == [SUNNY] * TURNS, session
        last = [
            body
            for body in replay.requests
            if _user_turns(body)[-1:] == [normalised(_words(session, TURNS))]
        ]
        assert last, session
        expected = [normalised(_words(session, t)) for t in range(1, TURNS + 1)]
        assert _user_turns(last[-1]) == expected, session
