"""Sessions on a real redis-server (`AgentConfig.state`): they outlive their
server, any replica takes any session up (its memory, a question it asked),
one replica at a time runs a session, and a stored state that cannot be read
is refused, naming the session, never replaced."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from agentscope_proto import Msg, get_text_content
from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as events
from agentscope_proto.agents import AgentClient, AgentConfig
from agentscope_proto.errors import SessionStateError, StateUnavailableError, StoredStateError

from hosted import SUNNY, AgentServer, serve, user
from hub_fixtures import RedisServer
from replay_agent import make_agent
from replay_server import ReplayServer, wait_until


@pytest.fixture
def replicas(
    factory: Callable[[], Any], redis_server: RedisServer
) -> Iterator[Callable[[], AgentServer]]:
    """Start replicas on the one Redis (all stopped at the end)."""
    started: list[AgentServer] = []

    def start() -> AgentServer:
        started.append(serve(factory, AgentConfig(state=redis_server.url, lease_seconds=1)))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _kinds(items: list[Any]) -> list[str]:
    return [
        item.WhichOneof("event") if isinstance(item, events.AgentEvent) else "msg" for item in items
    ]


def _event(items: list[Any], kind: str) -> Any:
    return next(getattr(i, kind) for i in items if _kinds([i]) == [kind])


def _reply(server: AgentServer, session: str, words: str) -> list[Any]:
    with AgentClient(server.target) as client:
        return list(client.reply_stream(user(words), session_id=session))


def _user_turns(replay: ReplayServer) -> int:
    """The user's messages the last model call was given (the agent's
    memory; 2.x adds reminders of its own as user messages without a name)."""
    messages = replay.requests[-1]["messages"]
    return sum(1 for message in messages if message.get("name") == "user")


def test_a_session_outlives_its_server(
    replicas: Callable[[], AgentServer], replay: ReplayServer
) -> None:
    first = replicas()
    assert get_text_content(_reply(first, "outlives", "hi")[-1])
    first.stop()
    second = replicas()
    _reply(second, "outlives", "hi")
    assert _user_turns(replay) == 2  # the first turn, remembered


def test_replicas_take_turns_on_one_session(
    replicas: Callable[[], AgentServer], replay: ReplayServer
) -> None:
    """Each replica's agent is brought up to what the other saved since."""
    a, b = replicas(), replicas()
    for turn, server in enumerate([a, b, a, b], start=1):
        _reply(server, "turns", "hi")
        assert _user_turns(replay) == turn


def test_an_observation_on_one_replica_is_remembered_on_another(
    replicas: Callable[[], AgentServer], replay: ReplayServer
) -> None:
    a, b = replicas(), replicas()
    with AgentClient(a.target) as client:
        client.observe([user("think first")], session_id="observed")
    _reply(b, "observed", "hi")
    assert _user_turns(replay) == 2


def test_a_question_asked_on_one_replica_is_answered_on_another(
    replicas: Callable[[], AgentServer],
) -> None:
    a = replicas()
    asked = _reply(a, "asked", "weather?")
    assert _kinds(asked)[-2:] == ["require_user_confirm", "msg"]
    question = _event(asked, "require_user_confirm")
    a.stop()  # the replica that asked is gone
    b = replicas()
    answer = events.UserConfirmResultEvent(
        reply_id=question.reply_id,
        confirm_results=[events.ConfirmResult(confirmed=True, tool_call=question.tool_calls[0])],
    )
    with AgentClient(b.target) as client:
        answered = list(client.reply_stream(answer=answer, session_id="asked"))
    assert _event(answered, "tool_result_text_delta").delta == "Sunny in Paris, 21°C"
    assert get_text_content(answered[-1]) == SUNNY
    assert answered[-1].id == question.reply_id  # the same reply, gone on


def test_an_answer_to_a_session_no_replica_saved_is_refused(
    replicas: Callable[[], AgentServer],
) -> None:
    answer = events.UserConfirmResultEvent(reply_id="r1")
    with AgentClient(replicas().target) as client, pytest.raises(SessionStateError) as info:
        list(client.reply_stream(answer=answer, session_id="never-saved"))
    assert "no session 'never-saved'" in str(info.value)


def test_a_session_held_by_a_dead_replica_is_free_after_its_lease(
    replicas: Callable[[], AgentServer], redis_server: RedisServer
) -> None:
    """A lease left behind (its replica died mid-call) holds the session's
    next call until it runs out, then the call goes on."""
    server = replicas()
    store = redis.Redis.from_url(redis_server.url)
    key = "agentscope:session:{Friday/held}:lease"
    store.set(key, "a-dead-replica", px=1500)
    assert get_text_content(_reply(server, "held", "hi")[-1])
    assert store.get(key) != b"a-dead-replica"


def test_a_replica_holds_a_sessions_lease_idle_and_gives_it_up_to_another_at_once(
    factory: Callable[[], Any], redis_server: RedisServer, replay: ReplayServer
) -> None:
    """After a call its replica keeps the session's lease, idle (the session
    is not busy), for the conversation's next call; a call on another
    replica has it at once, not after the hold (12 s here, past the call's
    deadline), and each replica's agent has what the other saved."""
    a, b = (serve(factory, AgentConfig(state=redis_server.url, lease_seconds=60)) for _ in "ab")
    store = redis.Redis.from_url(redis_server.url)
    key = "agentscope:session:{Friday/wanted}:lease"
    holders = []
    try:
        for turn, server in enumerate([a, a, b, a], start=1):
            with AgentClient(server.target) as client:
                list(client.reply_stream(user("hi"), session_id="wanted", timeout=8))
            assert _user_turns(replay) == turn
            holders.append(store.get(key))
        assert all(holder.endswith(b":idle") for holder in holders)
        assert holders[0] == holders[1] == holders[3] != holders[2]
    finally:
        a.stop()
        b.stop()


def test_a_replica_that_stops_gives_the_leases_it_holds_idle_up(
    factory: Callable[[], Any], redis_server: RedisServer, replay: ReplayServer
) -> None:
    """Stopping, a replica frees the sessions it held idle at once: the next
    call on another replica does not wait out the hold (60 s here)."""
    store = redis.Redis.from_url(redis_server.url)
    key = "agentscope:session:{Friday/stopped}:lease"
    a = serve(factory, AgentConfig(state=redis_server.url, lease_seconds=60))
    try:
        _reply(a, "stopped", "hi")
        assert store.get(key) is not None
    finally:
        a.stop()
    assert store.get(key) is None
    b = serve(factory, AgentConfig(state=redis_server.url, lease_seconds=60))
    try:
        with AgentClient(b.target) as client:
            list(client.reply_stream(user("hi"), session_id="stopped", timeout=8))
        assert _user_turns(replay) == 2
    finally:
        b.stop()


@pytest.fixture
def held(redis_server: RedisServer) -> Iterator[tuple[AgentServer, ReplayServer]]:
    """A replica whose model's answer to "held" waits for the test's
    `release`; its model."""
    with ReplayServer({"held": ["hold:stream_text_by3"], "hi": ["stream_text_by3"]}) as replay:
        config = AgentConfig(state=redis_server.url, lease_seconds=1)
        server = serve(lambda: make_agent(replay.base_url), config)
        try:
            yield server, replay
        finally:
            server.stop()


def _held_reply(client: AgentClient, replay: ReplayServer, session: str) -> Iterator[Any]:
    """A reply of `session` begun, its model's answer held (its lease in
    the store, its model called)."""
    items = client.reply_stream(user("held"), session_id=session, timeout=30)
    next(items)  # its first event: the call runs
    assert wait_until(lambda: len(replay.requests) == 1, 10)
    return items


def test_a_reply_whose_lease_ran_out_while_nobody_took_its_session_is_saved(
    held: tuple[AgentServer, ReplayServer], redis_server: RedisServer
) -> None:
    """A replica stalled past its lease (its key gone, as when it runs out)
    while nobody took the session: its next renewal takes the lease back,
    the reply ends, and its save is made (the next turn remembers it)."""
    server, replay = held
    store = redis.Redis.from_url(redis_server.url)
    key = "agentscope:session:{Friday/lapsed}:lease"
    with AgentClient(server.target) as client:
        items = _held_reply(client, replay, "lapsed")
        store.delete(key)
        assert wait_until(lambda: store.get(key) is not None, 5)  # taken back
        replay.release.set()
        assert get_text_content(list(items)[-1])
    _reply(server, "lapsed", "hi")
    assert _user_turns(replay) == 2


def test_a_reply_whose_session_another_replica_took_never_ends_unsaved(
    held: tuple[AgentServer, ReplayServer], redis_server: RedisServer
) -> None:
    """Once another replica holds the session (this one stalled past its
    lease), the reply writes nothing more: no end is logged or heard without
    its state saved; its caller gets UNAVAILABLE (to resume it from its
    log), and the stored state stays as it was."""
    server, replay = held
    store = redis.Redis.from_url(redis_server.url)
    key = "agentscope:session:{Friday/taken}:lease"
    with AgentClient(server.target) as client:
        items = _held_reply(client, replay, "taken")
        store.set(key, "another-replica", px=60_000)
        replay.release.set()
        with pytest.raises(StateUnavailableError, match="lost the session's lease"):
            list(items)
    assert store.get(key) == b"another-replica"
    assert store.hget("agentscope:session:{Friday/taken}:state:v2", "v") is None


def test_a_stored_state_that_cannot_be_read_is_refused_and_kept(
    replicas: Callable[[], AgentServer], redis_server: RedisServer
) -> None:
    server = replicas()
    _reply(server, "corrupt", "hi")
    store = redis.Redis.from_url(redis_server.url)
    key = "agentscope:session:{Friday/corrupt}:state:v2"
    store.hset(key, mapping={"s": b"\xff not a SessionState", "v": 99})
    other = replicas()  # its agent never saw the session
    with AgentClient(other.target) as client, pytest.raises(StoredStateError) as info:
        list(client.reply_stream(user("hi"), session_id="corrupt"))
    assert "session 'corrupt'" in str(info.value)
    assert store.hget(key, "s") == b"\xff not a SessionState"  # left as stored


def test_the_stored_state_is_the_agents_own(
    replicas: Callable[[], AgentServer], redis_server: RedisServer
) -> None:
    """What is stored reads back as 2.x's `AgentState`: the context as
    messages, the rest as 2.x dumps it."""
    from agentscope.state import AgentState

    from agentscope_proto._generated.agentscope.agent.v1.state_pb2 import SessionState
    from agentscope_proto.dialects import to_dict

    _reply(replicas(), "own", "hi")
    store = redis.Redis.from_url(redis_server.url)
    rest = store.hget("agentscope:session:{Friday/own}:state:v2", "s")
    state = SessionState.FromString(rest)
    assert not state.context  # kept apart, one list entry a message
    state.context.extend(
        Msg.FromString(m) for m in store.lrange("agentscope:session:{Friday/own}:context:v2", 0, -1)
    )
    assert state.framework_major == 2
    assert state.saved_at_ms > 0
    dump = {
        **json.loads(state.rest_json),
        "context": [to_dict(m, "agentscope2") for m in state.context],
    }
    restored = AgentState.model_validate(dump)
    assert restored.session_id == "own"
    assert [m.role for m in restored.context] == ["user", "assistant"]


def test_a_redis_restart_loses_no_session_and_its_outage_is_a_clear_status(
    factory: Callable[[], Any], replay: ReplayServer, tmp_path: Path
) -> None:
    """Redis with AOF restarted mid-run: during the outage a call is
    UNAVAILABLE (`StateUnavailableError`, retryable), not a hang; after it
    the server reconnects by itself and the session has its memory."""
    from agentscope_proto.errors import StateUnavailableError

    store = RedisServer(tmp_path, extra=("--appendonly", "yes", "--appendfsync", "always"))
    server = serve(factory, AgentConfig(state=store.url, lease_seconds=1))
    try:
        _reply(server, "aof", "hi")
        store.stop()
        with AgentClient(server.target) as client, pytest.raises(StateUnavailableError):
            list(client.reply_stream(user("hi"), session_id="aof", timeout=60))
        store.restart()
        _reply(server, "aof", "hi")
        assert _user_turns(replay) == 2  # the turn before the outage, remembered
    finally:
        server.stop()
        store.stop()


def test_sessions_and_reply_logs_on_a_redis_cluster(
    factory: Callable[[], Any], replay: ReplayServer, tmp_path: Path
) -> None:
    """A 3-master Redis Cluster: each session's keys (hash-tagged) on the
    node of their slot; replicas take turns and resume as on one node."""
    from hub_fixtures import RedisCluster

    cluster = RedisCluster(tmp_path)
    config = AgentConfig(state=cluster.url, lease_seconds=1)
    replicas = [serve(factory, config), serve(factory, config)]
    try:
        sessions = [f"cluster-{index}" for index in range(6)]  # spread over the slots
        for turn in (1, 2):
            for index, session in enumerate(sessions):
                replies = _reply(replicas[(index + turn) % 2], session, "hi")
                assert _user_turns(replay) == turn
        with AgentClient(replicas[0].target) as client:
            start = replies[0].reply_start
            again = list(client.resume(start.session_id, start.reply_id))
        assert again[-1].done
        nodes = redis.RedisCluster.from_url(cluster.url)
        keys = nodes.keys("agentscope:session:*", target_nodes=redis.RedisCluster.ALL_NODES)
        assert len(keys) >= 2 * len(sessions)  # a state and a reply log each, at least
    finally:
        for replica in replicas:
            replica.stop()
        cluster.stop()


def _stored_as_dumped(agent: Any) -> tuple[Any, list[bytes]]:
    """What a save must store, made the plain way: the whole state dumped by
    2.x, each context message converted from its dump."""
    from agentscope_proto import from_dict

    dump = agent.state.model_dump(mode="json")
    context = [from_dict(m, "agentscope2").SerializeToString() for m in dump.pop("context")]
    return dump, context


def test_the_saves_conversion_cache_never_changes_what_is_stored(
    factory: Callable[[], Any],
) -> None:
    """A save reuses the last save's `Msg` of a context message that
    serializes the same; after messages are added, changed in place (an
    integer made the equal float too) and dropped, what it stores is byte
    for byte what a save without the cache stores, and what the state's own
    dump converts to."""
    from agentscope.message import AssistantMsg, TextBlock, UserMsg

    from agentscope_proto import _json
    from agentscope_proto.agents.hosting import AgentScope2

    hosting, agent, known = AgentScope2(), factory(), []
    agent.state.context += [UserMsg("user", "hi"), AssistantMsg("Friday", "hello")]
    agent.state.context[0].metadata["n"] = 1
    steps = [
        lambda: agent.state.context.append(UserMsg("user", "more")),
        lambda: agent.state.context[1].content.append(TextBlock(text=" again")),
        lambda: agent.state.context[0].metadata.update(n=1.0),
        lambda: agent.state.context[0].metadata.update(x=float("inf")),
        lambda: agent.state.context[0].metadata.update(big=2**70),  # past orjson: no cache
        lambda: agent.state.context[0].metadata.update(big=2**70 + 1),
        lambda: agent.state.context.pop(0),
    ]
    for step in steps:
        hosting.save_state(agent, known)  # fills the cache as the last save did
        step()
        cached = hosting.save_state(agent, known)
        fresh = hosting.save_state(agent, [])
        assert cached is not None
        assert fresh is not None
        assert cached.encoded() == fresh.encoded()
        rest, context = _stored_as_dumped(agent)
        assert cached.context == context
        assert _json.loads(cached.rest.rest_json) == rest
    assert [seen.id for seen in known] == [message.id for message in agent.state.context]


def test_a_context_message_of_a_subclass_is_stored_as_the_states_dump_has_it(
    factory: Callable[[], Any],
) -> None:
    """A message of a `Msg` subclass in the context (its own fields, which
    the state's dump leaves out) is stored as the state's dump has it."""
    from agentscope.message import Msg, UserMsg

    from agentscope_proto.agents.hosting import AgentScope2

    class Tagged(Msg):
        tag: str = "extra"

    agent = factory()
    agent.state.context += [UserMsg("user", "hi"), Tagged(name="n", role="user", content=[])]
    saved = AgentScope2().save_state(agent, [])
    assert saved is not None
    assert saved.context == _stored_as_dumped(agent)[1]


def test_a2a_tasks_answer_on_every_replica(
    factory: Callable[[], Any], redis_server: RedisServer
) -> None:
    """With sessions in Redis, a served agent's A2A tasks are there too: a
    task run on replica A is got and listed on replica B, and the finished
    tasks an owner keeps are bounded as in memory."""
    import asyncio
    import uuid

    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import (
        GetTaskRequest,
        ListTasksRequest,
        Message,
        Part,
        Role,
        SendMessageRequest,
        TaskState,
    )

    from hosted import serve_a2a

    config = AgentConfig(state=redis_server.url, lease_seconds=1)
    a, b = serve_a2a(factory, config), serve_a2a(factory, config)

    def client(server: Any) -> Any:
        return ClientFactory(
            ClientConfig(streaming=True, supported_protocol_bindings=["JSONRPC"])
        ).create(server.a2a.card)

    async def main() -> tuple[Any, Any]:
        on_a, on_b = client(a), client(b)
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text="hi")])
        responses = [r async for r in on_a.send_message(SendMessageRequest(message=message))]
        task_id = responses[-1].status_update.task_id
        task = await on_b.get_task(GetTaskRequest(id=task_id))
        listed = await on_b.list_tasks(ListTasksRequest())
        await on_a.close()
        await on_b.close()
        return task, listed

    try:
        task, listed = asyncio.run(main())
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.id in [t.id for t in listed.tasks]
    finally:
        a.stop()
        b.stop()


def test_a2a_tasks_in_redis_keep_at_most_max_tasks_finished(redis_server: RedisServer) -> None:
    """The oldest finished tasks are forgotten past `max_tasks`; a running
    one never is; each owner counts its own."""
    import asyncio

    import redis.asyncio as aioredis
    from a2a.auth.user import UnauthenticatedUser
    from a2a.server.context import ServerCallContext
    from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus

    from agentscope_proto.a2a.tasks import RedisTaskStore

    async def main() -> tuple[list[str], Any, Any]:
        client = aioredis.Redis.from_url(redis_server.url)
        store = RedisTaskStore(client, "bounded", max_tasks=2)
        owner = ServerCallContext(user=UnauthenticatedUser())
        done = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
        running = TaskStatus(state=TaskState.TASK_STATE_WORKING)
        await store.save(Task(id="run", context_id="c", status=running), owner)
        for name in ("t1", "t2", "t3"):
            await store.save(Task(id=name, context_id="c", status=done), owner)
        listed = await store.list(ListTasksRequest(), owner)
        gone, kept = await store.get("t1", owner), await store.get("t3", owner)
        await client.aclose()
        return sorted(t.id for t in listed.tasks), gone, kept

    ids, gone, kept = asyncio.run(main())
    assert ids == ["run", "t2", "t3"]
    assert gone is None
    assert kept is not None


def test_a_session_saved_in_the_earlier_encoding_is_read_and_written_anew(
    replicas: Callable[[], AgentServer], redis_server: RedisServer, replay: ReplayServer
) -> None:
    """A session stored as `state:v1` (the whole `SessionState` in one hash
    field) goes on: its context reaches the model, and its next save writes
    `state:v2` and its context list, the version going on from v1's."""
    from agentscope_proto._generated.agentscope.agent.v1.state_pb2 import SessionState

    server = replicas()
    _reply(server, "old", "hi")
    store = redis.Redis.from_url(redis_server.url)
    base = "agentscope:session:{Friday/old}"
    rest = SessionState.FromString(store.hget(f"{base}:state:v2", "s"))
    rest.context.extend(Msg.FromString(m) for m in store.lrange(f"{base}:context:v2", 0, -1))
    store.delete(f"{base}:state:v2", f"{base}:context:v2")
    store.hset(f"{base}:state:v1", mapping={"s": rest.SerializeToString(), "v": 7})
    _reply(replicas(), "old", "hi")  # a replica that never saw the session
    assert len([m for m in replay.requests[-1]["messages"] if m["role"] == "assistant"]) == 1
    assert not store.exists(f"{base}:state:v1")
    assert store.hget(f"{base}:state:v2", "v") == b"8"
    assert store.llen(f"{base}:context:v2") == 4
