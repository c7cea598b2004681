"""Codec speed per message: a round trip through bytes, and our dict conversions.

Each contender starts from its own in-memory message and ends with one again:

- ours: `Msg.FromString(msg.SerializeToString())` (protobuf, upb backend);
- AgentScope: `Msg.from_dict(json.loads(json.dumps(msg.to_dict())))`;
- AgentScope + orjson: the same with `orjson.dumps` / `orjson.loads`;
- our dict conversions: `to_dict(msg)` and `from_dict(d)` on their own.

Times are per message: one call converts every message of a corpus, and the
median time per call is divided by the number of messages.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from _common import (
    Budget,
    compare,
    corpus_names,
    load_corpus,
    parse_args,
    sync_timer,
    write_json,
)
from agentscope.message import Msg as AsMsg

from agentscope_proto import from_dict, to_dict
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg

CONTENDERS = ("ours", "agentscope_json", "agentscope_orjson", "ours_to_dict", "ours_from_dict")


def measure(name: str, budget: Budget) -> dict[str, Any]:
    dicts = load_corpus(name)
    ours = [from_dict(d) for d in dicts]
    theirs = [AsMsg.from_dict(d) for d in dicts]
    from_string = Msg.FromString
    as_from_dict = AsMsg.from_dict
    dumps, loads = json.dumps, json.loads
    odumps, oloads = orjson.dumps, orjson.loads

    def proto_round_trip() -> None:
        for m in ours:
            from_string(m.SerializeToString())

    def agentscope_json() -> None:
        for m in theirs:
            as_from_dict(loads(dumps(m.to_dict())))

    def agentscope_orjson() -> None:
        for m in theirs:
            as_from_dict(oloads(odumps(m.to_dict())))

    def ours_to_dict() -> None:
        for m in ours:
            to_dict(m)

    def ours_from_dict() -> None:
        for d in dicts:
            from_dict(d)

    functions = (proto_round_trip, agentscope_json, agentscope_orjson, ours_to_dict, ours_from_dict)
    timers = {name: sync_timer(fn) for name, fn in zip(CONTENDERS, functions, strict=True)}
    times = compare(timers, budget)
    return {"messages": len(dicts), **{k: v / len(dicts) for k, v in times.items()}}


def main() -> None:
    args = parse_args(__doc__ or "")
    budget = Budget.of(args.quick)
    write_json(
        args.json, {"corpora": {name: measure(name, budget) for name in corpus_names(budget.sizes)}}
    )


if __name__ == "__main__":
    main()
