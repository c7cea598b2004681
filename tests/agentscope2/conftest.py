"""Fixtures of the AgentScope 2.x suite: one replay endpoint for the session,
one served agent per module (the agents and the server: hosted.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from agentscope.agent import Agent

from hosted import RECORDINGS, SCRIPT, AgentServer, serve
from replay_agent import make_agent
from replay_server import ReplayServer


@pytest.fixture(scope="session")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(SCRIPT, RECORDINGS["cases"]) as server:
        yield server


@pytest.fixture(scope="session")
def factory(replay: ReplayServer) -> Callable[[], Agent]:
    return lambda: make_agent(replay.base_url)


@pytest.fixture(scope="module")
def served(factory: Callable[[], Agent]) -> Iterator[AgentServer]:
    server = serve(factory)
    yield server
    server.stop()
