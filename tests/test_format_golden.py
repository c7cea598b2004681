"""Parity of `format()` with AgentScope 1.0.21 (tests/golden/formatters/*.json).

Each case: AgentScope's formatter output plus what its model class adds (tools,
tool choice, Anthropic's system), or the error it raised.
"""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from agentscope_proto.errors import AgentScopeProtoError
from agentscope_proto.formatting import format

from conftest import load_golden
from golden_data import GOLDEN, decode
from strict import assert_same

PROVIDERS = ["openai", "anthropic", "gemini", "dashscope", "ollama", "deepseek", "openai_responses"]
CASES = [
    pytest.param(provider, case, id=f"{provider}:{case['name']}")
    for provider in PROVIDERS
    for case in load_golden(f"formatters/{provider}.json")["cases"]
]


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
