"""`ReplyLog.read`: a reader (a caller resuming, an A2A subscriber on
another replica) gets every response after its cursor up to the reply's
end, also when the rest of the reply is logged between the read that
found nothing new and its look at whether the log ends the reply (with
Redis these are two trips, and the reply's replica goes on meanwhile)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest

from agentscope_proto import Msg
from agentscope_proto._generated.agentscope.agent.v1.agent_service_pb2 import ReplyResponse
from agentscope_proto.agents import replies
from agentscope_proto.agents.replies import ReplyLog
from agentscope_proto.agents.state import MemoryStateStore
from agentscope_proto.agents.state.store import Entry
from agentscope_proto.errors import AgentReplyError


def _response(msg_id: str, *, done: bool = False) -> ReplyResponse:
    return ReplyResponse(msg=Msg(id=msg_id), done=done)


class _Late(MemoryStateStore):
    """Runs `late` once, just after a read that found nothing new has its
    answer: what the reply's replica logs while that answer travels."""

    late: Callable[[], Awaitable[None]] | None = None

    async def read(
        self, session_id: str, reply_id: str, after: str, wait_ms: int
    ) -> list[Entry] | None:
        entries = await super().read(session_id, reply_id, after, wait_ms)
        if entries == [] and self.late is not None:
            late, self.late = self.late, None
            await late()
        return entries


def _read(*, where: str, failed: bool) -> list[str]:
    """Log a reply's first response, read from its cursor while the rest
    (two responses, the last `done`; and the reply's error if `failed`)
    is logged late, at `where`: after a read, or while the reader asks
    whether a replica runs the reply (it ended: none does)."""

    async def main() -> list[str]:
        store = _Late(max_bytes=1 << 20)
        log = ReplyLog(store, keep_seconds=60)
        first = _response("m1")
        await log.write("s", "r", [first], None)

        async def rest() -> None:
            error = AgentReplyError("tool", "it broke") if failed else None
            await log.write("s", "r", [_response("m2"), _response("m3", done=True)], error)

        async def running() -> bool:
            if where == "running":
                await rest()
            return False

        async def take_over() -> bool:
            raise AssertionError("the reply ended: there is nothing to take over")

        if where == "read":
            store.late = rest
        got: list[str] = []
        ends = pytest.raises(AgentReplyError, match="it broke")
        with ends if failed else contextlib.nullcontext():
            async for response in log.read("s", "r", first.cursor, running, take_over):
                got.append(response.msg.id)
        return got

    return asyncio.run(main())


@pytest.mark.parametrize("failed", [False, True], ids=["done", "failed"])
@pytest.mark.parametrize("where", ["read", "running"])
def test_a_reader_gets_the_rest_logged_while_it_looked_for_the_end(
    where: str, failed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replies, "_WAIT_MS", 20)  # an empty read's wait, short
    assert _read(where=where, failed=failed) == ["m2", "m3"]


def test_a_reader_who_had_the_end_hears_at_once_that_nothing_follows() -> None:
    async def main() -> list[str]:
        log = ReplyLog(MemoryStateStore(max_bytes=1 << 20), keep_seconds=60)
        last = _response("m1", done=True)
        await log.write("s", "r", [last], None)

        async def never() -> bool:
            raise AssertionError("no wait: the log ends the reply")

        return [r.msg.id async for r in log.read("s", "r", last.cursor, never, never)]

    assert asyncio.run(main()) == []
