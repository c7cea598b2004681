"""The real AgentScope 2.x agent the golden replies are recorded from
(tests/golden/make_agentscope2_events.py) and the hosted agents of the 2.x
suite are (tests/agentscope2/hosted.py): `agentscope.agent.Agent` with a
toolkit (a tool that asks for confirmation, one that runs at once, an
external one) and AgentScope's own `OpenAIChatModel` pointed at a local
replay (replay_server.py). Needs only AgentScope 2.x.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agentscope.agent import Agent, ModelConfig
from agentscope.credential import OpenAICredential
from agentscope.model import OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolBase, Toolkit


def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the weather of a city.

    Args:
        city (str): The city.
        unit (str): `celsius` or `fahrenheit`.
    """
    return f"Sunny in {city}, 21°C" if unit == "celsius" else f"Sunny in {city}, 70°F"


def get_time(timezone: str) -> str:
    """Get the current time in a time zone.

    Args:
        timezone (str): The IANA time zone.
    """
    return f"12:00 in {timezone}"


class WebSearch(ToolBase):
    """An external tool: the caller runs it and sends its result back."""

    name = "web_search"
    description = "Search the web."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"query": {"type": "string"}},
    }
    is_concurrency_safe = False
    is_read_only = True
    is_external_tool = True

    async def check_permissions(self, *args: Any, **kwargs: Any) -> PermissionDecision:
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="the caller runs it")


def make_agent(
    base_url: str,
    name: str = "Friday",
    kind: type[Agent] = Agent,
    toolkit: Toolkit | None = None,
    **options: Any,
) -> Agent:
    """A real 2.x agent (of `kind`: `Agent` or a subclass) whose model is the
    replay at `base_url`, with the tools above unless given a `toolkit`;
    `options` are more of `Agent`'s arguments."""
    model = OpenAIChatModel(
        credential=OpenAICredential(api_key="sk-replay", base_url=base_url),
        model="gpt-4o-mini",
        max_retries=0,
    )
    allowed = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="always allowed")
    toolkit = toolkit or Toolkit(
        tools=[
            FunctionTool(get_weather, is_concurrency_safe=False),  # asks for confirmation
            FunctionTool(get_time, is_concurrency_safe=False, permission=allowed),
            WebSearch(),
        ]
    )
    return kind(
        name=name,
        system_prompt="You are a helpful assistant.",
        model=model,
        toolkit=toolkit,
        model_config=ModelConfig(max_retries=0),
        **options,
    )
