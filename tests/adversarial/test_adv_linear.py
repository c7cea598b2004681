"""Conversions are linear in their input: a tool result nested as deep as
the readers take (`MAX_NESTING`, each level with `metadata` and `state`, as
AgentScope and agentscope-java write them) converts in time proportional to
its size, in every dialect and both directions, and formats likewise; and on
every path that converts: the CLI, the FormatterService, the hub and the A2A
mapping.

Writing such a message once doubled its work per level (the block codec
converted a nested output, met the extra `state` key, dropped the work and
converted the subtree again): 0.5 s at 16 levels, hours at 33. The checks
count the codec's conversions (structural, cannot flake) and give the whole
conversion a bound far above its linear cost (not a timed unit test).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import FormatterClient, Msg, format, from_dict, to_dict
from agentscope_proto.hub import HubClient
from agentscope_proto.message import _codec
from agentscope_proto.message._nesting import MAX_NESTING
from agentscope_proto.service import ServerConfig

from hub_fixtures import hub_server

DEEPEST = MAX_NESTING
BOUND_SECONDS = 5.0


def _nested(depth: int) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": "x"}
    for level in range(depth):
        block = {
            "type": "tool_result",
            "id": f"call_{level}",
            "name": "tool",
            "output": [block],
            "metadata": {"level": level},
            "state": "success",
        }
    return {
        "id": "deep",
        "name": "tool",
        "role": "user",
        "content": [block],
        "timestamp": "2026-12-05 10:00:00.000",
    }


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the codec's block-list conversions (each level's output is one)."""
    calls = [0]
    convert = _codec.blocks_to_list

    def counting(blocks: Any) -> list[dict[str, Any]]:
        calls[0] += 1
        return convert(blocks)

    monkeypatch.setattr(_codec, "blocks_to_list", counting)
    return calls


CONVERSIONS: dict[str, Callable[[Msg], Any]] = {
    "to_dict agentscope": lambda msg: to_dict(msg),
    "to_dict java": lambda msg: to_dict(msg, "java"),
    "from_dict agentscope": lambda msg: from_dict(to_dict(msg)),
    "from_dict java": lambda msg: from_dict(to_dict(msg, "java"), "java"),
    "format anthropic": lambda msg: format("anthropic", [msg]),
}


@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_the_deepest_tool_result_converts_in_linear_work(
    conversion: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    convert = CONVERSIONS[conversion]
    calls = _counted(monkeypatch)
    work = {}
    for depth in (DEEPEST // 2, DEEPEST):
        msg = from_dict(_nested(depth))
        calls[0] = 0
        started = time.perf_counter()
        convert(msg)
        took = time.perf_counter() - started
        assert took < BOUND_SECONDS, f"{conversion} at {depth} levels took {took:.1f} s"
        work[depth] = calls[0]
    # Twice the levels, about twice the conversions (exponential: 2^16 times).
    assert work[DEEPEST] <= 2 * work[DEEPEST // 2] + 4, work


def test_the_deepest_tool_result_round_trips_on_the_wire() -> None:
    msg = from_dict(_nested(DEEPEST))
    assert Msg.FromString(msg.SerializeToString()) == msg


def _bounded(what: str, convert: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = convert()
    took = time.perf_counter() - started
    assert took < BOUND_SECONDS, f"{what} took {took:.1f} s"
    return result


def test_the_cli_formats_the_deepest_tool_result(tmp_path: Path) -> None:
    conversation = tmp_path / "deep.json"
    conversation.write_text(json.dumps([_nested(DEEPEST)]), encoding="utf-8")
    command = [sys.executable, "-m", "agentscope_proto", "format", "--provider", "anthropic"]
    result = _bounded(
        "the CLI",
        lambda: subprocess.run(
            [*command, str(conversation)], capture_output=True, text=True, timeout=60
        ),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["messages"]


def test_the_formatter_service_and_the_hub_take_the_deepest_tool_result() -> None:
    msg = from_dict(_nested(DEEPEST))
    server = hub_server("memory")
    try:
        with FormatterClient(server.target) as client:
            body = _bounded("Format", lambda: client.format("anthropic", [msg]))
        assert body.body["messages"]
        with HubClient(server.target) as hub, hub.subscribe("deep") as events:
            _bounded("Publish", lambda: hub.publish("deep", _nested(DEEPEST)))
            assert _bounded("Subscribe", lambda: next(events).msg) == msg
    finally:
        server.stop()


def test_the_a2a_mapping_converts_the_deepest_tool_result() -> None:
    mapping = pytest.importorskip("agentscope_proto.a2a", reason="needs the a2a extra")
    msg = from_dict(_nested(DEEPEST))
    message = _bounded("msg_to_a2a", lambda: mapping.msg_to_a2a(msg))
    assert _bounded("a2a_to_msg", lambda: mapping.a2a_to_msg(message)) == msg


# The most blocks a Format request may carry (the FormatterService's default).
LARGEST_BLOCKS = ServerConfig().max_blocks


@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_the_largest_accepted_request_converts_in_linear_work(conversion: str) -> None:
    """As many blocks as a request may carry, in one message: each
    conversion within the bound (a quadratic one would take minutes)."""
    blocks = [{"type": "text", "text": f"word {i}"} for i in range(LARGEST_BLOCKS)]
    msg = from_dict({"id": "big", "name": "user", "role": "user", "content": blocks})
    _bounded(conversion, lambda: CONVERSIONS[conversion](msg))
