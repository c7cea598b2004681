"""A consumer group member in a process of its own, for the fault tests:
`python group_member.py TARGET TOPIC MEMBER HOLD_AFTER`.

It prints `live` once subscribed, then `got OFFSET` for each message and
`acked OFFSET` once it acknowledged it (one line each, flushed). After
HOLD_AFTER acknowledgements (-1: never) it stops acknowledging and holds
what it receives, as a member that hangs or dies mid-task, until killed.
"""

from __future__ import annotations

import sys

from agentscope_proto.hub import ConsumerGroup, HubClient

# Long enough that a live member, however loaded the machine, acknowledges
# well before anyone takes its messages over.
CLAIM_IDLE_MS = 3000


def main() -> None:
    target, topic, member, hold_after = sys.argv[1:5]
    acked = 0
    group = ConsumerGroup(name="workers", member=member, claim_idle_ms=CLAIM_IDLE_MS, max_unacked=8)
    with HubClient(target) as hub, hub.subscribe(topic, group=group) as events:
        print("live", flush=True)
        for event in events:
            print("got", event.offset, flush=True)
            if acked == int(hold_after):
                continue
            events.ack(event.offset)
            acked += 1
            print("acked", event.offset, flush=True)


if __name__ == "__main__":
    main()
