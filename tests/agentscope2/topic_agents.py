"""Two agents to serve in processes of their own (`agentscope-proto
serve-agent topic_agents:friday ...`): real AgentScope 2.x agents named
Friday and Jarvis, whose models are the replays at $FRIDAY_MODEL_URL and
$JARVIS_MODEL_URL (tests/replay_server.py)."""

from __future__ import annotations

import os

from agentscope.agent import Agent

from replay_agent import make_agent


def friday() -> Agent:
    return make_agent(os.environ["FRIDAY_MODEL_URL"], "Friday")


def jarvis() -> Agent:
    return make_agent(os.environ["JARVIS_MODEL_URL"], "Jarvis")
