"""A consumer group under a fault, for real: three member processes on a
hub server process, one killed (SIGKILL) while it holds messages it never
acknowledged; every message is acknowledged exactly once, by a member
alive to do it, the dead member's after they are taken over. On the
memory store, on a redis-server, and on a Redis Cluster of 3 masters (on
Redis, one member reads the hub's streams itself, with `DirectHub`)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentscope_proto.hub import HubClient

from hub_fixtures import RedisCluster, ServeProcess, msg, store_url

MEMBER = Path(__file__).with_name("group_member.py")


class _Member:
    """`group_member.py` in a process of its own, its lines read as they come."""

    def __init__(self, target: str, topic: str, name: str, hold_after: int) -> None:
        command = [sys.executable, str(MEMBER), target, topic, name, str(hold_after)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line == "live\n", line
        self.got: list[str] = []
        self.acked: list[str] = []
        # Lines of neither kind (CI once met one, which ended the reader):
        # kept, and shown where the test fails, the reader reading on.
        self.odd: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            match line.split():
                case ["got", offset]:
                    self.got.append(offset)
                case ["acked", offset]:
                    self.acked.append(offset)
                case _:
                    self.odd.append(line)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self._reader.join(10)


def _wait_until(done: Callable[[], bool], what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cluster = RedisCluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield cluster.url
    finally:
        cluster.stop()


def _url(request: pytest.FixtureRequest, kind: str) -> str:
    if kind == "cluster":
        return str(request.getfixturevalue("cluster_url"))
    return store_url(request, kind)


@pytest.fixture(scope="module", params=["memory", "redis", "cluster"])
def hub_url(request: pytest.FixtureRequest) -> str:
    return _url(request, request.param)


def test_a_member_killed_mid_stream_loses_nothing_and_nothing_is_done_twice(
    hub_url: str, topic: str
) -> None:
    server = ServeProcess(hub_url)
    members: list[_Member] = []
    try:
        # m0 acknowledges 5 messages, then holds what it gets (8 at most) and dies.
        # On Redis, m2 reads the hub's streams itself (DirectHub), in the same group.
        places = [server.target, server.target, hub_url if hub_url != "memory" else server.target]
        members += [
            _Member(place, topic, f"m{i}", 5 if i == 0 else -1) for i, place in enumerate(places)
        ]
        victim, live = members[0], members[1:]
        with HubClient(server.target) as hub:
            offsets = hub.publish_many(topic, [msg(str(i)) for i in range(150)])
            _wait_until(
                lambda: len(victim.got) > len(victim.acked) == 5, "the victim holds messages"
            )
            victim.kill()
            held = set(victim.got) - set(victim.acked)
            offsets += hub.publish_many(topic, [msg(str(i)) for i in range(150, 300)])
            _wait_until(
                lambda: len(victim.acked) + sum(len(m.acked) for m in live) >= len(offsets),
                "every message acknowledged",
            )
        acked = victim.acked + [offset for member in live for offset in member.acked]
        odd = {f"m{i}": member.odd for i, member in enumerate(members) if member.odd}
        assert sorted(acked) == sorted(offsets), odd  # each once, none lost
        assert held
        assert held <= {offset for member in live for offset in member.acked}  # taken over
        assert all(member.acked for member in live)  # both took part, the direct one too
        # No message went to two live members: only the dead one's were delivered again.
        received = Counter(offset for member in live for offset in member.got)
        assert set(received.values()) == {1}
    finally:
        for member in members:
            if member.process.poll() is None:
                member.kill()
        server.stop()


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_a_batch_over_many_topics_lands_on_each_topics_node(
    request: pytest.FixtureRequest, kind: str
) -> None:
    hub_url = _url(request, kind)
    from agentscope_proto.hub.redis_streams import RedisHubStore
    from agentscope_proto.hub.store import HubConfig

    async def run() -> None:
        store = await RedisHubStore.connect(HubConfig(url=hub_url))
        try:
            topics = [f"spread/{uuid.uuid4().hex}" for _ in range(8)]  # over the slots
            stored = await store.publish_many([(t, t.encode()) for t in topics for _ in range(2)])
            assert all(isinstance(offset, str) for offset in stored)
            for topic in topics:
                subscription = await store.subscribe(topic, "0-0")
                assert [msg for _, msg in await subscription.next()] == [topic.encode()] * 2
                subscription.close()
        finally:
            await store.close()

    asyncio.run(run())
