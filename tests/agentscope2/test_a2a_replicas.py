"""A2A tasks across replicas: two servers with their A2A servers on one real
redis-server (`AgentConfig.state`), real AgentScope 2.x agents on the
replayed model, driven by a2a-sdk's own client. A task running on replica A
is cancelled through replica B (A's agent is interrupted and closes its
reply; the task ends canceled on both), and a SubscribeToTask on B gets the
rest of a task running on A, as A's own caller gets it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError

import agentscope_proto
from agentscope_proto import get_text_content
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import FinishedReason
from agentscope_proto.a2a import EXTENSION_URI, RESUME_KEY, a2a_to_msg
from agentscope_proto.a2a.protocol import read_events
from agentscope_proto.agents import AgentConfig

from hosted import SUNNY, A2AServed, serve_a2a
from hub_fixtures import RedisServer
from replay_agent import make_agent
from replay_server import ReplayServer, wait_until

# The package these tests import (a checkout's), for a replica's process to serve.
_PACKAGE_ROOT = str(Path(agentscope_proto.__file__).resolve().parents[1])
# Each step's bound: a test that would wait longer fails instead of hanging.
_STEP_S = 30
_WITH_EXTENSION = {"A2A-Extensions": EXTENSION_URI}


@pytest.fixture(scope="module")
def replicas(
    factory: Callable[[], Any], redis_server: RedisServer
) -> Iterator[tuple[A2AServed, A2AServed]]:
    config = AgentConfig(state=redis_server.url, lease_seconds=1)
    a = serve_a2a(factory, config)
    try:
        b = serve_a2a(factory, config)
    except BaseException:
        a.stop()
        raise
    yield a, b
    a.stop()
    b.stop()


def _client(server: A2AServed, binding: str = "JSONRPC", *, streaming: bool = True) -> Any:
    options = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return ClientFactory(options).create(server.a2a.card)


def _message(text: str, *, context_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        parts=[Part(text=text)],
        context_id=context_id,
    )


def _state(response: StreamResponse) -> str:
    kind = response.WhichOneof("payload")
    status = response.task.status if kind == "task" else response.status_update.status
    return TaskState.Name(status.state).removeprefix("TASK_STATE_")


def _events(responses: list[StreamResponse]) -> list[Any]:
    return [
        e
        for r in responses
        if r.HasField("status_update")
        for e in read_events(r.status_update.metadata)
    ]


async def _until_working(stream: Any) -> list[StreamResponse]:
    """A task's responses up to its first `working` update."""
    seen: list[StreamResponse] = []
    async for response in stream:
        seen.append(response)
        if _state(response) == "WORKING":
            return seen
    raise AssertionError(f"the task ended before it worked: {[_state(r) for r in seen]}")


async def _rest(stream: Any) -> list[StreamResponse]:
    return [response async for response in stream]


def _settled(server: A2AServed, replay: ReplayServer) -> bool:
    return not server.servicer.sessions.running and replay.open_streams == 0


@pytest.mark.parametrize("binding", ["JSONRPC", "GRPC"])
def test_a_task_running_on_one_replica_is_cancelled_through_another(
    replicas: tuple[A2AServed, A2AServed], replay: ReplayServer, binding: str
) -> None:
    """CancelTask on B asks A (through the store) to interrupt the reply;
    B answers once the task ended: canceled, its message the interrupted
    reply. A's caller sees it end canceled, both replicas read it so, and
    the context goes on."""
    a, b = replicas

    async def main() -> tuple[Any, list[StreamResponse], Any, Any, list[StreamResponse]]:
        on_a, on_b = _client(a, binding), _client(b, binding)
        stream = on_a.send_message(SendMessageRequest(message=_message("wait")))
        seen = await asyncio.wait_for(_until_working(stream), _STEP_S)
        while replay.open_streams == 0:  # the model answers, and goes on waiting
            await asyncio.sleep(0.01)
        task_id = seen[0].task.id
        cancelled = await asyncio.wait_for(on_b.cancel_task(CancelTaskRequest(id=task_id)), _STEP_S)
        seen += await asyncio.wait_for(_rest(stream), _STEP_S)
        on_each = [await c.get_task(GetTaskRequest(id=task_id)) for c in (on_a, on_b)]
        after = await asyncio.wait_for(
            _rest(
                on_b.send_message(
                    SendMessageRequest(message=_message("hi", context_id=cancelled.context_id))
                )
            ),
            _STEP_S,
        )
        await on_a.close()
        await on_b.close()
        return cancelled, seen, on_each[0], on_each[1], after

    cancelled, seen, on_a, on_b, after = asyncio.run(main())
    assert TaskState.Name(cancelled.status.state) == "TASK_STATE_CANCELED"
    interrupted = a2a_to_msg(cancelled.status.message)
    assert FinishedReason.Name(interrupted.finished_reason) == "FINISHED_REASON_INTERRUPTED"
    assert _state(seen[-1]) == "CANCELED"
    assert on_a == on_b
    assert on_a.status.state == TaskState.TASK_STATE_CANCELED
    assert wait_until(lambda: _settled(a, replay))
    assert _state(after[-1]) == "COMPLETED"
    assert get_text_content(a2a_to_msg(after[-1].status_update.status.message)) == SUNNY


def test_a_task_waiting_for_an_answer_is_cancelled_through_another_replica(
    replicas: tuple[A2AServed, A2AServed],
) -> None:
    """Nothing runs while a task waits: B answers its question with an
    interrupt, so the context takes a new task again."""
    a, b = replicas

    async def main() -> tuple[Any, list[StreamResponse]]:
        on_a, on_b = _client(a), _client(b)
        asked = await _rest(on_a.send_message(SendMessageRequest(message=_message("weather?"))))
        assert _state(asked[-1]) == "INPUT_REQUIRED"
        task_id = asked[-1].status_update.task_id
        cancelled = await asyncio.wait_for(on_b.cancel_task(CancelTaskRequest(id=task_id)), _STEP_S)
        after = await asyncio.wait_for(
            _rest(
                on_a.send_message(
                    SendMessageRequest(message=_message("hi", context_id=cancelled.context_id))
                )
            ),
            _STEP_S,
        )
        await on_a.close()
        await on_b.close()
        return cancelled, after

    cancelled, after = asyncio.run(main())
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert _state(after[-1]) == "COMPLETED"


def test_a_subscriber_on_another_replica_follows_a_queued_task_from_its_start(
    replicas: tuple[A2AServed, A2AServed], replay: ReplayServer
) -> None:
    """A task queued on A behind the context's running one (submitted):
    SubscribeToTask on B waits for its reply to begin, then follows it from
    its start: working, then completed."""
    a, b = replicas

    async def main() -> list[StreamResponse]:
        on_a, on_b = _client(a), _client(b)
        first = on_a.send_message(SendMessageRequest(message=_message("wait")))
        seen = await asyncio.wait_for(_until_working(first), _STEP_S)
        context_id = seen[0].task.context_id
        queued = SendMessageRequest(
            message=_message("hi", context_id=context_id),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        sender = _client(a, streaming=False)  # it answers at once (`return_immediately`)
        sent = [r async for r in sender.send_message(queued)]
        await sender.close()
        assert _state(sent[0]) == "SUBMITTED"
        follower = on_b.subscribe(SubscribeToTaskRequest(id=sent[0].task.id))
        followed = [await asyncio.wait_for(anext(follower), _STEP_S)]
        rest = asyncio.ensure_future(_rest(follower))
        await on_a.cancel_task(CancelTaskRequest(id=seen[0].task.id))  # the queued one goes
        followed += await asyncio.wait_for(rest, _STEP_S)
        await asyncio.wait_for(_rest(first), _STEP_S)
        await on_a.close()
        await on_b.close()
        return followed

    followed = asyncio.run(main())
    assert [_state(r) for r in followed] == ["SUBMITTED", "WORKING", "COMPLETED"]
    final = a2a_to_msg(followed[-1].status_update.status.message)
    assert get_text_content(final) == SUNNY
    assert wait_until(lambda: _settled(a, replay))


def test_unknown_and_finished_tasks_get_a2a_errors_on_any_replica(
    replicas: tuple[A2AServed, A2AServed],
) -> None:
    a, b = replicas

    async def main() -> None:
        on_a, on_b = _client(a), _client(b)
        with pytest.raises(TaskNotFoundError):
            await on_b.cancel_task(CancelTaskRequest(id="no-such-task"))
        with pytest.raises(TaskNotFoundError):
            await _rest(on_b.subscribe(SubscribeToTaskRequest(id="no-such-task")))
        done = await _rest(on_a.send_message(SendMessageRequest(message=_message("hi"))))
        task_id = done[-1].status_update.task_id
        with pytest.raises(TaskNotCancelableError):
            await on_b.cancel_task(CancelTaskRequest(id=task_id))
        with pytest.raises(UnsupportedOperationError):
            await _rest(on_b.subscribe(SubscribeToTaskRequest(id=task_id)))
        await on_a.close()
        await on_b.close()

    asyncio.run(main())


@pytest.fixture
def held(redis_server: RedisServer) -> Iterator[tuple[A2AServed, A2AServed, ReplayServer]]:
    """Replicas A and B whose model holds its stream after the first chunk
    until the test sets `release` (`slow`)."""
    config = AgentConfig(state=redis_server.url, lease_seconds=1)
    with ReplayServer({"slow": ["hold:stream_text_by3"]}) as replay:
        a = serve_a2a(lambda: make_agent(replay.base_url), config)
        try:
            b = serve_a2a(lambda: make_agent(replay.base_url), config)
        except BaseException:
            a.stop()
            raise
        try:
            yield a, b, replay
        finally:
            replay.release.set()
            a.stop()
            b.stop()


def test_a_subscriber_on_another_replica_gets_the_rest_of_a_task(
    held: tuple[A2AServed, A2AServed, ReplayServer],
) -> None:
    """A task runs on A (its caller has the extension); its model holds.
    SubscribeToTask on B: the task as stored, then the updates A makes
    after it, from the reply's log: with the extension, the events A's
    caller gets after the stored task's last update, each once; without,
    the final update with the reply's text."""
    a, b, replay = held

    async def main() -> tuple[list[StreamResponse], list[StreamResponse], list[StreamResponse]]:
        on_a, on_b = _client(a, "GRPC"), _client(b)
        with_extension = ClientCallContext(service_parameters=_WITH_EXTENSION)
        stream = on_a.send_message(
            SendMessageRequest(message=_message("slow")), context=with_extension
        )
        seen = [await anext(stream)]
        while "model_call_start" not in [e.WhichOneof("event") for e in _events(seen)]:
            seen.append(await asyncio.wait_for(anext(stream), _STEP_S))
        request = SubscribeToTaskRequest(id=seen[0].task.id)
        followers = [
            on_b.subscribe(request, context=with_extension),
            on_b.subscribe(request),
        ]
        # Each has the stored task before the model goes on.
        firsts = [await asyncio.wait_for(anext(f), _STEP_S) for f in followers]
        rests = [asyncio.ensure_future(_rest(f)) for f in followers]
        replay.release.set()
        seen += await asyncio.wait_for(_rest(stream), _STEP_S)
        got = await asyncio.wait_for(asyncio.gather(*rests), _STEP_S)
        await on_a.close()
        await on_b.close()
        return seen, [firsts[0], *got[0]], [firsts[1], *got[1]]

    seen, extended, plain = asyncio.run(main())
    assert _state(seen[-1]) == "COMPLETED"
    for followed in (extended, plain):
        assert followed[0].WhichOneof("payload") == "task"
        assert _state(followed[0]) == "WORKING"
        assert _state(followed[-1]) == "COMPLETED"
        assert all(_state(r) == "WORKING" for r in followed[1:-1])
    # The stored task stands for A's updates up to the one with its place
    # in the reply's log; B's give every event after it, once.
    stored = _place(extended[0].task.metadata)
    upto = next(i for i, r in enumerate(seen) if _place(r.status_update.metadata) == stored)
    assert _events(seen[: upto + 1]) + _events(extended[1:]) == _events(seen)
    assert extended[-1].status_update.status.message == seen[-1].status_update.status.message
    # Without the extension: no events, the reply's text.
    assert len(plain) == 2
    assert _events(plain) == []
    assert get_text_content(a2a_to_msg(plain[-1].status_update.status.message)) == get_text_content(
        a2a_to_msg(seen[-1].status_update.status.message)
    )


def _place(metadata: Any) -> Any:
    """Where the reply goes on after the update `metadata` is of."""
    return metadata.fields.get(RESUME_KEY)


def _a2a_url(process: Any) -> str:
    process.wait_listening()
    line = next(line for line in process.log if "listening on" in line)
    found = re.search(r"(http://\S+) \(A2A JSON-RPC", line)
    assert found, line
    return found.group(1)


async def _client_of(url: str) -> Any:
    options = ClientConfig(streaming=True, supported_protocol_bindings=["JSONRPC"])
    return await ClientFactory(options).create_from_url(url)


@contextlib.contextmanager
def _dying_and_living(redis_server: RedisServer, script: dict[str, list[str]]) -> Iterator[Any]:
    """Two `serve-agent` processes with A2A on one Redis (the first to be
    SIGKILLed), their model the replay of `script`."""
    from agent_processes import HERE, AgentProcess

    with ReplayServer(script) as replay:
        env = {
            **os.environ,
            "FRIDAY_MODEL_URL": replay.base_url,
            "PYTHONPATH": os.pathsep.join([_PACKAGE_ROOT, str(HERE.parent), str(HERE)]),
        }
        flags = ["--port", "0", "--a2a-port", "0", "--state", redis_server.url]
        flags += ["--lease-seconds", "1"]
        dying = AgentProcess(["topic_agents:friday", *flags], env)
        living = AgentProcess(["topic_agents:friday", *flags], env)
        try:
            yield dying, living, replay
        finally:
            replay.release.set()
            if dying.process.poll() is None:
                dying.process.kill()
            living.stop()


def test_a_task_whose_replica_died_is_taken_over_by_its_subscriber(
    redis_server: RedisServer,
) -> None:
    """SIGKILL of the replica running a task mid-stream: a subscriber on the
    other replica gets the rest of it, that replica taking its reply over
    (test_takeover.py), and the task is stored completed there."""

    async def main(dying: Any, living: Any, replay: ReplayServer) -> tuple[list[Any], Any]:
        on_dying, on_living = await _client_of(_a2a_url(dying)), await _client_of(_a2a_url(living))
        stream = on_dying.send_message(SendMessageRequest(message=_message("hi")))
        task_id = (await asyncio.wait_for(_until_working(stream), _STEP_S))[0].task.id
        follower = on_living.subscribe(SubscribeToTaskRequest(id=task_id))
        assert _state(await asyncio.wait_for(anext(follower), _STEP_S)) == "WORKING"
        dying.process.kill()
        dying.process.wait(30)
        replay.release.set()
        rest = await asyncio.wait_for(_rest(follower), _STEP_S)
        stored = await on_living.get_task(GetTaskRequest(id=task_id))
        await on_living.close()
        return rest, stored

    with _dying_and_living(redis_server, {"hi": ["hold:stream_text_by3"]}) as processes:
        rest, stored = asyncio.run(main(*processes))
    assert _state(rest[-1]) == "COMPLETED"
    assert stored.status.state == TaskState.TASK_STATE_COMPLETED


def test_a_task_whose_replica_died_is_cancelled_on_another(redis_server: RedisServer) -> None:
    """SIGKILL of the replica running a task, no one following it: CancelTask
    on the other replica, once no replica held the session for a lease,
    records the task canceled (a2a-sdk's own remote cancel)."""
    from hosted import SCRIPT

    async def main(dying: Any, living: Any, replay: ReplayServer) -> Any:
        on_dying, on_living = await _client_of(_a2a_url(dying)), await _client_of(_a2a_url(living))
        stream = on_dying.send_message(SendMessageRequest(message=_message("wait")))
        task_id = (await asyncio.wait_for(_until_working(stream), _STEP_S))[0].task.id
        dying.process.kill()
        dying.process.wait(30)
        cancelled = await asyncio.wait_for(
            on_living.cancel_task(CancelTaskRequest(id=task_id)), _STEP_S
        )
        await on_living.close()
        return cancelled

    with _dying_and_living(redis_server, SCRIPT) as processes:
        cancelled = asyncio.run(main(*processes))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
