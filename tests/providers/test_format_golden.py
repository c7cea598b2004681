"""Parity of `format()` with AgentScope 1.0.21 (tests/golden/formatters/: inputs.json
and one expectations file per provider).

Each case: AgentScope's formatter output plus what its model class adds (tools,
tool choice, Anthropic's system), or the error it raised.
"""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from agentscope_proto.errors import AgentScopeProtoError
from agentscope_proto.formatting import format
from agentscope_proto.providers import PROVIDERS

from golden_data import GOLDEN, decode, formatter_cases, formatter_inputs, golden_providers
from strict import assert_same

# A registered provider without a golden file fails test_every_provider_has_cases.
CASES = [
    pytest.param(provider, case, id=f"{provider}:{case['name']}")
    for provider in PROVIDERS
    if provider in golden_providers("formatters")
    for case in formatter_cases(provider)
]

AGENTSCOPE_PROVIDERS = [name for name, p in PROVIDERS.items() if "agentscope" in p.variants]


def _run(provider: str, case: dict[str, Any]) -> Any:
    return format(
        provider,
        case["msgs"],
        multi_agent=case["multi_agent"],
        tools=case["tools"],
        tool_choice=case["tool_choice"],
        media_root=GOLDEN,
        **case["options"],
    )


@pytest.mark.parametrize(("provider", "case"), CASES)
def test_matches_agentscope(provider: str, case: dict[str, Any]) -> None:
    if "error" in case:
        builtin = getattr(builtins, case["error"]["type"], None)
        expected: tuple[type[BaseException], ...] = (AgentScopeProtoError,)
        with pytest.raises(expected) as caught:
            _run(provider, case)
        if isinstance(builtin, type) and builtin in (ValueError, TypeError):
            assert isinstance(caught.value, builtin), caught.value
        return
    body = _run(provider, case)
    assert_same(dict(body), decode(case["expected"]))
    assert len(body.warnings) == len(case["warnings"]), (body.warnings, case["warnings"])


def test_enough_cases() -> None:
    assert len(CASES) >= 300


def test_every_provider_has_cases() -> None:
    # Every provider AgentScope 1.0.21 has (the others have their own cases).
    assert golden_providers("formatters") == sorted(AGENTSCOPE_PROVIDERS)
    counts = {p: sum(1 for c in CASES if c.values[0] == p) for p in AGENTSCOPE_PROVIDERS}
    assert min(counts.values()) >= 200, counts


def test_every_input_is_used() -> None:
    tables = formatter_inputs()
    inputs = tables["inputs"]
    assert set(inputs) == {c.values[1]["name"] for c in CASES}
    assert set(tables["conversations"]) == {i["conversation"] for i in inputs.values()}
    assert set(tables["tool_sets"]) == {i["tools"] for i in inputs.values()} - {None}
