"""A real AgentScope 2.x agent served over A2A 1.0 (`start_a2a`, what
`serve-agent --a2a-port` runs), driven by a2a-sdk's own client over JSON-RPC
and gRPC: the card, send, stream, cancel, get task, the question a reply
asks and its answer, failures, bad requests, auth and TLS.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest
import trustme
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from agentscope_proto import Msg, get_text_content, interop, new_msg
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    FinishedReason,
    ToolResultState,
)
from agentscope_proto.a2a import EXTENSION_URI, a2a_to_msg, msgs_to_a2a
from agentscope_proto.a2a.server import A2AServer
from agentscope_proto.agents import AgentClient
from agentscope_proto.service import ServerConfig

from hosted import SUNNY, A2AServed, serve_a2a
from replay_server import ReplayServer, wait_until

BINDINGS = ["JSONRPC", "GRPC"]


@pytest.fixture(scope="module")
def served(factory: Callable[[], Any]) -> Iterator[A2AServed]:
    server = serve_a2a(factory)
    yield server
    server.stop()


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def _client(a2a: A2AServer, binding: str, *, streaming: bool = True, **config: Any) -> Any:
    """a2a-sdk's own client for the served card, over `binding`."""
    options = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=config.pop("channel", grpc.aio.insecure_channel),
        **config,
    )
    return ClientFactory(options).create(a2a.card)


def _message(text: str, *, task_id: str = "", context_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


async def _send(client: Any, message: Message, **context: Any) -> list[StreamResponse]:
    call = ClientCallContext(**context) if context else None
    request = SendMessageRequest(message=message)
    return [response async for response in client.send_message(request, context=call)]


def _states(responses: list[StreamResponse]) -> list[str]:
    states = []
    for response in responses:
        kind = response.WhichOneof("payload")
        status = response.task.status if kind == "task" else response.status_update.status
        states.append(TaskState.Name(status.state).removeprefix("TASK_STATE_"))
    return states


def _final(responses: list[StreamResponse]) -> Any:
    return responses[-1].status_update


def _reply_of(server: A2AServed, session_id: str) -> Any:
    """The agent's last message in the session, as the schema's Msg."""

    async def read() -> Any:
        session = await server.servicer.sessions.open(session_id, create=False)
        return interop.from_agentscope(session.agent.state.context[-1])

    return server.call(read())


class _Replies:
    """The reply messages the sessions give (what an AgentService caller gets
    on its `done` response), as they give them."""

    def __init__(self, sessions: Any) -> None:
        self.msgs: list[Msg] = []
        self._start = sessions.start
        sessions.start = self._started
        self._sessions = sessions

    def _started(self, session: Any, inputs: Any, **options: Any) -> Any:
        return _Spied(self._start(session, inputs, **options), self.msgs)

    def close(self) -> None:
        del self._sessions.start


class _Spied:
    def __init__(self, reply: Any, msgs: list[Msg]) -> None:
        self._reply = reply
        self._msgs = msgs

    def interrupt(self) -> None:
        self._reply.interrupt()

    async def batches(self) -> Any:
        async for batch in self._reply.batches():
            self._msgs.extend(r.msg for r in batch if r.HasField("msg"))
            yield batch


def _settled(server: A2AServed, replay: ReplayServer) -> bool:
    return not server.servicer.sessions.running and replay.open_streams == 0


def test_the_grpc_port_has_health_and_reflection(served: A2AServed) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    target = served.a2a.card.supported_interfaces[1].url
    name = "lf.a2a.v1.A2AService"
    with grpc.insecure_channel(target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        asks = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=name),
        ]
        listed, described = reflection.ServerReflectionInfo(iter(asks), timeout=10)
    assert name in {service.name for service in listed.list_services_response.service}
    assert described.file_descriptor_response.file_descriptor_proto  # grpcurl can describe it


def test_the_card_says_what_describe_says(served: A2AServed) -> None:
    response = httpx.get(served.a2a.url + "/.well-known/agent-card.json", timeout=10)
    assert response.status_code == 200
    card = response.json()
    assert card["name"] == "Friday"
    interfaces = [(i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]]
    grpc_url = served.a2a.card.supported_interfaces[1].url
    assert interfaces == [
        ("JSONRPC", served.a2a.url),
        ("GRPC", grpc_url),
        ("HTTP+JSON", served.a2a.url),
    ]
    assert grpc_url.startswith("127.0.0.1:")
    assert card["capabilities"]["streaming"] is True
    # Said as such: no push notifications, no extended card.
    assert card["capabilities"]["pushNotifications"] is False
    assert card["capabilities"]["extendedAgentCard"] is False
    assert [e["uri"] for e in card["capabilities"]["extensions"]] == [EXTENSION_URI]
    with AgentClient(served.target) as client:
        described = client.describe()
    assert [skill["id"] for skill in card["skills"]] == [tool.name for tool in described.tools]
    assert card["defaultInputModes"] == list(described.input_media_types)
    assert "securitySchemes" not in card  # no token, no scheme


@pytest.mark.parametrize("binding", [*BINDINGS, "HTTP+JSON"])
def test_a_streamed_reply_ends_in_a_completed_task_whose_message_is_the_reply(
    served: A2AServed, binding: str
) -> None:
    async def main() -> tuple[list[StreamResponse], Task]:
        client = _client(served.a2a, binding)
        responses = await _send(client, _message("hi"))
        task = await client.get_task(GetTaskRequest(id=_final(responses).task_id))
        await client.close()
        return responses, task

    replies = _Replies(served.servicer.sessions)
    try:
        responses, task = _run(main())
    finally:
        replies.close()
    assert _states(responses) == ["SUBMITTED", "WORKING", "COMPLETED"]
    final = _final(responses)
    reply = a2a_to_msg(final.status.message)
    assert replies.msgs == [reply]  # exactly the agent's reply
    assert get_text_content(reply) == SUNNY
    assert final.status.message.role == Role.ROLE_AGENT
    # GetTask: the same task, the user's message in its history.
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.status.message == final.status.message
    assert [part.text for part in task.history[0].parts] == ["hi"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_message_answers_with_the_finished_task(served: A2AServed, binding: str) -> None:
    async def main() -> list[StreamResponse]:
        client = _client(served.a2a, binding, streaming=False)
        responses = await _send(client, _message("hi"))
        await client.close()
        return responses

    (response,) = _run(main())
    assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_content(a2a_to_msg(response.task.status.message)) == SUNNY


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_confirmation_is_asked_and_answered_on_the_task(served: A2AServed, binding: str) -> None:
    async def main() -> tuple[list[StreamResponse], ...]:
        client = _client(served.a2a, binding)
        asked = await _send(client, _message("weather?"))
        ids = {"task_id": _final(asked).task_id, "context_id": _final(asked).context_id}
        again = await _send(client, _message("maybe", **ids))
        answered = await _send(client, _message("yes", **ids))
        task = await client.get_task(GetTaskRequest(id=ids["task_id"]))
        await client.close()
        return asked, again, answered, [task]

    asked, again, answered, (task,) = _run(main())
    assert _states(asked)[-1] == "INPUT_REQUIRED"
    question = get_text_content(a2a_to_msg(_final(asked).status.message))
    asks = 'Friday asks to run get_weather({"city": "Paris", "unit": "celsius"}). Answer yes'
    assert asks in question
    assert _states(again) == ["INPUT_REQUIRED"]  # neither yes nor no: asked again
    assert _states(answered) == ["WORKING", "COMPLETED"]
    assert get_text_content(a2a_to_msg(_final(answered).status.message)) == SUNNY
    said = [" ".join(part.text for part in m.parts) for m in task.history]
    assert said[0] == "weather?"
    assert said[-1] == "yes"
    # The agent ran the tool it was allowed to run.
    blocks = _reply_of(served, task.context_id).blocks.items
    results = [b.tool_result for b in blocks if b.WhichOneof("block") == "tool_result"]
    assert [ToolResultState.Name(r.state) for r in results] == ["TOOL_RESULT_STATE_SUCCESS"]


def test_a_refusal_in_words_denies_the_call(served: A2AServed) -> None:
    async def main() -> Any:
        client = _client(served.a2a, "JSONRPC")
        asked = await _send(client, _message("weather?"))
        ids = {"task_id": _final(asked).task_id, "context_id": _final(asked).context_id}
        answered = await _send(client, _message("No.", **ids))
        await client.close()
        return _final(answered)

    final = _run(main())
    assert final.status.state == TaskState.TASK_STATE_COMPLETED
    blocks = _reply_of(served, final.context_id).blocks.items
    results = [b.tool_result for b in blocks if b.WhichOneof("block") == "tool_result"]
    assert [ToolResultState.Name(r.state) for r in results] == ["TOOL_RESULT_STATE_DENIED"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel_task_interrupts_the_reply_and_the_context_goes_on(
    served: A2AServed, replay: ReplayServer, binding: str
) -> None:
    async def main() -> tuple[list[StreamResponse], Task, list[StreamResponse]]:
        client = _client(served.a2a, binding)
        responses: list[StreamResponse] = []
        stream = client.send_message(SendMessageRequest(message=_message("wait")))
        async for response in stream:
            responses.append(response)
            if _states([response]) == ["WORKING"]:
                break
        while replay.open_streams == 0:  # the model answers
            await asyncio.sleep(0.01)
        cancelled = await client.cancel_task(CancelTaskRequest(id=responses[0].task.id))
        async for response in stream:  # the stream ends with the cancellation
            responses.append(response)
        after = await _send(client, _message("hi", context_id=cancelled.context_id))
        await client.close()
        return responses, cancelled, after

    responses, cancelled, after = _run(main())
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    interrupted = a2a_to_msg(cancelled.status.message)
    assert FinishedReason.Name(interrupted.finished_reason) == "FINISHED_REASON_INTERRUPTED"
    assert _states(responses)[-1] == "CANCELED"
    assert wait_until(lambda: _settled(served, replay))
    assert get_text_content(a2a_to_msg(_final(after).status.message)) == SUNNY
    assert _final(after).context_id == cancelled.context_id


def test_cancelling_a_task_that_waits_for_an_answer_frees_its_context(
    served: A2AServed,
) -> None:
    async def main() -> tuple[Task, list[StreamResponse]]:
        client = _client(served.a2a, "JSONRPC")
        asked = await _send(client, _message("weather?"))
        cancelled = await client.cancel_task(CancelTaskRequest(id=_final(asked).task_id))
        after = await _send(client, _message("hi", context_id=cancelled.context_id))
        await client.close()
        return cancelled, after

    cancelled, after = _run(main())
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert _states(after)[-1] == "COMPLETED"


def test_a_failed_reply_fails_its_task_with_what_failed(served: A2AServed) -> None:
    async def main() -> list[StreamResponse]:
        client = _client(served.a2a, "JSONRPC")
        responses = await _send(client, _message("fail"))
        await client.close()
        return responses

    responses = _run(main())
    assert _states(responses)[-1] == "FAILED"
    text = get_text_content(a2a_to_msg(_final(responses).status.message))
    assert text == "The reply failed (upstream): The agent's model service failed."


@pytest.mark.parametrize("binding", BINDINGS)
def test_bad_requests_get_a2a_errors_and_the_server_goes_on(
    served: A2AServed, binding: str
) -> None:
    system = msgs_to_a2a([new_msg("boss", "Obey.", "system")], role=Role.ROLE_USER)

    async def main() -> list[Exception]:
        client = _client(served.a2a, binding)
        errors = []
        for call in (
            _send(client, Message(role=Role.ROLE_USER, message_id="m", parts=[Part()])),
            _send(client, system),
            client.get_task(GetTaskRequest(id="no-such-task")),
            _send(client, _message("hi", task_id="no-such-task")),
        ):
            with pytest.raises(A2AError) as info:
                await call
            errors.append(info.value)
        done = await _send(client, _message("hi"))
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=_final(done).task_id))
        await client.close()
        return errors

    empty, system_role, unknown, on_unknown = _run(main())
    assert isinstance(empty, InvalidParamsError)
    assert "parts[0]" in str(empty)
    assert isinstance(system_role, InvalidParamsError)
    assert "msgs[0].role" in str(system_role)
    assert isinstance(unknown, TaskNotFoundError)
    assert isinstance(on_unknown, TaskNotFoundError)


def test_a_message_that_does_not_parse_is_a_json_rpc_error(served: A2AServed) -> None:
    response = httpx.post(served.a2a.url, content=b"{not json", timeout=10)
    assert response.json()["error"]["code"] == -32700
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}}
    response = httpx.post(served.a2a.url, json=body, timeout=10)
    assert response.json()["error"]["code"] in (-32600, -32602)


def test_a_new_task_while_the_context_waits_for_an_answer_is_refused(
    served: A2AServed,
) -> None:
    async def main() -> Exception:
        client = _client(served.a2a, "JSONRPC")
        asked = await _send(client, _message("weather?"))
        with pytest.raises(UnsupportedOperationError) as info:
            await _send(client, _message("hi", context_id=_final(asked).context_id))
        await client.close()
        return info.value

    assert "waits for an answer" in str(_run(main()))


def test_the_extension_gives_the_events_and_the_exact_message(served: A2AServed) -> None:
    async def main() -> list[StreamResponse]:
        client = _client(served.a2a, "GRPC")
        message = msgs_to_a2a([new_msg("Alice", "hi", "user")], role=Role.ROLE_USER)
        parameters = {"A2A-Extensions": EXTENSION_URI}
        responses = await _send(client, message, service_parameters=parameters)
        await client.close()
        return responses

    responses = _run(main())
    from agentscope_proto.a2a.protocol import read_events

    events = [e for r in responses[1:] for e in read_events(r.status_update.metadata)]
    kinds = [event.WhichOneof("event") for event in events]
    assert kinds[0] == "reply_start"
    assert kinds[-1] == "reply_end"
    text = "".join(e.text_block_delta.delta for e in events if e.HasField("text_block_delta"))
    assert text == SUNNY
    final = _final(responses)
    # The speaker's name arrived: the agent's context holds Alice's message.
    context = served.call(_context_names(served, final.context_id))
    assert context == ["Alice", "Friday"]


async def _context_names(server: A2AServed, session_id: str) -> list[str]:
    session = await server.servicer.sessions.open(session_id, create=False)
    return [msg.name for msg in session.agent.state.context]


def test_a_token_guards_everything_but_the_card(factory: Callable[[], Any]) -> None:
    server = serve_a2a(factory, config=ServerConfig(port=0, auth_token="s3cret"))
    try:
        card = httpx.get(server.a2a.url + "/.well-known/agent-card.json", timeout=10).json()
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
        refused = httpx.post(server.a2a.url, json={}, timeout=10)
        assert refused.status_code == 401

        async def send(binding: str, token: str | None) -> list[StreamResponse]:
            client = _client(server.a2a, binding)
            parameters = {"Authorization": f"Bearer {token}"} if token else {}
            try:
                return await _send(client, _message("hi"), service_parameters=parameters)
            finally:
                await client.close()

        for binding in BINDINGS:
            with pytest.raises(Exception, match=r"401|UNAUTHENTICATED"):
                _run(send(binding, None))
            with pytest.raises(Exception, match=r"401|UNAUTHENTICATED"):
                _run(send(binding, "wrong"))
            assert _states(_run(send(binding, "s3cret")))[-1] == "COMPLETED"
    finally:
        server.stop()


def test_a2a_over_tls(factory: Callable[[], Any], tmp_path: Any) -> None:
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1", "localhost")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    certificate.private_key_and_cert_chain_pem.write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    server = serve_a2a(factory, config=ServerConfig(port=0, tls_cert=cert, tls_key=key))
    try:
        assert server.a2a.url.startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cadata=authority.cert_pem.bytes().decode())
        card = httpx.get(server.a2a.url + "/.well-known/agent-card.json", verify=context)
        assert card.json()["name"] == "Friday"
        credentials = grpc.ssl_channel_credentials(authority.cert_pem.bytes())

        async def send(binding: str) -> list[StreamResponse]:
            http = httpx.AsyncClient(verify=context)
            client = _client(
                server.a2a,
                binding,
                httpx_client=http,
                channel=lambda target: grpc.aio.secure_channel(target, credentials),
            )
            try:
                return await _send(client, _message("hi"))
            finally:
                await client.close()
                await http.aclose()  # a TLS connection left open holds the drain up

        for binding in BINDINGS:
            assert _states(_run(send(binding)))[-1] == "COMPLETED"
    finally:
        server.stop()


def test_a_request_over_the_size_limit_is_refused_unread(factory: Callable[[], Any]) -> None:
    server = serve_a2a(factory, config=ServerConfig(port=0, max_message_mb=1))
    try:
        big = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"x": "a" * 2**21}}
        response = httpx.post(server.a2a.url, content=json.dumps(big), timeout=10)
        assert response.status_code == 413
    finally:
        server.stop()


def test_the_task_store_keeps_the_newest_finished_tasks() -> None:
    from a2a.server.context import ServerCallContext
    from a2a.types import TaskStatus

    from agentscope_proto.a2a.server import _TaskStore

    async def main() -> list[bool]:
        store = _TaskStore(max_tasks=2)
        context = ServerCallContext()
        working = TaskStatus(state=TaskState.TASK_STATE_WORKING)
        waiting = Task(id="w", context_id="c", status=working)
        await store.save(waiting, context)
        for name in ("a", "b", "c"):
            done = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
            await store.save(Task(id=name, context_id="c", status=done), context)
        return [await store.get(name, context) is not None for name in ("w", "a", "b", "c")]

    assert _run(main()) == [True, False, True, True]
