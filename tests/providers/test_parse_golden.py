"""Parity of `parse()` and `StreamParser` with AgentScope 1.0.21 (tests/golden/parsers/*.json)."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto.errors import AgentScopeProtoError
from agentscope_proto.parsing import ParsedResponse, StreamParser, parse
from agentscope_proto.providers import PROVIDERS

from golden_data import decode, golden_providers, parser_cases
from strict import assert_same

# A registered provider without a golden file fails test_every_provider_has_cases.
CASES = [
    pytest.param(provider, case, id=f"{provider}:{case['name']}")
    for provider in PROVIDERS
    if provider in golden_providers("parsers")
    for case in parser_cases(provider)
]

AGENTSCOPE_PROVIDERS = [name for name, p in PROVIDERS.items() if "agentscope" in p.variants]


def _usage(result: ParsedResponse) -> dict[str, Any] | None:
    if result.usage is None:
        return None
    return {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens}


def _drain(parser: StreamParser, chunks: list[Any]) -> None:
    for chunk in chunks:
        parser.feed(chunk)
    parser.finish()


def _check(result: ParsedResponse, expected: dict[str, Any]) -> None:
    assert_same(result.content, decode(expected["content"]))
    assert_same(_usage(result), expected["usage"])
    assert result.response_id == (expected["id"] or "")
    assert_same(result.structured_output, decode(expected.get("metadata")))


def _options(case: dict[str, Any]) -> dict[str, Any]:
    """Our keyword arguments for the AgentScope model options the case used."""
    options = case["options"]
    kwargs: dict[str, Any] = {}
    if options.get("structured_model"):
        kwargs["structured_output"] = True
    audio = options.get("generate_kwargs", {}).get("audio", {})
    if "format" in audio:
        kwargs["audio_format"] = audio["format"]
    if case["stream"] and "stream_tool_parsing" in options:
        kwargs["stream_tool_parsing"] = options["stream_tool_parsing"]
    return kwargs


@pytest.mark.parametrize(("provider", "case"), CASES)
def test_matches_agentscope(provider: str, case: dict[str, Any]) -> None:
    expected = case["expected"]
    # Where AgentScope crashed on a malformed response, a typed error is expected.
    failed = "error" in case or "error" in expected
    if not case["stream"]:
        if failed:
            with pytest.raises(AgentScopeProtoError):
                parse(provider, case["response"], **_options(case))
            return
        _check(parse(provider, case["response"], **_options(case)), expected)
        return
    parser = StreamParser(provider, **_options(case))
    if failed:
        with pytest.raises(AgentScopeProtoError):
            _drain(parser, case["chunks"])
        return
    # Each AgentScope snapshot names the chunk that produced it; one after the
    # stream ended (stream_tool_parsing=False) is what finish() returns.
    fed = {i: r for i, chunk in enumerate(case["chunks"]) if (r := parser.feed(chunk)) is not None}
    during = [s for s in expected["snapshots"] if s["chunk"] is not None]
    assert sorted(fed) == [s["chunk"] for s in during]
    for want in during:
        _check(fed[want["chunk"]], want)
    final = parser.finish()
    if expected["final"] is None:
        assert final.content == []
    else:
        _check(final, expected["final"])


def test_enough_cases() -> None:
    streams = sum(1 for p in CASES if p.values[1]["stream"])
    assert len(CASES) - streams >= 120
    assert streams >= 60


def test_every_provider_has_cases() -> None:
    # Every provider AgentScope 1.0.21 has (the others have their own cases).
    assert golden_providers("parsers") == sorted(AGENTSCOPE_PROVIDERS)
    for provider in AGENTSCOPE_PROVIDERS:
        kinds = [c.values[1]["stream"] for c in CASES if c.values[0] == provider]
        assert kinds.count(False) >= 20, provider
        assert kinds.count(True) >= 10, provider
