"""Agent loop: a conversation grown turn by turn, the whole history formatted after every turn.

The conversation is the `tools` corpus (a ReAct agent loop: a system prompt,
user turns, assistant turns with thinking, text and tool calls, tool results,
assistant replies), 200 messages in a full run (20 in a quick one). A turn
adds one message; after every turn the whole history so far is formatted,
as an agent re-sends it on every model call. One timed call is the whole
loop: 200 formats of the prefixes 1..200, in order.

Per registry provider, chat mode (a ReAct agent uses the chat formatter),
side by side in one process:

- `agentscope`: `await <Provider>ChatFormatter().format(history)` every turn,
  which reformats everything;
- `ours`: `format(provider, history)` every turn, no cache;
- `ours_cached`: the same with one fresh format cache for the whole loop
  (`format(..., cache=cache)`), if the package has one (`_common.format_cache`
  detects it); otherwise not timed, and the report says "not available";
- `conversation_json`: one `Conversation` for the whole loop, a message
  appended every turn (copied in: counted), then `format_json()`: the body to
  send, as JSON bytes (AgentScope's side stops at dicts: its encoding is not
  counted);
- `conversation`: the same with `format()`, the body as fresh dicts.

Before timing, every prefix is formatted by every contender and compared:
ours against AgentScope (`same`), cached against uncached (`cache_same`), and
the conversation's bodies against `format()`'s (`conversation_same`: the JSON
equal to `body_to_json` of it, the dicts equal, the warnings equal).
"""

from __future__ import annotations

import asyncio
from typing import Any

import agentscope.formatter as as_formatters
from _common import (
    AGENTSCOPE_FORMATTERS,
    Budget,
    async_timer,
    compare,
    format_cache,
    load_corpus,
    parse_args,
    quiet_logging,
    registry_providers,
    sync_timer,
    write_json,
)
from agentscope.message import Msg as AsMsg

import agentscope_proto
from agentscope_proto import from_dict
from agentscope_proto.formatting import body_to_json
from agentscope_proto.formatting import format as proto_format


def _same(provider: str, ours: dict[str, Any], theirs: list[dict[str, Any]]) -> bool:
    key = AGENTSCOPE_FORMATTERS[provider][1]
    if provider == "anthropic" and theirs and theirs[0].get("role") == "system":
        theirs = theirs[1:]
    return bool(ours[key] == theirs)


def main() -> None:
    args = parse_args(__doc__ or "")
    budget = Budget.of(args.quick)
    quiet_logging()
    size = 20 if args.quick else 200
    corpus = f"tools_{size}"
    dicts = load_corpus(corpus)
    ours = [from_dict(d) for d in dicts]
    theirs = [AsMsg.from_dict(d) for d in dicts]
    turns = range(1, len(dicts) + 1)
    new_cache, cache_what = format_cache()
    loop = asyncio.new_event_loop()
    rows = []
    for provider in registry_providers():
        formatter = getattr(as_formatters, AGENTSCOPE_FORMATTERS[provider][0] + "ChatFormatter")()

        def run_ours(provider: str = provider) -> Any:
            for k in turns:
                proto_format(provider, ours[:k])

        def run_cached(provider: str = provider) -> Any:
            assert new_cache is not None
            cache = new_cache()
            for k in turns:
                proto_format(provider, ours[:k], cache=cache)

        async def run_theirs(formatter: Any = formatter) -> Any:
            for k in turns:
                await formatter.format(theirs[:k])

        row: dict[str, Any] = {"provider": provider, "turns": len(turns)}
        try:
            plain = [proto_format(provider, ours[:k]) for k in turns]
            reference = [loop.run_until_complete(formatter.format(theirs[:k])) for k in turns]
        except Exception as exc:
            rows.append({**row, "same": False, "error": f"{type(exc).__name__}: {exc}"})
            continue
        row["same"] = all(_same(provider, a, b) for a, b in zip(plain, reference, strict=True))
        timers = {"ours": sync_timer(run_ours), "agentscope": async_timer(loop, run_theirs)}
        if new_cache is not None:
            cache = new_cache()
            cached = [proto_format(provider, ours[:k], cache=cache) for k in turns]
            row["cache_same"] = all(
                dict(a) == dict(b) and list(a.warnings) == list(b.warnings)
                for a, b in zip(plain, cached, strict=True)
            )
            timers["ours_cached"] = sync_timer(run_cached)
        conversation = getattr(agentscope_proto, "Conversation", None)
        if conversation is not None:

            def run_json(provider: str = provider, conversation: Any = conversation) -> Any:
                history = conversation(provider)
                for msg in ours:
                    history.append(msg)
                    history.format_json()

            def run_dicts(provider: str = provider, conversation: Any = conversation) -> Any:
                history = conversation(provider)
                for msg in ours:
                    history.append(msg)
                    history.format()

            history = conversation(provider)
            same = True
            for msg, expected in zip(ours, plain, strict=True):
                history.append(msg)
                as_json, as_dicts = history.format_json(), history.format()
                wanted = [w.SerializeToString() for w in expected.warnings]
                same = same and (
                    as_json.body_json == body_to_json(expected)
                    and dict(as_dicts) == dict(expected)
                    and [w.SerializeToString() for w in as_json.warnings] == wanted
                    and [w.SerializeToString() for w in as_dicts.warnings] == wanted
                )
            row["conversation_same"] = same
            timers["conversation_json"] = sync_timer(run_json)
            timers["conversation"] = sync_timer(run_dicts)
        row.update(compare(timers, budget))
        rows.append(row)
    loop.close()
    write_json(
        args.json,
        {"corpus": corpus, "turns": len(turns), "cache": cache_what, "rows": rows},
    )


if __name__ == "__main__":
    main()
