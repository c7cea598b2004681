"""Provider fidelity's acceptance: every golden formatter conversation and every
realistic scenario, formatted with `fidelity="provider"` and the model call's
parameters (`request={"model": ..., "max_output_tokens": ...}`), validates
against the provider's own SDK request type (tests/provider_schemas/) with 0
violations and nothing added by the validator; and the default and explicit
`fidelity="agentscope"` bodies stay AgentScope's.

The schema checks run the validator in .venv-schemas (`make schemas-venv`) and
skip without it, as tests/test_provider_schemas.py does.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto.errors import AgentScopeProtoError, FormatError
from agentscope_proto.formatting import _COMMON_OPTIONS, FormattedBody, FormatWarning, format
from agentscope_proto.providers import PROVIDERS, get_provider
from agentscope_proto.providers._provider import ProviderFidelity
from provider_schemas import client
from provider_schemas.golden import REQUESTS
from provider_schemas.scenarios import AGENTSCOPE2_PDF, AGENTSCOPE2_TOOL_LOOP, SCENARIOS

from golden_data import GOLDEN, decode, formatter_cases, formatter_inputs, golden_providers
from strict import assert_same

needs_sdks = pytest.mark.skipif(not client.available(), reason=client.MISSING_REASON)

_GOLDEN = [
    (provider, case)
    for provider in golden_providers("formatters")
    for case in formatter_cases(provider)
    if "expected" in case
]


def provider_fidelity(provider: str, body: dict[str, Any], warnings: list[Any]) -> dict[str, Any]:
    """The provider-fidelity body pass alone, on a parity body."""
    variant = get_provider(provider).variant("provider")
    assert isinstance(variant, ProviderFidelity)
    return variant.adapted(body, warnings)


def _golden(provider: str, case: dict[str, Any], **extra: Any) -> FormattedBody:
    return format(
        provider,
        case["msgs"],
        multi_agent=case["multi_agent"],
        tools=case["tools"],
        tool_choice=case["tool_choice"],
        media_root=GOLDEN,
        **case["options"],
        **extra,
    )


def _provider_body(provider: str, case: dict[str, Any]) -> FormattedBody | None:
    """The golden conversation in provider fidelity, with the model and an
    output budget as a real request has them; None where it is refused
    because no message is left and the provider's API needs one."""
    try:
        return _golden(provider, case, fidelity="provider", request=REQUESTS[provider])
    except FormatError as exc:
        if not exc.reason.startswith("nothing to send"):
            raise
        return None


# The providers AgentScope 1.0.21 lacks have no golden bodies; the golden
# conversations (every input of inputs.json) are theirs to format all the same.
_OWN = sorted(name for name, p in PROVIDERS.items() if "agentscope" not in p.variants)


def _shared_input_cases() -> list[tuple[str, dict[str, Any]]]:
    """(provider, case) for every golden input the providers AgentScope lacks
    take: the input as a case, without expectations (an input with an option
    the provider does not take, DashScope's audio promotion say, is left out)."""
    tables = formatter_inputs()
    cases = []
    for name, given in tables["inputs"].items():
        tools = given["tools"]
        case = {
            "name": name,
            "multi_agent": given["multi_agent"],
            "options": given["options"],
            "tools": None if tools is None else tables["tool_sets"][tools],
            "tool_choice": given["tool_choice"],
            "msgs": tables["conversations"][given["conversation"]],
        }
        for provider in _OWN:
            if set(case["options"]) <= PROVIDERS[provider].options | _COMMON_OPTIONS:
                cases.append((provider, case))
    return cases


def _shared_input_body(provider: str, case: dict[str, Any]) -> FormattedBody | None:
    """The input in the provider's (default) fidelity; None where it is an
    error, as it is for AgentScope on bad input (errors are the same for
    every provider: tests/adversarial/)."""
    try:
        return _golden(provider, case, request=REQUESTS[provider])
    except AgentScopeProtoError:
        return None


def _provider_bodies() -> list[tuple[str, str, FormattedBody]]:
    bodies = [
        (provider, case["name"], body)
        for provider, case in _GOLDEN
        if (body := _provider_body(provider, case)) is not None
    ]
    bodies += [
        (provider, f"input/{case['name']}", body)
        for provider, case in _shared_input_cases()
        if (body := _shared_input_body(provider, case)) is not None
    ]
    for name, (msgs, tools) in SCENARIOS.items():
        for provider in PROVIDERS:
            body = format(
                provider, msgs, tools=tools, fidelity="provider", request=REQUESTS[provider]
            )
            bodies.append((provider, f"scenario/{name}", body))
    return bodies


@pytest.fixture(scope="module")
def verdicts() -> list[tuple[str, str, FormattedBody, list[client.Violation]]]:
    bodies = _provider_bodies()
    results = client.validate_many((provider, dict(body)) for provider, _, body in bodies)
    return [(*item, violations) for item, violations in zip(bodies, results, strict=True)]


@needs_sdks
def test_every_provider_fidelity_body_validates(
    verdicts: list[tuple[str, str, FormattedBody, list[client.Violation]]],
) -> None:
    refused = sum(_provider_body(provider, case) is None for provider, case in _GOLDEN)
    inputs = [_shared_input_body(provider, case) for provider, case in _shared_input_cases()]
    formatted = sum(body is not None for body in inputs)
    # Most inputs format: the errors are the few bad inputs of the golden set.
    assert formatted >= 0.9 * len(inputs)
    expected = len(_GOLDEN) - refused + formatted + len(SCENARIOS) * len(PROVIDERS)
    assert len(verdicts) == expected
    invalid = {
        f"{provider}:{name}": [str(v) for v in violations]
        for provider, name, _, violations in verdicts
        if violations
    }
    assert invalid == {}


@needs_sdks
def test_the_validator_rejects_the_same_scenarios_in_parity(
    verdicts: list[tuple[str, str, FormattedBody, list[client.Violation]]],
) -> None:
    """The scenarios are hard: parity bodies of them fail, so passing means something."""
    parity = [
        (provider, dict(format(provider, msgs, tools=tools, request=REQUESTS[provider])))
        for msgs, tools in SCENARIOS.values()
        for provider in ("anthropic", "openai", "openai_responses", "ollama")
    ]
    assert all(client.validate_many(parity))


# Every request parameter, with values each provider's API takes.
_EVERY_PARAMETER = {
    "max_output_tokens": 2048,
    "temperature": 0.2,
    "top_p": 0.9,
    "stop": ["END"],
    "seed": 7,
}


@needs_sdks
@pytest.mark.parametrize("stream", [True, False])
def test_every_parameter_a_provider_takes_validates(stream: bool) -> None:
    """Each provider's request fields, all given at once (streamed or not) with
    `extra_body` holding one of the provider's own, land where its SDK request
    type has them."""
    own = {
        "openai": {"stream_options": {"include_usage": True}} if stream else {"user": "u1"},
        "deepseek": {"thinking": {"type": "enabled"}},
        "anthropic": {"metadata": {"user_id": "u1"}},
        "gemini": {"generation_config": {"thinking_config": {"thinking_budget": 128}}},
        "openai_responses": {"store": False},
        "ollama": {"keep_alive": "5m", "options": {"num_ctx": 8192}},
        "dashscope": {"enable_thinking": False},
        "moonshot": {"thinking": {"type": "enabled"}},
        "xai": {"reasoning_effort": "low"},
        "volcengine": {"thinking": {"type": "auto"}},
        "zhipu": {"thinking": {"type": "disabled"}, "tool_stream": False},
        "minimax": {"reasoning_split": True},
    }
    msgs, tools = next(iter(SCENARIOS.values()))
    bodies = []
    for provider in PROVIDERS:
        fields = PROVIDERS[provider].request_fields
        params = {
            name: value
            for name, value in {**_EVERY_PARAMETER, "stream": stream}.items()
            if fields.paths(name) is not None
        }
        request = {**REQUESTS[provider], **params, "extra_body": own[provider]}
        body = format(provider, msgs, tools=tools, fidelity="provider", request=request)
        bodies.append((provider, dict(body)))
    verdicts = client.validate_many(bodies)
    invalid = {
        provider: [str(v) for v in found]
        for (provider, _), found in zip(bodies, verdicts, strict=True)
    }
    assert invalid == {provider: [] for provider in PROVIDERS}


@needs_sdks
def test_scenarios_warn_for_every_change(
    verdicts: list[tuple[str, str, FormattedBody, list[client.Violation]]],
) -> None:
    for provider, name, body, _ in verdicts:
        if name.startswith("scenario/cross_provider"):
            assert body.warnings, (provider, name)
            assert all(w.path and w.block_type and w.message for w in body.warnings)


def _holds_text(value: Any) -> bool:
    """Whether a message list holds any text at all."""
    if isinstance(value, dict):
        return any(
            (key in ("text", "content") and isinstance(item, str) and item != "")
            or _holds_text(item)
            for key, item in value.items()
        )
    return isinstance(value, list) and any(_holds_text(item) for item in value)


def test_golden_conversations_left_without_a_message_are_refused() -> None:
    """Provider fidelity refuses what the provider's API would (an empty
    message list) only where AgentScope's body holds no text to send."""
    refused = [
        (provider, case) for provider, case in _GOLDEN if _provider_body(provider, case) is None
    ]
    assert refused
    for provider, case in refused:
        assert provider not in ("ollama", "openai_responses"), case["name"]
        parity = decode(case["expected"])
        assert not _holds_text(parity.get("messages", parity.get("contents"))), case["name"]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_agentscope_fidelity_is_the_golden_body(provider: str) -> None:
    for case_provider, case in _GOLDEN:
        if case_provider != provider:
            continue
        body = _golden(provider, case, fidelity="agentscope")
        assert_same(dict(body), decode(case["expected"]))
        assert len(body.warnings) == len(case["warnings"])


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_provider_fidelity_is_a_fixpoint_and_keeps_parity_warnings(provider: str) -> None:
    """Adapting an adapted body changes and warns nothing; the parity warnings
    come first, unchanged, before the pass's own."""
    for case_provider, case in _GOLDEN:
        if case_provider != provider:
            continue
        parity = _golden(provider, case)
        adapted = _provider_body(provider, case)
        if adapted is None:
            continue
        assert adapted.warnings[: len(parity.warnings)] == parity.warnings
        again: list[FormatWarning] = []
        assert provider_fidelity(provider, dict(adapted), again) == dict(adapted), case["name"]
        assert again == [], case["name"]
    # A provider AgentScope lacks: every golden input it formats.
    for case_provider, case in _shared_input_cases():
        if case_provider != provider or (body := _shared_input_body(provider, case)) is None:
            continue
        again = []
        assert provider_fidelity(provider, dict(body), again) == dict(body), case["name"]
        assert again == [], case["name"]


# AgentScope 2.x's own messages (real dumps): its tool loop for every provider,
# its PDF for every provider that takes documents.
_DOCUMENTS = sorted(name for name, p in PROVIDERS.items() if "application/pdf" in p.document_types)
_AGENTSCOPE2 = [("tool_loop", provider, AGENTSCOPE2_TOOL_LOOP) for provider in sorted(PROVIDERS)]
_AGENTSCOPE2 += [("pdf", provider, AGENTSCOPE2_PDF) for provider in _DOCUMENTS]


@needs_sdks
def test_agentscope2_messages_validate() -> None:
    # GLM's by URL (an inline PDF is dropped with a warning, the body still valid).
    assert _DOCUMENTS == ["anthropic", "gemini", "openai", "openai_responses", "zhipu"]
    bodies = [
        (provider, dict(format(provider, msgs, fidelity="provider", request=REQUESTS[provider])))
        for _, provider, msgs in _AGENTSCOPE2
    ]
    results = client.validate_many(bodies)
    invalid = {
        f"{provider}:{name}": [str(v) for v in violations]
        for (name, provider, _), violations in zip(_AGENTSCOPE2, results, strict=True)
        if violations
    }
    assert invalid == {}
