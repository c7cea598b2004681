"""A real AgentScope 2.x agent whose own code raises what ends more than a
reply when nothing contains it (`CancelledError`, `SystemExit`,
`KeyboardInterrupt`), for the tests of failing agents, in-process and in a
process of its own (`agentscope-proto serve-agent failing_agents:friday`,
its model the replay at $FRIDAY_MODEL_URL)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from agentscope.agent import Agent

from replay_agent import make_agent

# What the user says -> what the agent raises once its reply has started.
RAISES: dict[str, type[BaseException]] = {
    "cancel yourself": asyncio.CancelledError,
    "exit": SystemExit,
    "interrupt yourself": KeyboardInterrupt,
    "break": RuntimeError,
}


class Failing(Agent):
    """`Agent`, but its reply raises `RAISES[text]` after its first event."""

    async def reply_stream(  # type: ignore[override]
        self, inputs: Any = None, structured_schema: Any = None, yield_final_msg: bool = False
    ) -> AsyncIterator[Any]:
        last = inputs[-1] if isinstance(inputs, list) and inputs else None
        error = RAISES.get(last.get_text_content() if last is not None else "")
        stream = super().reply_stream(inputs, structured_schema, yield_final_msg)
        try:
            async for item in stream:
                yield item
                if error is not None:
                    raise error("raised by the agent's own code")
        finally:
            await stream.aclose()


def failing(base_url: str) -> Agent:
    return make_agent(base_url, kind=Failing)


def friday() -> Agent:
    """The failing agent of a process of its own."""
    return failing(os.environ["FRIDAY_MODEL_URL"])
