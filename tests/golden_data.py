"""Loading of the golden files, and decoding of their placeholders ({TMP}, {CWD}, {"$bytes": ...}).

Layout of tests/golden/ (written by the make_*.py generators):
- `formatters/inputs.json`: each conversation (message list) and each tool set once,
  by name, and every case input once, by case name: its conversation, multi-agent
  mode, options, tool set and tool choice;
- `formatters/<provider>.json`: that provider's expectations, in its case order: the
  input's name, then `expected` + `warnings` or `error`, and `options` only where a
  value depends on the provider (e.g. a `max_tokens` fitted to its own output);
- `parsers/<provider>.json`: responses and streams with what AgentScope parsed
  (each provider has its own wire format, so nothing repeats across files);
- `messages.json`: the message-helper cases.

The case dicts returned here are fresh on every call (callers may mutate them) and
hold what a case always held: a formatter case is the input's fields plus the
provider's expectations.
"""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"
FORMATTER_INPUTS = "inputs.json"


def _read(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as file:
        data: dict[str, Any] = json.load(file)
    return data


def golden_providers(kind: str) -> list[str]:
    """The providers with a golden file of `kind` ("formatters" or "parsers")."""
    return sorted(p.stem for p in (GOLDEN / kind).glob("*.json") if p.name != FORMATTER_INPUTS)


def formatter_inputs() -> dict[str, Any]:
    """inputs.json: its `conversations`, `tool_sets` and `inputs` tables."""
    return _read(GOLDEN / "formatters" / FORMATTER_INPUTS)


def _copy(value: Any) -> Any:
    """A copy of a JSON value: cases sharing a conversation must not share its objects."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def formatter_cases(provider: str) -> list[dict[str, Any]]:
    """The formatter cases of `provider`: name, multi_agent, options, tools, tool_choice,
    msgs, then `expected` and `warnings`, or `error`."""
    tables = formatter_inputs()
    cases = []
    for entry in _read(GOLDEN / "formatters" / f"{provider}.json")["cases"]:
        name = entry["name"]
        if name not in tables["inputs"]:
            raise KeyError(f"formatters/{provider}.json: case {name!r} has no input")
        given = tables["inputs"][name]
        own = entry.get("options", {})
        if own.keys() & given["options"].keys():
            raise ValueError(f"formatters/{provider}.json: {name!r} repeats an input option")
        tools = given["tools"]
        case = {
            "name": name,
            "multi_agent": given["multi_agent"],
            "options": {**given["options"], **own},
            "tools": None if tools is None else _copy(tables["tool_sets"][tools]),
            "tool_choice": given["tool_choice"],
            "msgs": _copy(tables["conversations"][given["conversation"]]),
        }
        case.update((k, v) for k, v in entry.items() if k not in ("name", "options"))
        cases.append(case)
    return cases


def input_cases() -> list[dict[str, Any]]:
    """Every golden conversation of inputs.json as a case of no provider's
    (no expectations): name, multi_agent, options, tools, tool_choice, msgs."""
    tables = formatter_inputs()
    cases = []
    for name, given in tables["inputs"].items():
        tools = given["tools"]
        cases.append(
            {
                "name": name,
                "multi_agent": given["multi_agent"],
                "options": dict(given["options"]),
                "tools": None if tools is None else _copy(tables["tool_sets"][tools]),
                "tool_choice": given["tool_choice"],
                "msgs": _copy(tables["conversations"][given["conversation"]]),
            }
        )
    return cases


def parser_cases(provider: str) -> list[dict[str, Any]]:
    """The parser cases of `provider`: name, stream, options, response or chunks, expected."""
    cases: list[dict[str, Any]] = _read(GOLDEN / "parsers" / f"{provider}.json")["cases"]
    return cases


def message_golden() -> dict[str, Any]:
    """The message-helper golden file (cases plus the generated-field checks)."""
    return _read(GOLDEN / "messages.json")


def decode(value: Any) -> Any:
    """Golden JSON with its placeholders replaced by this machine's values."""
    if isinstance(value, dict):
        if list(value) == ["$bytes"]:
            return base64.b64decode(value["$bytes"])
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    if isinstance(value, str):
        return value.replace("{TMP}", tempfile.gettempdir()).replace("{CWD}", str(GOLDEN))
    return value


def message_pool() -> list[dict[str, Any]]:
    """Every distinct message of the golden conversations that formats alone
    (no media files), for property tests that build conversations of them."""
    pool: dict[str, dict[str, Any]] = {}
    for conversation in formatter_inputs()["conversations"].values():
        for msg in conversation:
            if "media/" not in json.dumps(msg):
                pool.setdefault(json.dumps(msg, sort_keys=True), msg)
    return list(pool.values())


BENCH_CORPUS = GOLDEN.parents[1] / "bench" / "corpus"


def bench_history(name: str) -> list[dict[str, Any]]:
    """A conversation of the benchmark's corpus (`bench/corpus/<name>.json`,
    written by `bench/make_corpus.py`), e.g. `varied_20`: an agent's history
    with what real ones carry (blocks a provider drops, extra keys, odd tool
    inputs, media, an image a tool returned). Fresh dicts on every call."""
    messages: list[dict[str, Any]] = _read(BENCH_CORPUS / f"{name}.json")["messages"]
    return messages
