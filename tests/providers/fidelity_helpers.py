"""What the provider-fidelity tests share: a tool loop in AgentScope's dicts,
the warnings of a body as (path, block type), and the body pass alone."""

from __future__ import annotations

from typing import Any

from agentscope_proto.providers import get_provider
from agentscope_proto.providers._provider import ProviderFidelity

__all__ = ["TOOL_LOOP", "call", "kinds", "msg", "provider_fidelity", "result"]


def provider_fidelity(provider: str, body: dict[str, Any], warnings: list[Any]) -> dict[str, Any]:
    """The provider-fidelity body pass alone, on a parity body."""
    variant = get_provider(provider).variant("provider")
    assert isinstance(variant, ProviderFidelity)
    return variant.adapted(body, warnings)


def msg(name: str, role: str, content: Any) -> dict[str, Any]:
    return {"name": name, "role": role, "content": content}


def call(call_id: str, name: str = "get_weather") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"city": "Paris"}}


def result(call_id: str, output: Any, name: str = "get_weather") -> dict[str, Any]:
    block = {"type": "tool_result", "id": call_id, "name": name, "output": output}
    return msg("system", "system", [block])


TOOL_LOOP = [
    msg("user", "user", "Weather in Paris and Rome?"),
    msg(
        "Friday",
        "assistant",
        [
            {"type": "text", "text": "Checking.", "thought_signature": "AXNpZw=="},
            call("c1"),
            call("c2"),
        ],
    ),
    result("c1", "Sunny"),
    result("c2", "Rain"),
    msg("Friday", "assistant", [{"type": "text", "text": "Sunny and rainy."}]),
]


def kinds(body: Any) -> list[tuple[str, str]]:
    return [(w.path, w.block_type) for w in body.warnings]
