"""The in-process reply logs (`MemoryStateStore`, `serve-agent --state
memory`): kept for their retention within a budget of bytes, the logs
appended to least recently dropped first, the one appended to never."""

from __future__ import annotations

import asyncio

import pytest

from agentscope_proto.agents import AgentConfig
from agentscope_proto.agents.state import MemoryStateStore


def test_past_the_budget_the_least_recently_appended_logs_go_first() -> None:
    async def main() -> list[bool]:
        store = MemoryStateStore(max_bytes=1000)
        for reply in ("a", "b", "c"):
            await store.append("s", reply, [b"x" * 400], keep_ms=60_000)
        await store.append("s", "b", [b"y"], keep_ms=60_000)  # b is now the most recent
        await store.append("s", "d", [b"z" * 300], keep_ms=60_000)
        return [await store.read("s", r, "", 0) is not None for r in ("a", "b", "c", "d")]

    # 1,501 bytes: a (the least recently appended) and c go; b and d stay.
    assert asyncio.run(main()) == [False, True, False, True]


def test_a_log_larger_than_the_budget_is_kept_while_it_is_the_last() -> None:
    async def main() -> tuple[int, bool]:
        store = MemoryStateStore(max_bytes=100)
        positions, _ = await store.append("s", "big", [b"x" * 500, b"y"], keep_ms=60_000)
        entries = await store.read("s", "big", "", 0)
        await store.append("s", "next", [b"z"], keep_ms=60_000)
        return len(entries or []), await store.read("s", "big", "", 0) is None and positions == [
            "1",
            "2",
        ]

    assert asyncio.run(main()) == (2, True)


def test_expired_logs_go_and_their_bytes_with_them() -> None:
    async def main() -> tuple[bool, bool]:
        store = MemoryStateStore(max_bytes=1000)
        await store.append("s", "old", [b"x" * 600], keep_ms=1)
        await asyncio.sleep(0.01)
        await store.append("s", "new", [b"y" * 600], keep_ms=60_000)
        return await store.read("s", "old", "", 0) is None, (
            await store.read("s", "new", "", 0) is not None
        )

    assert asyncio.run(main()) == (True, True)


def test_the_budget_is_checked() -> None:
    with pytest.raises(ValueError, match="reply_log_mb"):
        AgentConfig(reply_log_mb=0)
