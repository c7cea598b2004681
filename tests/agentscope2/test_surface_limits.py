"""Limits of the agent surfaces against real servers (SECURITY.md, "Surfaces
and limits"): a request over `--max-message-mb` is refused by gRPC before any
handler reads it, on the AgentService port and the A2A gRPC port; A2A fetches
no push notification URL, keeps `--a2a-max-tasks` finished tasks, and its
contexts are sessions, held to `--max-sessions`."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from typing import Any

import grpc
import httpx
import pytest

from agentscope_proto.a2a.server import start_a2a
from agentscope_proto.agents import SERVICE_NAME, AgentConfig
from agentscope_proto.agents.config import A2AConfig
from agentscope_proto.service import ServerConfig

from hosted import serve, serve_a2a

TOO_BIG = b"x" * (2 * 1024 * 1024)  # over 1 MB: gRPC refuses it before decoding


def _refused(target: str, method: str, *, streaming: bool) -> grpc.StatusCode:
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_stream(method) if streaming else channel.unary_unary(method)
        with pytest.raises(grpc.RpcError) as info:
            list(call(TOO_BIG, timeout=10)) if streaming else call(TOO_BIG, timeout=10)
    code: grpc.StatusCode = info.value.code()
    return code


def test_an_agent_request_over_the_size_limit_is_resource_exhausted(
    factory: Callable[[], Any],
) -> None:
    server = serve(factory, config=ServerConfig(port=0, max_message_mb=1))
    try:
        for method, streaming in (("Reply", True), ("Observe", False)):
            code = _refused(server.target, f"/{SERVICE_NAME}/{method}", streaming=streaming)
            assert code is grpc.StatusCode.RESOURCE_EXHAUSTED, method
    finally:
        server.stop()


def test_an_a2a_grpc_request_over_the_size_limit_is_resource_exhausted(
    factory: Callable[[], Any],
) -> None:
    server = serve_a2a(factory, config=ServerConfig(port=0, max_message_mb=1))
    try:
        target = server.a2a.card.supported_interfaces[1].url
        code = _refused(target, "/lf.a2a.v1.A2AService/SendMessage", streaming=False)
        assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        server.stop()


def test_a2a_fetches_no_push_notification_url(factory: Callable[[], Any]) -> None:
    server = serve_a2a(factory)
    hook = socket.create_server(("127.0.0.1", 0))
    try:
        card = httpx.get(server.a2a.url + "/.well-known/agent-card.json", timeout=10).json()
        assert card["capabilities"].get("pushNotifications", False) is False
        url = f"http://127.0.0.1:{hook.getsockname()[1]}/hook"
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "CreateTaskPushNotificationConfig",
            "params": {"taskId": "t", "url": url},
        }
        headers = {"A2A-Version": "1.0"}
        answer = httpx.post(server.a2a.url, json=call, headers=headers, timeout=10).json()
        assert answer["error"]["code"] == -32003  # PushNotificationNotSupportedError
        hook.settimeout(0.5)
        with pytest.raises(TimeoutError):
            hook.accept()  # nobody called the URL
    finally:
        hook.close()
        server.stop()


def _json_rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    call = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer: dict[str, Any] = httpx.post(
        url, json=call, headers={"A2A-Version": "1.0"}, timeout=30
    ).json()
    return answer


def test_a2a_keeps_at_most_max_tasks_finished_tasks(factory: Callable[[], Any]) -> None:
    server = serve(factory)
    a2a = server.call(
        start_a2a(server.servicer, A2AConfig(port=0, grpc_port=0, max_tasks=2), server.config)
    )
    try:
        url = str(a2a.card.supported_interfaces[0].url)
        tasks = []
        for _ in range(3):
            message = {
                "role": "ROLE_USER",
                "messageId": uuid.uuid4().hex,
                "parts": [{"text": "hi"}],
            }
            answer = _json_rpc(url, "SendMessage", {"message": message})
            assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
            tasks.append(answer["result"]["task"]["id"])
        forgotten, *kept = (_json_rpc(url, "GetTask", {"id": task}) for task in tasks)
        assert forgotten["error"]["code"] == -32001  # TaskNotFoundError
        assert [answer["result"]["id"] for answer in kept] == tasks[1:]
    finally:
        server.call(a2a.stop(0))
        server.stop()


def test_a2a_contexts_count_against_max_sessions(factory: Callable[[], Any]) -> None:
    server = serve_a2a(factory, AgentConfig(max_sessions=1))
    try:
        answers = []
        for _ in range(2):
            message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex}
            message["parts"] = [{"text": "hi"}]
            answers.append(_json_rpc(server.a2a.url, "SendMessage", {"message": message}))
        assert answers[0]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert answers[1]["error"]["message"].startswith("max_sessions:"), answers[1]
    finally:
        server.stop()
