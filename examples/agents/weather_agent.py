"""A real AgentScope 2.x agent to serve: `agentscope-proto serve-agent weather_agent:make_agent`.

Its model is OpenAI's (`OPENAI_API_KEY`; `OPENAI_BASE_URL` for any
OpenAI-compatible endpoint, `OPENAI_MODEL` for another model). Its one tool
asks the caller for confirmation before it runs: AgentScope asks for every
tool not declared safe.
"""

import os

from agentscope.agent import Agent
from agentscope.credential import OpenAICredential
from agentscope.model import OpenAIChatModel
from agentscope.tool import FunctionTool, Toolkit


def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the current weather of a city.

    Args:
        city (str): The city.
        unit (str): "celsius" or "fahrenheit".
    """
    return f"Sunny in {city}, 21°C" if unit == "celsius" else f"Sunny in {city}, 70°F"


def make_agent() -> Agent:
    """A new agent: the server calls this once per session."""
    model = OpenAIChatModel(
        credential=OpenAICredential(
            api_key=os.environ["OPENAI_API_KEY"], base_url=os.environ.get("OPENAI_BASE_URL")
        ),
        model=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"),
    )
    return Agent(
        name="Friday",
        system_prompt="You answer questions about the weather.",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(get_weather)]),
    )
