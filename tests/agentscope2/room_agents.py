"""The AgentScope agents of the three-agent conversation
(test_a2a_conversation.py), each served by a process of its own with
`agentscope-proto serve-agent room_agents:make_friday --a2a-port ...`: real
AgentScope 2.x agents whose model is the test's replay (`OPENAI_BASE_URL`).
Their system prompts name them, so the replay's requests say whose they are.
"""

from __future__ import annotations

import os

from agentscope.agent import Agent, ModelConfig
from agentscope.credential import OpenAICredential
from agentscope.model import OpenAIChatModel
from agentscope.tool import Toolkit


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
