"""Any A2A 1.0 agent as a participant of a hub topic: `A2A_AGENT_URL=URL
agentscope-proto serve-agent a2a_member:make_agent --hub ... --topic room`.

The served agent is a `RemoteAgent` of the A2A agent at `A2A_AGENT_URL`
(LangGraph, ADK, any framework's; named from its card): it hears the room and
answers what names it as any served agent does, over A2A.
"""

import os

from agentscope_proto.agents import RemoteAgent


def make_agent() -> RemoteAgent:
    return RemoteAgent(os.environ["A2A_AGENT_URL"])
