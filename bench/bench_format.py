"""Format speed: `agentscope_proto.formatting.format` vs AgentScope's formatters.

For each provider, in chat mode (`<Provider>ChatFormatter`) and multi-agent
mode (`<Provider>MultiAgentFormatter`), over every corpus: each side formats a
conversation it already holds in its own message type (ours: protobuf `Msg`s,
as the gRPC service receives them; AgentScope: its `Msg` objects). AgentScope's
`format` is a coroutine; it is timed inside one coroutine awaiting it in a loop
(see `_common.async_timer`), so only the formatting is counted. Logging is off
on both sides. Ours returns the whole request body (messages plus the
provider's other fields); AgentScope's formatter returns the message list.

Ours is timed twice, side by side: as a caller gets it (`ours`: the compiled
core where it takes the call) and on the Python path alone (`ours_python`,
`AGENTSCOPE_PROTO_CORE=python` for the call); `path` records which path the
first took (`_core.counts()`: `compiled`, or `python:<why>`), and the run
prints the counts of the whole section.

Before timing, the two outputs are compared (Anthropic: after AgentScope's
model class would lift the system message into `system`); `same` records it.
A conversation that either side refuses is not timed; `errors` says why.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import agentscope.formatter as as_formatters
from _common import (
    AGENTSCOPE_FORMATTERS,
    Budget,
    async_timer,
    compare,
    corpus_names,
    load_corpus,
    parse_args,
    quiet_logging,
    registry_providers,
    sync_timer,
    write_json,
)
from agentscope.message import Msg as AsMsg

from agentscope_proto import _core, from_dict
from agentscope_proto.formatting import format as proto_format

MODES = {"chat": False, "multi_agent": True}


def _same(provider: str, ours: dict[str, Any], theirs: list[dict[str, Any]]) -> bool:
    key = AGENTSCOPE_FORMATTERS[provider][1]
    if provider == "anthropic" and theirs and theirs[0].get("role") == "system":
        theirs = theirs[1:]
    return bool(ours[key] == theirs)


def main() -> None:
    args = parse_args(__doc__ or "")
    budget = Budget.of(args.quick)
    quiet_logging()
    loop = asyncio.new_event_loop()
    rows = []
    for name in corpus_names(budget.sizes):
        dicts = load_corpus(name)
        ours = [from_dict(d) for d in dicts]
        theirs = [AsMsg.from_dict(d) for d in dicts]
        for provider in registry_providers():
            prefix = AGENTSCOPE_FORMATTERS[provider][0]
            for mode, multi_agent in MODES.items():
                suffix = "MultiAgentFormatter" if multi_agent else "ChatFormatter"
                formatter = getattr(as_formatters, prefix + suffix)()

                def run_ours(
                    provider: str = provider, multi_agent: bool = multi_agent, ours: Any = ours
                ) -> Any:
                    return proto_format(provider, ours, multi_agent=multi_agent)

                def run_python(run: Any = run_ours) -> Any:
                    with _core.forced("python"):
                        return run()

                def run_theirs(formatter: Any = formatter, theirs: Any = theirs) -> Any:
                    return formatter.format(theirs)

                row: dict[str, Any] = {
                    "corpus": name,
                    "provider": provider,
                    "mode": mode,
                    "messages": len(dicts),
                }
                errors = {}
                _core.reset_counts()
                try:
                    ours_out = run_ours()
                    row["path"] = ", ".join(_core.counts()) or "python"
                except Exception as exc:
                    errors["ours"] = f"{type(exc).__name__}: {exc}"
                try:
                    theirs_out = loop.run_until_complete(run_theirs())
                except Exception as exc:
                    errors["agentscope"] = f"{type(exc).__name__}: {exc}"
                if errors:
                    # Nothing to time: a conversation one side refuses is reported as such.
                    rows.append({**row, "same": len(errors) == 2, "errors": errors})
                    continue
                row["same"] = _same(provider, ours_out, theirs_out)
                timers = {
                    "ours": sync_timer(run_ours),
                    "ours_python": sync_timer(run_python),
                    "agentscope": async_timer(loop, run_theirs),
                }
                row.update(compare(timers, budget))
                rows.append(row)
    loop.close()
    paths = Counter(row.get("path", "not timed") for row in rows)
    print(
        f"format: compiled core {'built' if _core.available() else 'not built'}; "
        f"paths of the first call of each row: {dict(sorted(paths.items()))}"
    )
    write_json(args.json, {"rows": rows, "core": _core.available(), "paths": dict(paths)})


if __name__ == "__main__":
    main()
