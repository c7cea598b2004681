"""The AgentService hosting a real AgentScope 2.x agent, over a real channel.

Each reply streams the agent's events as it makes them, typed, and ends with
a `done` response carrying the reply's message; a reply that stops to ask
the caller is answered by replying again; bad input is refused before any
agent sees it; a failing agent ends its reply with the error and a typed
status, and the server keeps serving; sessions keep callers apart.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from agentscope_proto import get_text_content
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as events
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    FinishedReason,
    Msg,
    Role,
    ToolCallState,
    ToolResultState,
)
from agentscope_proto.agents import (
    SERVICE_NAME,
    AgentClient,
    AgentConfig,
    AsyncAgentClient,
    reply_request,
)
from agentscope_proto.errors import AgentReplyError, LimitExceededError, SessionStateError
from agentscope_proto.service import ServerConfig

from hosted import SUNNY, AgentServer, serve, user
from replay_server import ReplayServer
from server_harness import RunningServer


@pytest.fixture
def client(served: RunningServer) -> Iterator[AgentClient]:
    with AgentClient(served.target) as agent:
        yield agent


def _kinds(items: list[Any]) -> list[str]:
    return [
        item.WhichOneof("event") if isinstance(item, events.AgentEvent) else "msg" for item in items
    ]


def _event(items: list[Any], kind: str) -> Any:
    return next(getattr(i, kind) for i in items if _kinds([i]) == [kind])


def _responses(target: str, request: pb.ReplyRequest) -> list[pb.ReplyResponse]:
    with grpc.insecure_channel(target) as channel:
        return list(pb_grpc.AgentServiceStub(channel).Reply(request, timeout=30))


def _status(error: grpc.RpcError) -> Any:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, error
    return status


def _detail(status: Any, kind: type) -> Any:
    for detail in status.details:
        message = kind()
        if detail.Unpack(message):
            return message
    raise AssertionError(f"no {kind.__name__} in {status}")


def test_a_reply_streams_typed_events_and_ends_done_with_the_reply(served: RunningServer) -> None:
    responses = _responses(served.target, reply_request(user("hi")))
    assert len(responses) > 5
    assert all(r.HasField("event") for r in responses)
    assert [r.done for r in responses] == [False] * (len(responses) - 1) + [True]
    assert [r.HasField("msg") for r in responses][-2:] == [False, True]
    kinds = [r.event.WhichOneof("event") for r in responses]
    assert kinds[0] == "reply_start"
    assert kinds[-1] == "reply_end"
    assert {"model_call_start", "text_block_start", "text_block_delta"} <= set(kinds)
    text = "".join(r.event.text_block_delta.delta for r in responses)
    assert text == SUNNY
    reply = responses[-1].msg
    assert get_text_content(reply) == SUNNY
    assert reply.role == Role.ROLE_ASSISTANT
    assert reply.name == "Friday"
    assert reply.finished_reason == FinishedReason.FINISHED_REASON_COMPLETED
    start = responses[0].event.reply_start
    assert reply.id == start.reply_id
    assert responses[-1].event.reply_end.session_id == start.session_id


def test_events_arrive_while_the_agent_still_works(served: AgentServer) -> None:
    """Each event is sent as it comes: all of them up to the model call reach
    the caller while the model has not answered (it never will)."""

    async def until_the_model_call() -> list[str]:
        async with AsyncAgentClient(served.target) as agent:
            kinds: list[str] = []
            async for item in agent.reply_stream(user("wait")):
                kinds.append(item.WhichOneof("event"))
                if kinds[-1] == "model_call_start":
                    return kinds
        return kinds

    kinds = asyncio.run(asyncio.wait_for(until_the_model_call(), 30))
    assert kinds[0] == "reply_start"
    assert kinds[-1] == "model_call_start"


def test_a_confirmation_is_asked_and_answered(client: AgentClient) -> None:
    asked = list(client.reply_stream(user("weather?")))
    assert _kinds(asked)[-2:] == ["require_user_confirm", "msg"]
    request = _event(asked, "require_user_confirm")
    (call,) = request.tool_calls
    assert call.name == "get_weather"
    assert json.loads(call.input_json) == {"city": "Paris", "unit": "celsius"}
    assert call.state == ToolCallState.TOOL_CALL_STATE_ASKING
    assert [rule.tool_name for rule in call.suggested_rules] == ["get_weather"]
    session = _event(asked, "reply_start").session_id
    answer = events.UserConfirmResultEvent(
        reply_id=request.reply_id,
        confirm_results=[events.ConfirmResult(confirmed=True, tool_call=call)],
    )
    answered = list(client.reply_stream(answer=answer, session_id=session))
    kinds = _kinds(answered)
    assert "reply_start" not in kinds  # the same reply goes on
    assert kinds[:3] == ["tool_result_start", "tool_result_text_delta", "tool_result_end"]
    assert _event(answered, "tool_result_text_delta").delta == "Sunny in Paris, 21°C"
    assert _event(answered, "tool_result_end").state == ToolResultState.TOOL_RESULT_STATE_SUCCESS
    assert kinds[-2:] == ["reply_end", "msg"]
    assert get_text_content(answered[-1]) == SUNNY
    assert answered[-1].id == request.reply_id


def test_a_refused_call_is_denied(client: AgentClient) -> None:
    asked = list(client.reply_stream(user("weather?")))
    request = _event(asked, "require_user_confirm")
    answer = {
        "type": "USER_CONFIRM_RESULT",  # an answer may come as 2.x's event dict
        "reply_id": request.reply_id,
        "confirm_results": [
            {
                "confirmed": False,
                "tool_call": {"id": request.tool_calls[0].id, "name": "get_weather", "input": ""},
            }
        ],
    }
    session = _event(asked, "reply_start").session_id
    answered = list(client.reply_stream(answer=answer, session_id=session))
    assert _event(answered, "tool_result_end").state == ToolResultState.TOOL_RESULT_STATE_DENIED
    assert _kinds(answered)[-2:] == ["reply_end", "msg"]


def test_external_execution_is_handed_over_and_taken_back(client: AgentClient) -> None:
    first = list(client.reply_stream(user("three tools")))
    session = _event(first, "reply_start").session_id
    asked = _event(first, "require_user_confirm")
    confirm = events.UserConfirmResultEvent(
        reply_id=asked.reply_id,
        confirm_results=[
            events.ConfirmResult(confirmed=True, tool_call=c) for c in asked.tool_calls
        ],
    )
    second = list(client.reply_stream(answer=confirm, session_id=session))
    handed = _event(second, "require_external_execution")
    assert {call.name for call in handed.tool_calls} == {"web_search"}
    result = {
        "type": "EXTERNAL_EXECUTION_RESULT",
        "reply_id": handed.reply_id,
        "execution_results": [
            {
                "type": "tool_result",
                "id": call.id,
                "name": call.name,
                "output": "3 results",
                "state": "success",
            }
            for call in handed.tool_calls
        ],
    }
    third = list(client.reply_stream(answer=result, session_id=session))
    assert _kinds(third)[-2:] == ["reply_end", "msg"]
    assert _event(third, "reply_end").finished_reason == FinishedReason.FINISHED_REASON_COMPLETED


def test_a_waiting_reply_is_interrupted_by_an_answer(
    client: AgentClient, served: RunningServer
) -> None:
    asked = list(client.reply_stream(user("weather?")))
    request = _event(asked, "require_user_confirm")
    session = _event(asked, "reply_start").session_id
    interrupt = events.UserInterruptEvent(reply_id=request.reply_id)
    ended = list(client.reply_stream(answer=interrupt, session_id=session))
    assert _event(ended, "tool_result_end").state == (ToolResultState.TOOL_RESULT_STATE_INTERRUPTED)
    end = _event(ended, "reply_end")
    assert end.finished_reason == FinishedReason.FINISHED_REASON_INTERRUPTED
    assert ended[-1].finished_reason == FinishedReason.FINISHED_REASON_INTERRUPTED
    # Nothing waits now: interrupting again has nothing to do (2.x: a no-op).
    responses = _responses(served.target, reply_request(answer=interrupt, session_id=session))
    assert [(r.done, r.HasField("event"), r.HasField("msg")) for r in responses] == [
        (True, False, False)
    ]
    assert _kinds(list(client.reply_stream(user("hi"), session_id=session)))[-1] == "msg"


def test_answers_the_session_did_not_ask_for_are_failed_preconditions(
    client: AgentClient, served: RunningServer
) -> None:
    session = _event(list(client.reply_stream(user("hi"))), "reply_start").session_id
    confirm = events.UserConfirmResultEvent(reply_id="r")
    cases = [
        (reply_request(answer=confirm, session_id=session), "user_confirm_result"),
        (reply_request(answer=confirm, session_id="no-such-session"), "session_id"),
    ]
    asked = list(client.reply_stream(user("weather?")))
    parked = _event(asked, "reply_start").session_id
    cases.append((reply_request(user("hi"), session_id=parked), "msgs"))
    wrong_call = events.UserConfirmResultEvent(
        reply_id="r",
        confirm_results=[
            events.ConfirmResult(
                confirmed=True,
                tool_call={"id": "other", "name": "get_weather", "input_json": "{}"},
            )
        ],
    )
    cases.append(
        (
            reply_request(answer=wrong_call, session_id=parked),
            "user_confirm_result.confirm_results[0]",
        )
    )
    for request, field in cases:
        with pytest.raises(grpc.RpcError) as info:
            _responses(served.target, request)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        violation = _detail(_status(info.value), error_details_pb2.PreconditionFailure)
        assert violation.violations[0].type == "SESSION_STATE"
        assert violation.violations[0].subject == field
    with pytest.raises(SessionStateError, match="no session"):
        client.reply(answer=confirm, session_id="no-such-session")


def _bad_role() -> Msg:
    msg = Msg(name="user", text="hi")
    msg.role = 9  # type: ignore[assignment]  # a value this schema does not know
    return msg


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (reply_request(_bad_role()), "msgs[0].role"),
        (reply_request({"name": "s", "role": "system", "content": "be terse"}), "msgs[0].role"),
        (
            reply_request(
                {
                    "name": "user",
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "hmm"}],
                }
            ),
            "msgs[0].content[0]",
        ),
        (
            reply_request(user("hi"), answer=events.UserInterruptEvent(reply_id="r")),
            "user_interrupt",
        ),
        (
            pb.ReplyRequest(
                msgs=[Msg(name="user", role=Role.ROLE_USER, text="hi")],
                structured_schema_json="[1]",
            ),
            "structured_schema_json",
        ),
        (pb.ReplyRequest(session_id="x" * 500), "session_id"),
    ],
)
def test_bad_input_is_refused_before_any_agent_sees_it(
    served: RunningServer, replay: ReplayServer, request_: pb.ReplyRequest, field: str
) -> None:
    calls = len(replay.requests)
    with pytest.raises(grpc.RpcError) as info:
        _responses(served.target, request_)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    bad = _detail(_status(info.value), error_details_pb2.BadRequest)
    assert bad.field_violations[0].field == field
    assert len(replay.requests) == calls


def test_a_request_that_does_not_decode_is_invalid_argument(served: RunningServer) -> None:
    with grpc.insecure_channel(served.target) as channel:
        call = channel.unary_stream(f"/{SERVICE_NAME}/Reply")
        with pytest.raises(grpc.RpcError) as info:
            list(call(b"\xff\xff\xff", timeout=10))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    ("words", "error_type", "code"),
    [
        ("fail", "upstream", grpc.StatusCode.UNAVAILABLE),
        ("rate limited", "rate_limit", grpc.StatusCode.RESOURCE_EXHAUSTED),
    ],
)
def test_a_failing_agent_ends_its_reply_with_the_error_and_a_typed_status(
    served: RunningServer, client: AgentClient, words: str, error_type: str, code: Any
) -> None:
    responses: list[pb.ReplyResponse] = []
    with grpc.insecure_channel(served.target) as channel:
        call = pb_grpc.AgentServiceStub(channel).Reply(reply_request(user(words)), timeout=30)
        with pytest.raises(grpc.RpcError) as info:
            responses.extend(call)  # what came before the status stays
    assert info.value.code() == code
    status = _status(info.value)
    assert "Traceback" not in status.message
    assert "recorded failure" not in status.message  # the provider's text stays on the server
    assert _detail(status, error_details_pb2.ErrorInfo).metadata["error_type"] == error_type
    assert [r.event.WhichOneof("event") for r in responses][-1] == "reply_end"
    last = responses[-1]
    assert last.done
    end = last.event.reply_end
    assert end.finished_reason == FinishedReason.FINISHED_REASON_ERROR
    assert end.error.message == status.message
    assert last.msg.finished_reason == FinishedReason.FINISHED_REASON_ERROR
    assert last.msg.error == end.error
    with pytest.raises(AgentReplyError) as raised:
        client.reply(user(words))
    assert raised.value.error_type == error_type
    assert raised.value.msg is not None
    # The server and the session go on.
    session = responses[0].event.reply_start.session_id
    assert get_text_content(client.reply(user("hi"), session_id=session)) == SUNNY


def test_an_empty_request_goes_on_as_reply_none_does(client: AgentClient) -> None:
    session = _event(list(client.reply_stream(user("hi"))), "reply_start").session_id
    went_on = list(client.reply_stream(session_id=session))
    assert _kinds(went_on)[0] == "reply_start"  # a new reply, on the session's context
    assert get_text_content(went_on[-1]) == SUNNY


def test_observe_refuses_bad_messages_before_any_agent_sees_them(
    served: AgentServer, replay: ReplayServer
) -> None:
    sessions = len(served.servicer.sessions)
    with grpc.insecure_channel(served.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.Observe(pb.ObserveRequest(msgs=[_bad_role()]), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    bad = _detail(_status(info.value), error_details_pb2.BadRequest)
    assert bad.field_violations[0].field == "msgs[0].role"
    assert len(served.servicer.sessions) == sessions


def test_sessions_keep_callers_apart(client: AgentClient, replay: ReplayServer) -> None:
    client.reply(user("think first"))
    before = len(replay.requests)
    client.reply(user("hi"))  # another session
    (request,) = replay.requests[before:]
    assert "think first" not in json.dumps(request["messages"])
    first = _event(list(client.reply_stream(user("hi"))), "reply_start").session_id
    client.reply(user("think first"), session_id=first)
    assert "hi" in json.dumps(replay.requests[-1]["messages"])


def test_observed_messages_are_remembered(client: AgentClient, replay: ReplayServer) -> None:
    session = client.observe(
        [{"name": "Bob", "role": "assistant", "content": "Remember: the sky is green."}]
    )
    assert len(session) == 32
    client.reply(user("hi"), session_id=session)
    assert "the sky is green" in json.dumps(replay.requests[-1]["messages"])
    assert client.observe(user("more"), session_id=session) == session


def test_describe_says_enough_for_an_agent_card(served: RunningServer) -> None:
    with AgentClient(served.target) as client:
        card = client.describe()
    assert card.name == "Friday"
    assert card.framework == "agentscope 2.0.11"
    assert [tool.name for tool in card.tools] == ["get_weather", "get_time", "web_search"]
    weather = card.tools[0]
    assert weather.description.startswith("Get the weather of a city.")
    assert json.loads(weather.input_schema_json)["required"] == ["city"]
    assert "text/plain" in card.input_media_types
    assert "image/*" in card.input_media_types
    assert list(card.answers) == [
        "user_confirm_result",
        "external_execution_result",
        "user_interrupt",
    ]
    assert "text_block_delta" in card.events
    assert "user_confirm_result" not in card.events
    assert card.structured_output


def test_a_structured_output_comes_with_the_reply(client: AgentClient) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    }
    reply = client.reply(user("where am I?"), structured_schema=schema)
    assert json.loads(reply.structured_output_json) == {"city": "Paris", "unit": "celsius"}


def test_health_and_reflection_list_the_agent_service(served: RunningServer) -> None:
    with grpc.insecure_channel(served.target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (response,) = reflection.ServerReflectionInfo(iter([request]), timeout=10)
    names = {service.name for service in response.list_services_response.service}
    assert SERVICE_NAME in names
    assert "agentscope.formatter.v1.FormatterService" not in names


def test_a_token_guards_every_rpc_but_health(factory: Callable[[], Any]) -> None:
    server = serve(factory, config=ServerConfig(port=0, auth_token="s3cret"))
    try:
        with AgentClient(server.target) as client, pytest.raises(Exception, match="UNAUTH"):
            client.describe()
        with AgentClient(server.target, token="s3cret") as client:
            assert client.describe().name == "Friday"
        with grpc.insecure_channel(server.target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=10).status == 1
    finally:
        server.stop()


def test_sessions_are_bounded_and_idle_ones_dropped(factory: Callable[[], Any]) -> None:
    server = serve(factory, AgentConfig(max_sessions=2, session_idle_seconds=1.0))
    try:
        with AgentClient(server.target) as client:
            first = client.observe(user("one"))
            client.observe(user("two"))
            with pytest.raises(LimitExceededError) as info:
                client.observe(user("three"))
            assert info.value.path == "max_sessions"
            assert client.observe(user("again"), session_id=first) == first  # it exists
            time.sleep(1.1)  # both idle past the limit now
            client.observe(user("three"))
            with pytest.raises(SessionStateError, match="no session"):
                client.reply(answer=events.UserInterruptEvent(reply_id="r"), session_id=first)
    finally:
        server.stop()


def test_concurrent_replies_are_bounded(factory: Callable[[], Any]) -> None:
    server = serve(factory, AgentConfig(max_replies=1))
    try:
        with AgentClient(server.target) as client:
            stream = client.reply_stream(user("wait"))
            next(stream)  # running, and hanging
            with pytest.raises(LimitExceededError) as info:
                client.reply(user("hi"))
            assert info.value.path == "max_replies"
            stream.close()
    finally:
        server.stop()
