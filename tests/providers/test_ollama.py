"""Ollama `/api/chat`: what is Ollama's own in both directions."""

from __future__ import annotations

from agentscope_proto.formatting import format

from fidelity_helpers import TOOL_LOOP


def test_ollama_tool_name() -> None:
    body = format("ollama", TOOL_LOOP, fidelity="provider")
    call = body["messages"][1]["tool_calls"][0]
    assert list(call) == ["function"]
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    assert [m.get("tool_name") for m in tools] == ["get_weather", "get_weather"]
    assert all("tool_call_id" not in m and "name" not in m for m in tools)
