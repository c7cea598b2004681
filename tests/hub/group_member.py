"""A consumer group member in a process of its own, for the fault tests:
`python group_member.py WHERE TOPIC MEMBER HOLD_AFTER`.

WHERE is a hub server's address (the member subscribes through the
HubService) or a redis:// URL (it reads the hub's streams itself, with
`DirectHub`). It prints `live` once subscribed, then `got OFFSET` for each
message and `acked OFFSET` once it acknowledged it (one line each,
flushed). After HOLD_AFTER acknowledgements (-1: never) it stops
acknowledging and holds what it receives, as a member that hangs or dies
mid-task, until killed.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from agentscope_proto.hub import ConsumerGroup, DirectHub, HubClient

# Long enough that a live member, however loaded the machine, acknowledges
# well before anyone takes its messages over.
CLAIM_IDLE_MS = 3000


class _Work:
    def __init__(self, hold_after: int) -> None:
        self.hold_after = hold_after
        self.acked = 0

    def got(self, offset: str) -> bool:
        """Whether to acknowledge the message at `offset`."""
        print("got", offset, flush=True)
        return self.acked != self.hold_after

    def done(self, offset: str) -> None:
        self.acked += 1
        print("acked", offset, flush=True)


def _served(target: str, topic: str, group: ConsumerGroup, work: _Work) -> None:
    with HubClient(target) as hub, hub.subscribe(topic, group=group) as events:
        print("live", flush=True)
        for event in events:
            if work.got(event.offset):
                events.ack(event.offset)
                work.done(event.offset)


async def _direct(url: str, topic: str, group: ConsumerGroup, work: _Work) -> None:
    hub = await DirectHub.connect(url)
    events: Any = await hub.subscribe(topic, group=group)
    print("live", flush=True)
    async for event in events:
        if work.got(event.offset):
            await events.ack(event.offset)
            work.done(event.offset)


def main() -> None:
    where, topic, member, hold_after = sys.argv[1:5]
    group = ConsumerGroup(name="workers", member=member, claim_idle_ms=CLAIM_IDLE_MS, max_unacked=8)
    work = _Work(int(hold_after))
    if where.startswith("redis://"):
        asyncio.run(_direct(where, topic, group, work))
    else:
        _served(where, topic, group, work)


if __name__ == "__main__":
    main()
