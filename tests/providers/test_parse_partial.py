"""The partial-object fast path of tool-argument repair (`_parse._partial`)
gives exactly what json_repair gives, on every prefix of generated argument
objects; and `loads_with_repair` / `loads_streaming` keep their results."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from json_repair import repair_json

from agentscope_proto.providers._parse import (
    _UNREAD,
    _partial,
    loads_streaming,
    loads_with_repair,
)

# Pieces of strings: json_repair's heuristics react to quotes, escapes,
# brackets, commas, colons and comment markers; all of them appear.
_PIECES = [
    "a", "b", " ", ",", ":", "{", "}", "[", "]", '"', '\\"', "\\\\", "\\n", "\\t", "\\/",
    "\\u00e9", "\\ud83d", "é", "日", "🚀", "\t", "x", "1", "-", ".", "e", "/", "*", "#",
    "//", "/*", "*/", "'", "true", "null", ', "', '": ',
]  # fmt: skip
_KEYS = ["a", "b", "city", "unit", "", "k l", "k,l", "k:l", "é", "a ", " ", "1", "a}", "x]"]
_NUMBERS = ["0", "-1", "12", "1.5", "-0.25e3", "1E+2", "123456789012345678901234567890"]


def _document(rng: random.Random) -> str:
    def space() -> str:
        return rng.choice(["", " ", "  ", "\n"])

    def value() -> str:
        roll = rng.random()
        if roll < 0.5:
            return '"' + "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 6))) + '"'
        if roll < 0.7:
            return rng.choice(_NUMBERS)
        if roll < 0.85:
            return rng.choice(["true", "false", "null"])
        return rng.choice(["[1, 2]", '{"n": "v"}', "[]", "{}"])

    members = [
        f'"{rng.choice(_KEYS)}"{space()}:{space()}{value()}{space()}'
        for _ in range(rng.randint(0, 4))
    ]
    return space() + "{" + space() + ("," + space()).join(members) + "}"


def _json_repair(text: str) -> Any:
    try:
        return json.loads(repair_json(text, stream_stable=True))
    except Exception:
        return _UNREAD


def _exact(value: Any) -> tuple[str, str]:
    # Type and serialised form: key order and int/float/bool count too.
    return type(value).__name__, json.dumps(value)


@pytest.mark.parametrize("seed", range(4))
def test_partial_matches_json_repair_on_every_prefix(seed: int) -> None:
    rng = random.Random(seed)
    taken = 0
    for _ in range(150):
        document = _document(rng)
        for end in range(len(document) + 1):
            text = document[:end]
            fast = _partial(text)
            if fast is _UNREAD:
                continue
            taken += 1
            assert _exact(fast) == _exact(_json_repair(text)), text
    # The fast path is taken, not declined everywhere.
    assert taken > 500


@pytest.mark.parametrize(
    "text",
    [
        "{",
        '{"city": "Par',
        '{"city": "Paris", ',
        '{"city": "Paris", "un',
        '{"city": "Paris", "unit"',
        '{"city":',
        '{"id": 123',
        '{"a": tru',
        '{"a": -',
        '{"ci',
        '{"',
        '{"a":1}{"b":2}',
        '{"q": "say \\"hi\\',
        '{"a": "x}',
        "[1,2",
        '{"a": 1e5',
        "{'a': 'b'}",
        '{"n": ' + "9" * 5000,
    ],
)
def test_repair_results_unchanged(text: str) -> None:
    expected = _json_repair(text)
    assert _exact(loads_with_repair(text)) == _exact(expected if isinstance(expected, dict) else {})
    last = {"city": "Paris", "unit": "celsius", "more": "x" * 40}
    assert _exact(loads_streaming(text, last)) == _exact(_reference_streaming(text, last))


def _reference_streaming(text: str, last: dict[str, Any]) -> dict[str, Any]:
    # AgentScope's _parse_streaming_json_dict over json_repair itself.
    try:
        result = json.loads(text)
        if isinstance(result, dict):
            return result
    except ValueError:
        pass
    repaired = _json_repair(text)
    repaired = repaired if isinstance(repaired, dict) else {}
    return last if len(json.dumps(last)) > len(json.dumps(repaired)) else repaired


def test_non_text_arguments_still_give_an_empty_object() -> None:
    assert loads_with_repair({"a": 1}) == {}  # type: ignore[arg-type]
