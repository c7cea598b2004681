"""Agent loop: a conversation grown turn by turn, the whole history formatted after every turn.

Two conversations, 200 messages each in a full run (20 in a quick one): the
`tools` corpus (a ReAct agent loop: a system prompt, user turns, assistant
turns with thinking, text and tool calls, tool results, assistant replies)
and the `varied` one (the same kind of loop with what real histories carry
besides: blocks a provider drops, extra keys, odd tool inputs, media, an
image a tool returned; see `make_corpus.py`). A turn adds one message; after
every turn the whole history so far is formatted, as an agent re-sends it on
every model call. One timed call is the whole loop: 200 formats of the
prefixes 1..200, in order.

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
equal to `body_to_json` of it, the dicts equal, the warnings equal). That
check also counts the log records the conversation wrote over the whole
loop (`conversation_logged`) against the warnings of the full history
(`warnings`): each dropped block should be logged once, not once a turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
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
    scratch_tempdir,
    sync_timer,
    write_json,
)
from agentscope.message import Msg as AsMsg

import agentscope_proto
from agentscope_proto import from_dict
from agentscope_proto.formatting import body_to_json
from agentscope_proto.formatting import format as proto_format

# Where a tool result's inline media is "saved": AgentScope writes a temp file
# with a random name, ours cites a content-addressed path without writing it.
_SAVED_MEDIA = re.compile(r'[^\s"]*/(?:tmp\w+|agentscope_media/[0-9a-f]{16})\.(\w+)')


def _same(provider: str, ours: dict[str, Any], theirs: list[dict[str, Any]]) -> bool:
    key = AGENTSCOPE_FORMATTERS[provider][1]
    if provider == "anthropic" and theirs and theirs[0].get("role") == "system":
        theirs = theirs[1:]
    if ours[key] == theirs:
        return True
    mine, other = (_SAVED_MEDIA.sub(r"MEDIA.\1", json.dumps(m)) for m in (ours[key], theirs))
    return mine == other


class _Count(logging.Handler):
    """Counts the records of the package's dropped-block log."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _conversation_checked(
    conversation: Any, provider: str, ours: list[Any], plain: list[Any]
) -> tuple[bool, int]:
    """Whether every body of a conversation grown over `ours` equals
    `format()`'s (`plain`), and how many log records it wrote meanwhile."""
    counter = _Count()
    log = logging.getLogger("agentscope_proto")
    logging.disable(logging.NOTSET)
    log.addHandler(counter)
    try:
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
    finally:
        log.removeHandler(counter)
        quiet_logging()
    return same, counter.count


def run_corpus(corpus: str, budget: Budget, loop: asyncio.AbstractEventLoop) -> list[Any]:
    """One row per provider: the loop over `corpus`, every contender timed."""
    dicts = load_corpus(corpus)
    ours = [from_dict(d) for d in dicts]
    theirs = [AsMsg.from_dict(d) for d in dicts]
    turns = range(1, len(dicts) + 1)
    new_cache, _ = format_cache()
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
        row["warnings"] = len(plain[-1].warnings)
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

            same, logged = _conversation_checked(conversation, provider, ours, plain)
            row["conversation_same"] = same
            row["conversation_logged"] = logged
            timers["conversation_json"] = sync_timer(run_json)
            timers["conversation"] = sync_timer(run_dicts)
        row.update(compare(timers, budget))
        rows.append(row)
    return rows


def main() -> None:
    args = parse_args(__doc__ or "")
    budget = Budget.of(args.quick)
    quiet_logging()
    size = 20 if args.quick else 200
    _, cache_what = format_cache()
    loop = asyncio.new_event_loop()
    corpus = f"tools_{size}"
    # Histories like real agents' (the same loop, another corpus).
    varied = f"varied_{size}"
    with scratch_tempdir("bench-loop-"):
        rows = run_corpus(corpus, budget, loop)
        varied_rows = run_corpus(varied, budget, loop)
    loop.close()
    write_json(
        args.json,
        {
            "corpus": corpus,
            "turns": size,
            "cache": cache_what,
            "rows": rows,
            "histories": [{"corpus": varied, "turns": size, "rows": varied_rows}],
        },
    )


if __name__ == "__main__":
    main()
