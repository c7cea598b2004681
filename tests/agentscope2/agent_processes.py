"""Served agents in processes of their own, and a hub topic read from outside,
for the tests of topics across processes (test_topic_processes.py,
test_a2a_conversation.py).

`AgentProcess` runs `agentscope-proto serve-agent MODULE:FACTORY ...` (from
this directory unless told) and reads its log throughout (a full pipe would
block it); `Listener` reads a topic's messages in a thread; `all_handled`
says when agents are done with a message (a Redis hub).
"""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentscope_proto import get_text_content
from agentscope_proto.hub import HubClient

from replay_server import wait_until

HERE = Path(__file__).resolve().parent


class AgentProcess:
    """`agentscope-proto serve-agent ARGS...` with `env`, in `cwd`."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str], cwd: Path = HERE) -> None:
        command = str(Path(sys.executable).parent / "agentscope-proto")
        self.process = subprocess.Popen(
            [command, "serve-agent", *args], cwd=cwd, env=env, stderr=subprocess.PIPE, text=True
        )
        self.log: list[str] = []
        self._listening = threading.Event()
        self.target = ""
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)
            found = re.search(r"listening on (\S+:\d+) \(gRPC\)", line)
            if found:
                self.target = found.group(1)
                self._listening.set()
        self._listening.set()

    def wait_listening(self) -> str:
        """The server's gRPC target, once it listens (its topic joined)."""
        self._listening.wait(120)
        assert self.target, "the server did not start:\n" + "".join(self.log)
        return self.target

    def stop(self) -> None:
        """SIGTERM, as an operator stops it; one that outlives 30 s is killed
        (never left behind) and reported with its log."""
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(
                "the server did not stop within 30 s of SIGTERM:\n" + "".join(self.log)
            ) from None


def stop_all(processes: Sequence[AgentProcess]) -> None:
    """Stop every process, each even where another failed to stop (the
    first failure raised after)."""
    failures = []
    for process in processes:
        try:
            process.stop()
        except AssertionError as exc:
            failures.append(exc)
    if failures:
        raise failures[0]


class Listener:
    """A hub subscription read in a thread: (name, text) of each message."""

    def __init__(self, target: str, topic: str) -> None:
        self._client = HubClient(target)
        self._events = self._client.subscribe(topic)  # live once this returns
        self._heard: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        for event in self._events:
            self._heard.put(event)

    def next(self, count: int) -> list[tuple[str, str | None]]:
        events = [self._heard.get(timeout=120) for _ in range(count)]
        return [(event.msg.name, get_text_content(event.msg)) for event in events]

    def close(self) -> None:
        self._events.close()
        self._client.close()


def all_handled(redis_url: str, topic: str, names: Sequence[str], offset: str) -> bool:
    """Whether the agents `names` of `topic` (on a Redis hub) have each
    handled the message at `offset`: they record their progress after
    publishing what they answered, so nothing more comes from them for it."""
    from agentscope_proto.hub.store import parse_offset

    with redis_client(redis_url) as kept:

        def handled(name: str) -> bool:
            value = kept.get(f"agentscope:agent:{{{topic}}}:{name}")
            return value is not None and parse_offset(value.decode()) >= parse_offset(offset)

        return all(wait_until(lambda name=name: handled(name), 60) for name in names)


def redis_client(url: str) -> Any:
    """A blocking redis-py client of `url`: its cluster client when the node
    is one of a Redis Cluster (each key read from its slot's node)."""
    from redis import Redis, RedisCluster

    with Redis.from_url(url) as node:
        clustered = node.info("cluster").get("cluster_enabled") == 1
    return RedisCluster.from_url(url) if clustered else Redis.from_url(url)
