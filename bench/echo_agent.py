"""The echo agent of the agent benchmark, and its A2A server.

`make_agent` (for `agentscope-proto serve-agent echo_agent:make_agent`) returns
an agent that replies the way an AgentScope 2.x agent does, with 2.x's own
event objects and messages, but has no model: it echoes the user's text as one
text block, and remembers the conversation in its `AgentState` as 2.x's agent
does. What the benchmark measures is the transport of a reply (and, with
`--state`, saving the session).

`python bench/echo_agent.py --port N [--asgi hypercorn] [--grpc-port M]`
serves the same agent with the A2A Python SDK (`a2a-sdk`) alone, as its own
examples do: its JSON-RPC app (`DefaultRequestHandlerV2`,
`create_jsonrpc_routes`) on uvicorn (or hypercorn, the ASGI server
`serve-agent --a2a-port` runs), its gRPC handler on M if given, and an
`AgentExecutor` that runs the agent's `reply_stream` and maps its events to
A2A's: the task, then working, the text as an artifact, completed.

Runs in the AgentScope 2.x venv (`.venv-as2`, which has a2a-sdk).
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

from agentscope.event import (
    ReplyEndEvent,
    ReplyStartEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    TextBlockStartEvent,
)
from agentscope.message import AssistantMsg, Msg
from agentscope.state import AgentState

# The A2A agent card's name and the served agent's.
NAME = "Echo"


class EchoAgent:
    """Echoes its input's text as a 2.x agent's reply: events, then the message."""

    def __init__(self) -> None:
        self.name = NAME
        self.state = AgentState()

    async def reply_stream(
        self,
        inputs: Msg | list[Msg] | None = None,
        structured_schema: Any = None,
        yield_final_msg: bool = False,
    ) -> AsyncIterator[Any]:
        msgs = [inputs] if isinstance(inputs, Msg) else list(inputs or [])
        text = "\n".join(msg.get_text_content() or "" for msg in msgs)
        session, reply, block = self.state.session_id, uuid.uuid4().hex, uuid.uuid4().hex
        yield ReplyStartEvent(session_id=session, reply_id=reply, name=self.name)
        yield TextBlockStartEvent(reply_id=reply, block_id=block)
        yield TextBlockDeltaEvent(reply_id=reply, block_id=block, delta=text)
        yield TextBlockEndEvent(reply_id=reply, block_id=block)
        yield ReplyEndEvent(session_id=session, reply_id=reply)
        answer = AssistantMsg(self.name, text, id=reply)
        # Its memory, as an agent's: what a state store saves after each reply.
        self.state.context += [*msgs, answer]
        if yield_final_msg:
            yield answer

    async def observe(self, msgs: Any = None) -> None:
        return None


def make_agent() -> EchoAgent:
    return EchoAgent()


def a2a_app(url: str, grpc_url: str | None = None) -> Any:
    """The A2A JSON-RPC app serving a new echo agent per request's context,
    its card and request handler."""
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandlerV2
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Part,
        Task,
        TaskState,
        TaskStatus,
    )
    from agentscope.message import UserMsg
    from starlette.applications import Starlette

    class Executor(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            agent = make_agent()
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            async for event in agent.reply_stream(UserMsg("user", context.get_user_input())):
                if isinstance(event, ReplyStartEvent):
                    await updater.start_work()
                elif isinstance(event, TextBlockDeltaEvent):
                    await updater.add_artifact(
                        [Part(text=event.delta)], artifact_id=event.block_id, last_chunk=True
                    )
                elif isinstance(event, ReplyEndEvent):
                    await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            return None

    interfaces = [AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0")]
    if grpc_url is not None:
        interfaces.append(
            AgentInterface(protocol_binding="GRPC", url=grpc_url, protocol_version="1.0")
        )
    card = AgentCard(
        name=NAME,
        description="Echoes the user's text.",
        version="1",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandlerV2(
        agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_jsonrpc_routes(handler, "/"), *create_agent_card_routes(card)]
    return Starlette(routes=routes), card, handler


async def _serve(args: argparse.Namespace) -> None:
    import grpc
    from a2a.server.request_handlers import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    grpc_url = f"127.0.0.1:{args.grpc_port}" if args.grpc_port else None
    app, _, handler = a2a_app(f"http://127.0.0.1:{args.port}/", grpc_url)
    server = None
    if grpc_url is not None:  # serves beside the HTTP server, until it stops
        server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(grpc_url)
        await server.start()
    try:
        if args.asgi == "hypercorn":
            from hypercorn.asyncio import serve
            from hypercorn.config import Config

            config = Config()
            config.bind = [f"127.0.0.1:{args.port}"]
            config.accesslog = None
            config.errorlog = None
            await serve(app, config)
        else:
            import uvicorn

            options = uvicorn.Config(
                app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False
            )
            await uvicorn.Server(options).serve()
    finally:
        if server is not None:
            await server.stop(0)


def main() -> None:
    parser = argparse.ArgumentParser(description="the echo agent over A2A, a2a-sdk alone")
    parser.add_argument("--port", type=int, required=True, help="JSON-RPC and the card")
    parser.add_argument("--grpc-port", type=int, help="A2A's gRPC binding too")
    parser.add_argument("--asgi", choices=["uvicorn", "hypercorn"], default="uvicorn")
    asyncio.run(_serve(parser.parse_args()))


if __name__ == "__main__":
    main()
