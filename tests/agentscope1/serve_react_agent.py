"""A real AgentScope 1.x `ReActAgent` served by the AgentService, called over gRPC.

Run by tests/test_agents_agentscope1.py inside `.venv-golden` (agentscope==1.0.21,
made by `make golden`); prints one JSON line per reply checked. The model is
1.x's `OpenAIChatModel` (with `stream=False`: 1.0.21's streaming parser fails
on current openai SDKs) pointed at the local replay of recorded responses.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))
# Packages of the calling venv that .venv-golden lacks (grpc's companions), after its own.
sys.path.extend(sys.argv[1:])

from agentscope.agent import ReActAgent  # noqa: E402
from agentscope.formatter import OpenAIChatFormatter  # noqa: E402
from agentscope.model import OpenAIChatModel  # noqa: E402

from agentscope_proto import (  # noqa: E402
    AgentReplyError,
    ErrorType,
    FinishedReason,
    get_text_content,
)
from agentscope_proto._generated.agentscope.agent.v1 import events_pb2  # noqa: E402
from agentscope_proto.agents import AsyncAgentClient, agent_service  # noqa: E402
from agentscope_proto.service import ServerConfig, build_server  # noqa: E402

from replay_server import ReplayServer  # noqa: E402

SCRIPT = {"hi": ["text_plain"], "think first": ["thinking_and_text"], "fail": ["http:500"]}


def make_agent(base_url: str) -> ReActAgent:
    model = OpenAIChatModel(
        "gpt-4o-mini",
        api_key="sk-replay",
        stream=False,
        client_kwargs={"base_url": base_url, "max_retries": 0},
    )
    return ReActAgent("Jarvis", "You are helpful.", model, OpenAIChatFormatter())


async def main() -> None:
    with ReplayServer(SCRIPT) as replay:
        service = await agent_service(lambda: make_agent(replay.base_url))
        server, _, port = build_server(ServerConfig(port=0), services=[service])
        await server.start()
        async with AsyncAgentClient(f"127.0.0.1:{port}") as client:
            card = await client.describe()
            described = {
                "name": card.name,
                "framework": card.framework,
                "events": list(card.events),
            }
            print(json.dumps({**described, "answers": list(card.answers)}))
            for words in ("hi", "think first"):
                items = [
                    item
                    async for item in client.reply_stream(
                        {"name": "user", "role": "user", "content": words}
                    )
                ]
                events = [i for i in items if isinstance(i, events_pb2.AgentEvent)]
                final = items[-1]
                print(
                    json.dumps(
                        {
                            "says": words,
                            "kinds": [e.WhichOneof("event") for e in events]
                            + ["msg"] * (len(items) - len(events)),
                            "text": "".join(e.text_block_delta.delta for e in events),
                            "thinking": "".join(e.thinking_block_delta.delta for e in events),
                            "final": get_text_content(final),
                        }
                    )
                )
            items = []
            try:
                async for item in client.reply_stream(
                    {"name": "user", "role": "user", "content": "fail"}
                ):
                    items.append(item)
            except AgentReplyError as exc:
                last = items[-1].reply_end
                print(
                    json.dumps(
                        {
                            "raised": exc.error_type,
                            "kinds": [i.WhichOneof("event") for i in items],
                            "reason": FinishedReason.Name(last.finished_reason),
                            "error": ErrorType.Name(last.error.type),
                        }
                    )
                )
        await server.stop(0)


asyncio.run(main())
