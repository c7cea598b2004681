"""A real AgentScope 1.x `ReActAgent` served by the AgentService, called over gRPC,
then taking part in a hub topic.

Run by tests/test_agents_agentscope1.py inside `.venv-golden` (agentscope==1.0.21,
made by `make golden`); prints one JSON line per reply checked, and one for
the topic. The model is 1.x's `OpenAIChatModel` (with `stream=False`: 1.0.21's
streaming parser fails on current openai SDKs) pointed at the local replay of
recorded responses.
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
from agentscope_proto._generated.agentscope.agent.v1.state_pb2 import SessionState  # noqa: E402
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg  # noqa: E402
from agentscope_proto.agents import (  # noqa: E402
    AgentConfig,
    AsyncAgentClient,
    agent_service,
    agent_servicer,
)
from agentscope_proto.agents.hosting import AgentScope1  # noqa: E402
from agentscope_proto.agents.topic import join_topic  # noqa: E402
from agentscope_proto.hub import HubConfig, MemoryHubStore  # noqa: E402
from agentscope_proto.service import ServerConfig, build_server  # noqa: E402

from replay_server import ReplayServer  # noqa: E402

SCRIPT = {
    "hi": ["text_plain"],
    "think first": ["thinking_and_text"],
    "fail": ["http:500"],
    "@Jarvis, think first": ["thinking_and_text"],
}


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
        await topic(replay)
        await kept(replay)


async def topic(replay: ReplayServer) -> None:
    """The agent in a topic of a memory hub: what the topic holds once it
    has answered the message naming it."""
    store = MemoryHubStore()
    servicer = await agent_servicer(lambda: make_agent(replay.base_url))
    name = servicer.description.name
    joined = await join_topic(
        servicer.sessions, name, store, HubConfig(), AgentConfig(topic="room")
    )
    log = await store.subscribe("room", "")
    for words in ("nice weather", "@Jarvis, think first"):
        said = Msg(name="user", role="ROLE_USER", text=words)
        await store.publish("room", said.SerializeToString())
    entries: list = []
    while len(entries) < 3:
        entries += await log.next()
    await joined.close()
    msgs = [Msg.FromString(data) for _, data in entries]
    kinds = [[block.WhichOneof("block") for block in msg.blocks.items] for msg in msgs]
    print(json.dumps({"topic": [[m.name, get_text_content(m)] for m in msgs], "kinds": kinds}))


async def kept(replay: ReplayServer) -> None:
    """An agent's state as a durable store keeps it, given to a new agent:
    what the new one remembers."""
    from agentscope.message import Msg as NativeMsg

    hosting = AgentScope1()
    first = make_agent(replay.base_url)
    first.set_console_output_enabled(False)
    await first(NativeMsg("user", "hi", "user"))
    saved = hosting.save_state(first, [])
    assert saved is not None
    stored = saved.encoded()
    second = make_agent(replay.base_url)
    hosting.load_state(second, SessionState.FromString(stored))
    memory = await second.memory.get_memory()
    print(json.dumps({"kept": [[m.role, m.get_text_content()] for m in memory]}))


asyncio.run(main())
