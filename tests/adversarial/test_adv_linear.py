"""Conversions are linear in their input: a tool result nested as deep as
the wire takes (each level with `metadata` and `state`, as AgentScope and
agentscope-java write them) converts in time proportional to its size, in
every dialect and both directions, and formats likewise.

Writing such a message once doubled its work per level (the block codec
converted a nested output, met the extra `state` key, dropped the work and
converted the subtree again): 0.5 s at 16 levels, hours at 33. The checks
count the codec's conversions (structural, cannot flake) and give the whole
conversion a bound far above its linear cost (not a timed unit test).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from agentscope_proto import Msg, format, from_dict, to_dict
from agentscope_proto.message import _codec

# Each tool result level is three message levels on the wire (ContentBlock,
# ToolResultBlock, ContentBlocks); protobuf's decoder stops at 100.
DEEPEST = 32
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
    return {"name": "tool", "role": "user", "content": [block]}


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
