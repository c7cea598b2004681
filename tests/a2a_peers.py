"""Minimal A2A 1.0 agents written with a2a-sdk's own server API: stand-ins for
other frameworks' agents, for the A2A client's tests (tests/test_a2a_client.py,
tests/agentscope2/).

- `PlainPeer` knows nothing of the AgentScope extension (its card lists
  none): it reads the text of what it is sent, and streams its answer as
  artifact chunks, as many A2A servers do. "ask" makes it ask a question
  (`input-required`), answered by the next message on the task; "fail" fails
  the task; anything else is answered with what it heard.
- `ExtensionPeer` lists the extension and reads messages with this package's
  mapping: it answers, in one status message, with who said what.

`PeerServer` serves one over JSON-RPC and gRPC on free loopback ports, in a
thread of its own, with an optional bearer token.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import grpc
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    a2a_pb2_grpc,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse

from agentscope_proto import get_text_content
from agentscope_proto.a2a import a2a_to_msgs, agent_extension, msgs_to_a2a
from agentscope_proto.service import ServerConfig
from agentscope_proto.service.asgi import listen, start_asgi

from server_harness import cancel_the_rest

# The chunks PlainPeer streams its answer in.
CHUNKS = 3


def heard(texts: list[str]) -> str:
    """What PlainPeer answers to texts it was sent."""
    return "I heard: " + " | ".join(texts)


def _texts(message: Message) -> list[str]:
    return [part.text for part in message.parts if part.HasField("text")]


def _chunks(text: str) -> list[str]:
    size = -(-len(text) // CHUNKS)
    return [text[i : i + size] for i in range(0, len(text), size)]


class PlainPeer(AgentExecutor):
    """An A2A agent that ignores the extension (see the module doc)."""

    extension = False

    def __init__(self) -> None:
        self.received: list[Message] = []
        self.cancelled: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        self.received.append(message)
        task_id, context_id = str(context.task_id), str(context.context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            task = Task(id=task_id, context_id=context_id, status=status, history=[message])
            await event_queue.enqueue_event(task)
        await updater.start_work()
        texts = _texts(message)
        words = " ".join(texts).strip()
        if words == "ask":
            question = updater.new_agent_message([Part(text="Which city?")])
            await updater.requires_input(question)
            return
        if words == "fail":
            await updater.failed(updater.new_agent_message([Part(text="It broke.")]))
            return
        if words == "wait":
            await asyncio.Event().wait()  # until cancelled
        for index, chunk in enumerate(_chunks(heard(texts))):
            await updater.add_artifact(
                [Part(text=chunk)],
                artifact_id="answer",
                append=index > 0,
                last_chunk=index == CHUNKS - 1,
            )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancelled.append(str(context.task_id))


class ExtensionPeer(PlainPeer):
    """An A2A agent that reads the extension (see the module doc)."""

    extension = True

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        self.received.append(message)
        said = [f"{msg.name}: {get_text_content(msg)}" for msg in a2a_to_msgs(message)]
        reply = msgs_to_a2a([_assistant("Peer", " / ".join(said))], role=Role.ROLE_AGENT)
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
        task_id, context_id = str(context.task_id), str(context.context_id)
        await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, status=status))
        await updater.complete(reply)


def _assistant(name: str, text: str) -> Any:
    from agentscope_proto import new_msg

    return new_msg(name, text, "assistant")


class PeerServer:
    """`executor` behind a2a-sdk's JSON-RPC app and gRPC handler, on free
    loopback ports in a thread; a context manager. `url` is the JSON-RPC
    interface's (the card is under it)."""

    def __init__(
        self, executor: PlainPeer, *, streaming: bool = True, token: str | None = None
    ) -> None:
        self.executor = executor
        self.streaming = streaming
        self.token = token
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._http: Any = None
        self._grpc: Any = None
        self.url = ""
        self.grpc_target = ""

    def __enter__(self) -> PeerServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        config = ServerConfig(port=0)
        sock = listen(config, 0)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._grpc = grpc.aio.server()
        self.grpc_target = f"127.0.0.1:{self._grpc.add_insecure_port('127.0.0.1:0')}"
        card = AgentCard(
            name="Peer",
            description="A stand-in for another framework's agent.",
            version="1",
            supported_interfaces=[
                AgentInterface(url=self.url, protocol_binding="JSONRPC", protocol_version="1.0"),
                AgentInterface(
                    url=self.grpc_target, protocol_binding="GRPC", protocol_version="1.0"
                ),
            ],
            capabilities=AgentCapabilities(
                streaming=self.streaming,
                extensions=[agent_extension()] if self.executor.extension else [],
            ),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[AgentSkill(id="hear", name="hear", description="hears", tags=["test"])],
        )
        handler = DefaultRequestHandlerV2(
            agent_executor=self.executor, task_store=InMemoryTaskStore(), agent_card=card
        )
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), self._grpc)
        await self._grpc.start()
        app: Any = Starlette(
            routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
        )
        if self.token is not None:
            app = _TokenCheck(app, self.token)
        self._http = start_asgi(app, config, sock)

    async def _stop(self) -> None:
        await self._http.stop(0)
        await self._grpc.stop(0)
        await cancel_the_rest()


class _TokenCheck:
    """A bearer token on every HTTP request, the card's too."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        given = dict(scope.get("headers", [])).get(b"authorization")
        if scope["type"] == "http" and given != self._expected:
            await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
            return
        await self._app(scope, receive, send)
