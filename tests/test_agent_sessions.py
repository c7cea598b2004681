"""A session's calls take its turn in the order they arrive, however long
each takes to read (a large request is read in a worker thread, a small one
on the event loop, and the small one behind it must not overtake it). A
hosting that records what its agent does stands in for AgentScope: the
order is the sessions' own."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg
from agentscope_proto.agents.config import AgentConfig
from agentscope_proto.agents.hosting import ReplyInputs
from agentscope_proto.agents.sessions import _LOOP_BYTES, Sessions
from agentscope_proto.errors import MessageFormatError
from agentscope_proto.message import get_text_content, new_msg

SESSION = "s1"


class _Recorder:
    """Reads a message as its text; the text `slow` waits for `release`, and
    `bad` is refused. What the agent observes and answers is recorded."""

    framework = "test"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.read: list[str] = []  # the texts read so far, in the order read
        self.done: list[str] = []  # what the agent took, in its turns

    def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]:
        texts = [get_text_content(msg) or "" for msg in msgs]
        if "slow" in texts and not self.release.wait(10):
            raise TimeoutError("never released")
        if "bad" in texts:
            raise MessageFormatError(f"{field}[0]", "refused")
        self.read.extend(texts)
        return texts

    def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs:
        return ReplyInputs(self.read_msgs(request.msgs, "msgs"), None, None)

    def bind(self, agent: Any, session_id: str) -> None:
        pass

    def check(self, agent: Any, inputs: ReplyInputs) -> None:
        pass

    async def reply(self, agent: Any, session_id: str, inputs: ReplyInputs) -> AsyncIterator[Any]:
        self.done.extend(f"reply {text}" for text in inputs.msgs or [])
        yield new_msg("agent", "ok", "assistant")

    async def observe(self, agent: Any, msgs: list[Any]) -> None:
        self.done.extend(f"observe {text}" for text in msgs)

    async def describe(self, agent: Any) -> service_pb.DescribeResponse:
        return service_pb.DescribeResponse(name="agent")


def _msg(text: str) -> Msg:
    """A user's message; `slow`'s is a large call's (past what is read on
    the event loop), so that it is read in a worker thread."""
    msg = new_msg("u", text, "user")
    if text == "slow":
        msg.metadata_json = json.dumps({"padding": "x" * _LOOP_BYTES})
    return msg


def _reply(text: str) -> service_pb.ReplyRequest:
    return service_pb.ReplyRequest(session_id=SESSION, msgs=[_msg(text)])


def _observe(text: str) -> service_pb.ObserveRequest:
    return service_pb.ObserveRequest(session_id=SESSION, msgs=[_msg(text)])


async def _replied(sessions: Sessions, request: service_pb.ReplyRequest) -> None:
    reply = await sessions.begin(request)
    async for _ in reply.responses():
        pass


async def _once_read(hosting: _Recorder, text: str) -> None:
    """Until the call carrying `text` was read (so it could overtake)."""
    while text not in hosting.read:
        await asyncio.sleep(0.001)


def _sessions() -> tuple[Sessions, _Recorder]:
    hosting = _Recorder()
    return Sessions(lambda: object(), hosting, AgentConfig()), hosting


async def _slow_then(sessions: Sessions, hosting: _Recorder, *later: Any) -> list[Any]:
    """Run an Observe of `slow`, then the calls `later` (coroutines) once the
    last of them was read, then let `slow` finish reading."""
    first = asyncio.create_task(sessions.observe_request(_observe("slow")))
    await asyncio.sleep(0)  # it arrives first
    tasks = [asyncio.create_task(call) for call in later]
    await asyncio.wait_for(_once_read(hosting, "fast"), 10)
    await asyncio.sleep(0.01)  # the read ones would have taken the turn by now
    hosting.release.set()
    return await asyncio.gather(first, *tasks, return_exceptions=True)


@pytest.mark.parametrize("kind", ["reply", "observe"])
def test_a_small_call_does_not_overtake_a_larger_one_before_it(kind: str) -> None:
    async def main() -> list[str]:
        sessions, hosting = _sessions()
        later = (
            _replied(sessions, _reply("fast"))
            if kind == "reply"
            else sessions.observe_request(_observe("fast"))
        )
        results = await _slow_then(sessions, hosting, later)
        assert not [r for r in results if isinstance(r, BaseException)], results
        return hosting.done

    assert asyncio.run(main()) == ["observe slow", f"{kind} fast"]


def test_a_refused_call_between_lets_no_one_jump_the_line() -> None:
    """`bad` is refused while `slow` still reads: `fast`, behind both, still
    waits for `slow`."""

    async def main() -> tuple[list[Any], list[str]]:
        sessions, hosting = _sessions()
        first = asyncio.create_task(sessions.observe_request(_observe("slow")))
        await asyncio.sleep(0)
        refused = asyncio.create_task(sessions.observe_request(_observe("bad")))
        await asyncio.sleep(0)
        fast = asyncio.create_task(sessions.observe_request(_observe("fast")))
        await asyncio.wait_for(_once_read(hosting, "fast"), 10)
        with pytest.raises(MessageFormatError):
            await refused
        await asyncio.sleep(0.01)
        hosting.release.set()
        return await asyncio.gather(first, fast), hosting.done

    _, done = asyncio.run(main())
    assert done == ["observe slow", "observe fast"]


def test_a_cancelled_call_lets_the_next_go_in_order() -> None:
    """A caller that goes away while it reads leaves the line; the call
    behind it goes after the one ahead of it, and the line is forgotten once
    empty."""

    async def main() -> tuple[list[str], int]:
        sessions, hosting = _sessions()
        first = asyncio.create_task(sessions.observe_request(_observe("slow")))
        await asyncio.sleep(0)
        gone = asyncio.create_task(sessions.observe_request(_observe("slow")))
        await asyncio.sleep(0)
        fast = asyncio.create_task(_replied(sessions, _reply("fast")))
        await asyncio.wait_for(_once_read(hosting, "fast"), 10)
        gone.cancel()
        await asyncio.sleep(0.01)
        hosting.release.set()
        await asyncio.gather(first, fast)
        await asyncio.sleep(0)
        return hosting.done, len(sessions._lines)

    done, lines = asyncio.run(main())
    assert done == ["observe slow", "reply fast"]
    assert lines == 0


def test_calls_to_other_sessions_do_not_wait() -> None:
    async def main() -> list[str]:
        sessions, hosting = _sessions()
        first = asyncio.create_task(sessions.observe_request(_observe("slow")))
        await asyncio.sleep(0)
        other = service_pb.ObserveRequest(session_id="s2", msgs=[new_msg("u", "fast", "user")])
        await asyncio.wait_for(sessions.observe_request(other), 10)
        seen = list(hosting.done)
        hosting.release.set()
        await first
        return seen

    assert asyncio.run(main()) == ["observe fast"]


def test_a_reply_interrupted_before_it_began_ends_its_recorder() -> None:
    """A reply whose task is cancelled before its first step (a named reply
    whose reader had read its log whole) still ends its recorder, so that
    the server's stop, which waits for the recorders, ends."""

    async def main() -> bool:
        sessions, _ = _sessions()
        reply = await sessions.begin(_reply("hi"))
        reply.interrupt()  # at once: the task has not run a step
        await asyncio.wait_for(sessions.hand_over(), 10)
        return not sessions.running

    assert asyncio.run(main())
