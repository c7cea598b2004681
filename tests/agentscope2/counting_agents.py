"""An agent to serve in processes of its own whose tool leaves a trace
outside them (`agentscope-proto serve-agent counting_agents:friday ...`): a
real AgentScope 2.x agent whose `get_weather` runs at once and appends a
line to the file $TOOL_RUNS each time it runs, so a test sees how often it
ran across replicas; while the file $TOOL_HOLD exists it waits (a tool
still running when its replica is killed). Its model is the replay at
$FRIDAY_MODEL_URL. `friday_asks` asks before running it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agentscope.agent import Agent
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit

from replay_agent import make_agent


async def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the weather of a city.

    Args:
        city (str): The city.
        unit (str): `celsius` or `fahrenheit`.
    """
    with Path(os.environ["TOOL_RUNS"]).open("a", encoding="utf-8") as runs:
        runs.write(f"{city}\n")
    hold = Path(os.environ["TOOL_HOLD"])
    for _ in range(1200):
        if not hold.exists():
            break
        await asyncio.sleep(0.05)
    return f"Sunny in {city}, 21°C"


def friday() -> Agent:
    allowed = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="always allowed")
    tools = Toolkit(tools=[FunctionTool(get_weather, permission=allowed)])
    return make_agent(os.environ["FRIDAY_MODEL_URL"], "Friday", toolkit=tools)


def friday_asks() -> Agent:
    """The same, asking the caller before each run of its tool."""
    tools = Toolkit(tools=[FunctionTool(get_weather, is_concurrency_safe=False)])
    return make_agent(os.environ["FRIDAY_MODEL_URL"], "Friday", toolkit=tools)
