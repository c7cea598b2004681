"""The agents of the three-agent conversation (test_a2a_conversation.py),
each served by a process of its own with `agentscope-proto serve-agent
room_agents:FACTORY --hub ... --topic ...`:

- `make_friday`, `make_saturday`: real AgentScope 2.x agents whose model is
  the test's replay (`OPENAI_BASE_URL`);
- `make_peer`: the plain A2A agent at `PEER_A2A_URL` as a `RemoteAgent`, so
  that an agent of another framework takes part in the topic too.
"""

from __future__ import annotations

import os

from agentscope.agent import Agent, ModelConfig
from agentscope.credential import OpenAICredential
from agentscope.model import OpenAIChatModel
from agentscope.tool import Toolkit

from agentscope_proto.agents import RemoteAgent


def _agent(name: str) -> Agent:
    model = OpenAIChatModel(
        credential=OpenAICredential(api_key="sk-replay", base_url=os.environ["OPENAI_BASE_URL"]),
        model="gpt-4o-mini",
        max_retries=0,
    )
    return Agent(
        name=name,
        system_prompt=f"You are {name}.",
        model=model,
        toolkit=Toolkit(),
        model_config=ModelConfig(max_retries=0),
    )


def make_friday() -> Agent:
    return _agent("Friday")


def make_saturday() -> Agent:
    return _agent("Saturday")


def make_peer() -> RemoteAgent:
    return RemoteAgent(os.environ["PEER_A2A_URL"])
