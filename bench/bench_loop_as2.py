"""Agent loop of the providers AgentScope 1.0.21 lacks, vs AgentScope 2.x's own formatters.

The loop of `bench_loop.py` (a conversation grown one message a turn, the
whole history formatted after every turn; the `tools` and `varied` corpora,
200 messages each in a full run, 20 in a quick one) for the registry's
providers that have no AgentScope 1.0.21 variant (moonshot, xai, volcengine,
minimax, zhipu), against AgentScope 2.0.11's formatters for them. Runs in
the venv that has AgentScope 2.x (.venv-as2, with xai-sdk: its
`XAIChatFormatter` builds xai-sdk's messages).

Both sides get the same messages in AgentScope 2.x's shape: each corpus
message (1.x dicts) is read with `from_dict` and written with `to_dict(...,
dialect="agentscope2")`; AgentScope's side is `Msg.model_validate` of those
dicts, ours `from_dict(..., dialect="agentscope2")` of the same dicts (a
check says both hold the same message: ours written back equals 2.x's
`model_dump(mode="json")`). Per provider, chat mode, side by side in one
process:

- `agentscope2`: `await <Provider>ChatFormatter().format(history)` every
  turn, which reformats everything (xAI's returns xai-sdk's protobuf
  `Message`s for its gRPC API, the others lists of dicts);
- `ours`: `format(provider, history)` every turn, no cache, the provider's
  default fidelity (`"provider"`: these providers' only one);
- `conversation_json`: one `Conversation` for the whole loop, a message
  appended every turn (copied in: counted), then `format_json()`: the body to
  send, as JSON bytes (AgentScope's side stops at its objects: their encoding
  is not counted).

The outputs cannot be equal: ours is the body of the provider's own API (for
MiniMax its OpenAI-compatible Chat Completions, for xAI its REST API), 2.x's
is 2.x's (MiniMax through Anthropic's Messages shape, xAI through its gRPC
API). Before timing, every prefix is formatted by both sides (an error on
either stops that provider's row) and the sides' API messages, tool calls
and tool results are counted, so that what each side does is on record:
the counts of the whole history, how many prefixes have a different number
of API messages, and how many of those end on tool calls not yet answered.
The same pass checks our two contenders against each other: the growing
`Conversation`'s JSON equals `body_to_json` of `format()`'s, every prefix
(`conversation_same`).

A provider without a 2.x formatter (zhipu) gets our times alone.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import agentscope.formatter as as_formatters
from _common import (
    Budget,
    async_timer,
    compare,
    load_corpus,
    parse_args,
    quiet_logging,
    scratch_tempdir,
    sync_timer,
    write_json,
)
from agentscope.message import Msg as As2Msg
from google.protobuf.json_format import MessageToDict

from agentscope_proto import Conversation, from_dict, to_dict
from agentscope_proto.formatting import body_to_json
from agentscope_proto.formatting import format as proto_format
from agentscope_proto.providers import PROVIDERS

# How AgentScope 2.0.11 names each provider's formatter (`<prefix>ChatFormatter`
# in `agentscope.formatter`); None: 2.0.11 has none. A provider of the
# registry without an "agentscope" variant that is missing here stops the
# benchmark: it would otherwise be left out silently.
AGENTSCOPE2_FORMATTERS: dict[str, str | None] = {
    "moonshot": "Moonshot",
    "xai": "XAI",
    "volcengine": "Volcengine",
    "minimax": "MiniMax",
    "zhipu": None,
}
# The body key of our output that holds the message list (all five are
# Chat Completions APIs).
BODY_KEY = "messages"


def new_providers() -> list[str]:
    """The registry's providers that AgentScope 1.0.21 lacks, in its order."""
    names = [name for name, provider in PROVIDERS.items() if "agentscope" not in provider.variants]
    missing = [name for name in names if name not in AGENTSCOPE2_FORMATTERS]
    if missing:
        raise SystemExit(f"bench: providers without an AGENTSCOPE2_FORMATTERS entry: {missing}")
    return names


def _counts(messages: Sequence[Any]) -> list[int]:
    """[API messages, tool calls, tool results] of one side's output: Chat
    Completions dicts, Anthropic-shaped dicts or xai-sdk's `Message`s."""
    calls = results = 0
    for message in messages:
        m = message if isinstance(message, dict) else MessageToDict(message)
        calls += len(m.get("tool_calls") or m.get("toolCalls") or [])
        results += m.get("role") in ("tool", "ROLE_TOOL")
        content = m.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict):
                calls += block.get("type") == "tool_use"
                results += block.get("type") == "tool_result"
    return [len(messages), calls, results]


def _checked(
    provider: str, formatter: Any, ours: list[Any], theirs: list[Any], loop: Any
) -> dict[str, Any]:
    """Every prefix formatted by both sides (ours: `format()` and one growing
    `Conversation`, whose JSON must equal `body_to_json` of `format()`'s), and
    what the two sides produced, counted."""
    differing = open_calls = 0
    same = True
    mine = other = [0, 0, 0]
    history = Conversation(provider)
    for k in range(1, len(ours) + 1):
        body = proto_format(provider, ours[:k])
        history.append(ours[k - 1])
        same = same and history.format_json().body_json == body_to_json(body)
        mine = _counts(body[BODY_KEY])
        if formatter is None:
            continue
        other = _counts(loop.run_until_complete(formatter.format(theirs[:k])))
        if mine[0] != other[0]:
            differing += 1
            # The turn is an agent's tool calls, their results not yet in.
            open_calls += bool(theirs[k - 1].has_content_blocks("tool_call"))
    checked: dict[str, Any] = {"conversation_same": same, "counts": {"ours": mine}}
    if formatter is not None:
        checked["counts"]["agentscope2"] = other
        checked["prefixes_differing"] = differing
        checked["differing_open_calls"] = open_calls
    return checked


def run_corpus(corpus: str, budget: Budget, loop: asyncio.AbstractEventLoop) -> list[Any]:
    """One row per provider: the loop over `corpus`, every contender timed."""
    shaped = [to_dict(from_dict(d), dialect="agentscope2") for d in load_corpus(corpus)]
    theirs = [As2Msg.model_validate(d) for d in shaped]
    ours = [from_dict(d, dialect="agentscope2") for d in shaped]
    same_input = all(
        to_dict(a, dialect="agentscope2") == b.model_dump(mode="json")
        for a, b in zip(ours, theirs, strict=True)
    )
    turns = range(1, len(ours) + 1)
    rows = []
    for provider in new_providers():
        row: dict[str, Any] = {
            "provider": provider,
            "turns": len(turns),
            "fidelity": PROVIDERS[provider].default_fidelity,
            "same_input": same_input,
        }

        def run_ours(provider: str = provider) -> Any:
            for k in turns:
                proto_format(provider, ours[:k])

        def run_json(provider: str = provider) -> Any:
            history = Conversation(provider)
            for msg in ours:
                history.append(msg)
                history.format_json()

        timers = {"ours": sync_timer(run_ours), "conversation_json": sync_timer(run_json)}
        prefix = AGENTSCOPE2_FORMATTERS[provider]
        formatter_class = getattr(as_formatters, f"{prefix}ChatFormatter", None) if prefix else None
        formatter = formatter_class() if formatter_class is not None else None
        if formatter is None:
            row["agentscope2_missing"] = "AgentScope 2.0.11 has no formatter for it"
        try:
            row.update(_checked(provider, formatter, ours, theirs, loop))
        except Exception as exc:
            # xai-sdk missing: `make .venv-as2/.bench-installed` installs it.
            hint = " (make .venv-as2/.bench-installed)" if isinstance(exc, ImportError) else ""
            rows.append({**row, "error": f"{type(exc).__name__}: {exc}{hint}"})
            continue
        if formatter is not None:

            async def run_theirs(formatter: Any = formatter) -> Any:
                for k in turns:
                    await formatter.format(theirs[:k])

            timers["agentscope2"] = async_timer(loop, run_theirs)
        row.update(compare(timers, budget))
        rows.append(row)
    return rows


def main() -> None:
    args = parse_args(__doc__ or "")
    budget = Budget.of(args.quick)
    quiet_logging()
    size = 20 if args.quick else 200
    started = time.strftime("%Y-%m-%d %H:%M %Z")
    load_before = os.getloadavg()
    loop = asyncio.new_event_loop()
    with scratch_tempdir("bench-loop-as2-"):
        histories = [
            {"corpus": corpus, "turns": size, "rows": run_corpus(corpus, budget, loop)}
            for corpus in (f"tools_{size}", f"varied_{size}")
        ]
    loop.close()
    write_json(
        args.json,
        {
            "started": started,
            "load": [round(x, 2) for x in (*load_before, *os.getloadavg())],
            "versions": {name: _version(name) for name in ("agentscope", "xai-sdk")},
            "histories": histories,
        },
    )


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
