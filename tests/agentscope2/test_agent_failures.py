"""What an agent's own failures do to the AgentService, over real channels
with a real AgentScope 2.x agent: a reply fails with a typed status and a
fixed text (the cause stays in the server's log), the server and the
session go on. A structured-output schema the agent cannot take is refused
before it sees it; a factory that fails is named; `CancelledError`,
`SystemExit` and `KeyboardInterrupt` raised by the agent's code end its
reply as a failure, not as a success or the server's end (a real SIGINT
still stops the server); the server listens on IPv6 loopback, and its log
says where it listens when the agent card lists another host.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

import agentscope_proto
from agentscope_proto import get_text_content
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import FinishedReason
from agentscope_proto.agents import AgentClient, reply_request
from agentscope_proto.agents.hosting.failures import MESSAGES
from agentscope_proto.errors import AgentReplyError

from agent_processes import HERE, AgentProcess
from failing_agents import RAISES, failing
from hosted import SUNNY, AgentServer, serve, user
from replay_agent import make_agent
from replay_server import ReplayServer


@pytest.fixture(scope="module")
def failing_served(replay: ReplayServer) -> Iterator[AgentServer]:
    server = serve(lambda: failing(replay.base_url))
    yield server
    server.stop()


def _failed_call(target: str, request: pb.ReplyRequest) -> tuple[list[Any], grpc.RpcError]:
    """The responses before the status, and the status."""
    responses: list[pb.ReplyResponse] = []
    with grpc.insecure_channel(target) as channel:
        call = pb_grpc.AgentServiceStub(channel).Reply(request, timeout=30)
        with pytest.raises(grpc.RpcError) as info:
            responses.extend(call)
    return responses, info.value


def _error_info(error: grpc.RpcError) -> Any:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, error
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return status, info
    raise AssertionError(f"no ErrorInfo in {status}")


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(
    "schema",
    [
        _nested(300),  # past the JSON depth every JSON field keeps
        {"type": "array", "items": {"type": "string"}},  # the output is an object
        {"type": "object"},  # AgentScope takes it as a tool's input schema: properties
    ],
    ids=["300-deep", "array", "no-properties"],
)
def test_a_schema_the_agent_cannot_take_is_invalid_argument(
    served: AgentServer, replay: ReplayServer, schema: dict[str, Any]
) -> None:
    calls = len(replay.requests)
    request = reply_request(user("where am I?"))
    request.structured_schema_json = json.dumps(schema)
    responses, error = _failed_call(served.target, request)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    bad = error_details_pb2.BadRequest()
    assert any(detail.Unpack(bad) for detail in status.details)
    assert bad.field_violations[0].field == "structured_schema_json"
    assert responses == []
    assert len(replay.requests) == calls


def test_a_factory_that_raises_is_named_without_its_internals(replay: ReplayServer) -> None:
    works = True  # for the agent that tells what the agents are

    def factory() -> Any:
        if not works:
            raise RuntimeError("secret-dsn://internal")
        return make_agent(replay.base_url)

    server = serve(factory)
    works = False
    try:
        with AgentClient(server.target) as client:
            for call in (lambda: client.reply(user("hi")), lambda: client.observe(user("hi"))):
                with pytest.raises(AgentReplyError) as raised:
                    call()
                assert raised.value.error_type == "setup"
                assert raised.value.message == MESSAGES["setup"]
            _, error = _failed_call(server.target, reply_request(user("hi")))
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
            status, info = _error_info(error)
            assert info.metadata["error_type"] == "setup"
            assert "secret" not in status.message
            assert len(server.servicer.sessions) == 0
            works = True  # the factory works again: so does the server
            assert get_text_content(client.reply(user("hi"))) == SUNNY
    finally:
        server.stop()


@pytest.mark.parametrize("words", sorted(RAISES))
def test_what_the_agent_raises_fails_its_reply_and_nothing_more(
    failing_served: AgentServer, words: str
) -> None:
    responses, error = _failed_call(failing_served.target, reply_request(user(words)))
    assert error.code() == grpc.StatusCode.INTERNAL
    status, info = _error_info(error)
    assert info.metadata["error_type"] == "internal"
    assert status.message == MESSAGES["internal"]
    kinds = [r.event.WhichOneof("event") for r in responses]
    assert kinds[0] == "reply_start"
    assert kinds[-1] == "reply_end"
    last = responses[-1]
    assert last.done
    assert last.event.reply_end.finished_reason == FinishedReason.FINISHED_REASON_ERROR
    assert last.msg.finished_reason == FinishedReason.FINISHED_REASON_ERROR
    # The session and the server go on.
    session = responses[0].event.reply_start.session_id
    with AgentClient(failing_served.target) as client:
        assert get_text_content(client.reply(user("hi"), session_id=session)) == SUNNY
    assert not failing_served.servicer.sessions.running


_PACKAGE_ROOT = str(Path(agentscope_proto.__file__).resolve().parents[1])


@pytest.fixture
def ipv6_process(replay: ReplayServer) -> Iterator[AgentProcess]:
    env = {
        **os.environ,
        "FRIDAY_MODEL_URL": replay.base_url,
        # The process serves the package these tests import (a checkout's too).
        "PYTHONPATH": os.pathsep.join([_PACKAGE_ROOT, str(HERE.parent), str(HERE)]),
    }
    flags = ["--host", "::1", "--port", "0", "--a2a-port", "0", "--a2a-host", "agents.test"]
    process = AgentProcess(["failing_agents:friday", *flags], env)
    try:
        yield process
    finally:
        if process.process.poll() is None:
            process.stop()


def test_on_ipv6_loopback_an_agent_exit_fails_its_reply_and_sigint_still_stops_it(
    ipv6_process: AgentProcess,
) -> None:
    target = ipv6_process.wait_listening()
    assert target.startswith("[::1]:")
    line = next(line for line in ipv6_process.log if "listening on" in line)
    found = re.search(
        r"(http://\[::1\]:(\d+)) \(A2A JSON-RPC, HTTP\+JSON; the card lists (\S+)\)", line
    )
    assert found, line
    assert found.group(3) == f"http://agents.test:{found.group(2)}"
    card = httpx.get(found.group(1) + "/.well-known/agent-card.json", timeout=10).json()
    assert card["supportedInterfaces"][0]["url"] == found.group(3)
    with AgentClient(target) as client:
        for words in ("exit", "interrupt yourself"):
            with pytest.raises(AgentReplyError) as raised:
                client.reply(user(words))
            assert raised.value.error_type == "internal"
        assert get_text_content(client.reply(user("hi"))) == SUNNY
    ipv6_process.process.send_signal(signal.SIGINT)
    assert ipv6_process.process.wait(30) == 0
    log = "".join(ipv6_process.log)
    assert "SystemExit" in log  # the causes, logged
    assert "KeyboardInterrupt" in log
    assert "stopped" in log
