"""The golden formatter bodies (AgentScope 1.0.21's requests) to validate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from golden_data import decode, formatter_cases, golden_providers

# The model call's parameters a request carries beside the conversation, as
# `format(..., request=...)` takes them.
REQUESTS: dict[str, dict[str, Any]] = {
    provider: {"model": model, "max_output_tokens": 1024}
    for provider, model in {
        "anthropic": "claude-sonnet-4-5",
        "dashscope": "qwen-plus",
        "deepseek": "deepseek-chat",
        "gemini": "gemini-2.5-flash",
        "minimax": "MiniMax-M2.7",
        "moonshot": "kimi-k2.5",
        "ollama": "llama3.2",
        "openai": "gpt-4.1",
        "openai_responses": "gpt-4.1",
        "volcengine": "doubao-seed-1-6-250615",
        "xai": "grok-4",
        "zhipu": "glm-4.6",
    }.items()
}


def _agentscope_request(provider: str, body: dict[str, Any]) -> dict[str, Any]:
    """A formatter body with what AgentScope's model class sends beside it: the
    model, and for Anthropic the `max_tokens` its API requires. Gemini's
    model goes in the URL (its golden bodies have no generation fields to
    nest: a body with structured output would need `request=`)."""
    if provider == "gemini":
        return dict(body)
    call = {"model": REQUESTS[provider]["model"]}
    if provider == "anthropic":
        call["max_tokens"] = REQUESTS[provider]["max_output_tokens"]
    return {**body, **call}


def golden_bodies() -> Iterator[tuple[str, str, Any]]:
    """(provider, case name, request) for every golden formatter case with a
    body: AgentScope 1.0.21's body and what its model class sends beside it."""
    for provider in golden_providers("formatters"):
        for case in formatter_cases(provider):
            if "expected" in case:
                body = _agentscope_request(provider, decode(case["expected"]))
                yield provider, case["name"], body


def provider_fidelity_bodies() -> Iterator[tuple[str, str, Any]]:
    """(provider, case name, body) for every golden formatter case with a body,
    formatted again with `fidelity="provider"` and `REQUESTS`' parameters
    (needs the package: run from the project's .venv; the validator still
    runs in .venv-schemas). Cases refused because no message is left to send
    are left out."""
    from agentscope_proto.errors import FormatError
    from agentscope_proto.formatting import format

    from golden_data import GOLDEN

    for provider in golden_providers("formatters"):
        for case in formatter_cases(provider):
            if "expected" not in case:
                continue
            try:
                body = format(
                    provider,
                    case["msgs"],
                    multi_agent=case["multi_agent"],
                    tools=case["tools"],
                    tool_choice=case["tool_choice"],
                    media_root=GOLDEN,
                    fidelity="provider",
                    request=REQUESTS[provider],
                    **case["options"],
                )
            except FormatError as exc:
                if exc.reason.startswith("nothing to send"):
                    continue
                raise
            yield provider, case["name"], dict(body)
